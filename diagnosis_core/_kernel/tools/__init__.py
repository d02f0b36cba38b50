"""The tools: the §13 tool ledger, the recorder every tool call goes through, grounding.

``ledger`` holds what the tools of a run really returned, as frozen values;
``recorder`` is the one place the executor's tool calls go through (live, recorded,
replayed); ``grounding`` computes the citable paths of recorded outputs (§18);
``chat_model`` and ``tool_loop`` are the executor's tool-calling loop over a chat
model. The tools import the ground floor, the wire and the machine only;
``tests/test_layout.py`` holds that rule.
"""
