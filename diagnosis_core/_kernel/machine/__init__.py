"""The machine's shared parts: what both workflows' sans-IO state machines are made of.

The run configuration and the shared configuration fields (``config``), an agent
call's result and failure reasons (``results``), the agent steps (``stepping``),
routing tables and their rows (``tables``), failure classification (``classify``),
the plan step (``plan``), which states the machine built (``provenance``) and the
deterministic texts' shared parts (``text``). Pure: no I/O. The machine imports the
ground floor and the wire only; ``tests/test_layout.py`` holds that rule.
"""
