"""The wire: strict JSON in, canonical JSON out, and the converter between JSON and values.

``json`` reads and writes JSON text, ``converter`` maps package values to wire JSON
and back (with the structuring functions ``codegen`` writes), ``schema`` generates
the agents' JSON Schemas, ``facts`` says what a storable JSON value is. The wire
imports nothing of the kernel but its ground floor (``errors``, ``enums``);
``tests/test_layout.py`` holds that rule.
"""
