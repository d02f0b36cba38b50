"""The journal machinery both workflows share: entries, codec, MAC chain, fold, stores.

``workflow`` is the descriptor a workflow gives the kernel (what its journal, its
fold and the resume rule need to know about it); ``codec`` and ``recorded`` are the
entries, ``mac`` the chain, ``fold`` fold-and-verify, the recorder and the sinks,
``store`` the store protocol, ``tool_calls`` the recorded tool calls, ``status`` a
journal's status. The journal imports the ground floor, the wire, the machine and
the tools; ``tests/test_layout.py`` holds that rule.
"""
