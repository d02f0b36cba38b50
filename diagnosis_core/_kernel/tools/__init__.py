"""The tools: the §13 tool ledger and the recorder every tool call goes through.

``ledger`` holds what the tools of a run really returned, as frozen values;
``recorder`` is the one place the executor's tool calls go through (live, recorded,
replayed). The executor's tool loop over a chat model, which calls tools through the
recorder, is an effect and not part of the kernel (``diagnosis_core/_executor``).
The tools import the ground floor, the wire and the machine only;
``tests/test_layout.py`` holds that rule.
"""
