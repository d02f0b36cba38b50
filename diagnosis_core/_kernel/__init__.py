"""The workflow-free kernel both workflows are built on.

Strict JSON and the one canonical writer, the converter, errors, agent results,
effects and failure classification, the driver loop, routing-table helpers, the
§13 tool ledger and recorder, scripted doubles, and the journal (entries, codec,
MAC chain, fold). Nothing here imports a workflow package (``_chat`` or
``aiops``); ``tests/test_layout.py`` holds that rule.
"""
