"""The workflow-free kernel both workflows are built on, in rooms.

The ground floor holds the leaves every room may import, which import nothing of
the kernel: ``errors`` (the package's exceptions), ``enums`` (the shared
enumerations), ``records`` (the shared attrs repr), ``public`` (how a public
namespace names its classes and serves lazy names) and ``terminal`` (inert
terminal text, for the command line and the reports). Above it, each room imports
only the rooms below it:

* ``wire/`` — strict JSON, the converter and its code generators, schemas, facts;
* ``machine/`` — the state machines' shared parts: config, results, steps, tables,
  classification, the plan step, provenance, the fallback texts' shared parts;
* ``tools/`` — the §13 ledger and recorder, grounding, the executor's tool loop;
* ``journal/`` — the workflow descriptor, entries, codec, MAC chain, fold, stores;
* ``driving/`` — the one driver, its loop, options, effects and observers;
* ``scenario/`` — §9 documents and the scripted doubles a replay plays.

Nothing here imports a workflow package (``_chat`` or ``aiops``);
``tests/test_layout.py`` holds these rules.
"""
