"""The gatekeeper's raw result as a stored fact (spec §12.1, §15).

The machine is fed the gatekeeper result exactly as its stored JSON decodes:
a storable result is copied as plain JSON, a host object is read once through
the defensive snapshot of §15 first, and anything JSON cannot hold faithfully
becomes ``{"unserializable": "<description>"}`` — the same value live,
replayed and resumed, so a fold can never see a different fact than the run.
"""

from __future__ import annotations

import json

from .._kernel.wire.facts import repair_text, storable
from .._kernel.wire.json import JsonValue, canonical_json
from .gatekeeper import snapshot_raw_result, unstorable_description

__all__ = ["gatekeeper_fact", "gatekeeper_fact_json"]


def gatekeeper_fact(raw: object) -> JsonValue:
    """The gatekeeper's raw result as it is stored, and so as the machine sees it.

    A storable result comes back as a fresh plain copy (tuples as lists,
    subclasses of scalars as the plain value, surrogate pairs repaired), equal
    to what its stored JSON text decodes to. Anything else becomes
    ``{"unserializable": "<description>"}`` (see the module docstring).
    Never raises.
    """
    if storable(raw, repair=False)[1] is None:
        # The common case: exact built-ins, storable as they are. The C codec
        # makes the copy, equal to what the stored text decodes to (no pair can
        # be in it, and a lone surrogate survives an escape and its decoding).
        copy: JsonValue = json.loads(json.dumps(raw))
        return copy
    snapshot = snapshot_raw_result(raw)  # host types: read once, defensively
    if snapshot.problem is not None:
        return {"unserializable": f"<{snapshot.problem}>"}
    repaired, problem = storable(snapshot.value, repair=True)
    if problem is None:
        return repaired  # type: ignore[return-value]
    return {"unserializable": repair_text(unstorable_description(raw))}


def gatekeeper_fact_json(raw: object) -> str:
    """The canonical JSON of :func:`gatekeeper_fact` of ``raw``: the text a journal stores.

    A storable result is written as it is — the same text as its plain copy's
    (a tuple is an array either way, a float is written by the same repr, a
    lone surrogate is kept), without making the copy first; anything else
    goes through :func:`gatekeeper_fact`. Never raises.
    """
    if storable(raw, repair=False)[1] is None:
        return canonical_json(raw)
    return canonical_json(gatekeeper_fact(raw))
