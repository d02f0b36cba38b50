"""The ready-made executor effect: a tool-calling chat model in a bounded loop (spec §13, §18).

The executor is an effect the host passes in; this package is one it can pass.
It calls a model and the run's tools, so it is not part of the pure core: the
kernel and the workflows never import it, and it imports them (the kernel's
recorder and ledger, each workflow's payload schema). ``model`` holds the
values a model reads and answers with, ``loop`` the loop and its limits,
``grounding`` the citable paths of recorded outputs, and ``chat`` and
``aiops`` each workflow's final answer: its grounding schema and the agent
that answers it. Published in ``diagnosis_core.tools``; ``tests/test_layout.py``
holds the rule that nothing below imports it.
"""
