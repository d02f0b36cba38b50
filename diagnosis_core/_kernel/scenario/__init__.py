"""Scenarios (spec §9): reading a host's JSON documents, and the doubles a replay plays.

``document`` reads a §9 scenario, or a journal's ``request``, strictly, path by path;
``scripted`` holds the scripted agents and tool ledger a replay plays back. Beside
driving on the kernel's top floor: it imports the ground floor, the wire, the
machine and the tools, and no room imports it; ``tests/test_layout.py`` holds that
rule.
"""
