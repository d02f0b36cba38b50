"""The run journal (protocol §12): persist facts, derive conclusions.

A run's durable record is its journal: the request and every effect outcome,
in call order — what the agents, the gatekeeper and the tools returned, never
a conclusion. :func:`fold_journal` rebuilds the state by walking the machine
over those facts, so whatever a journal holds goes through the same parsers,
normalization and projections as a live reply, and a stored "verdict" cannot
exist. Folding also verifies: every entry must be the call the machine asks
for at that point (same call, round, attempt and input hash), so tampering,
corruption and a core that would route a recorded run differently are
:class:`JournalError`\\ s naming the entry. New journals are written as
``diagnosis_journal_v2`` (``diagnosis_journal_v1`` journals still load, fold and
replay byte for byte): each entry's input hash is bound to the request, so another
run's entries never fold under it, even without a key.

With a host key, entries are chained with HMAC-SHA256 (:func:`sign_journal`),
``started`` and ``finished`` forms in separate domains, and a complete journal ends
with a signed end marker (:class:`JournalEnd`) covering the entry count. An attacker
who can write the store but holds no key cannot edit, insert, reorder or graft
entries, nor make an incomplete journal complete; what remains possible is to **cut
the journal to a prefix**, which resumes as an interrupted run (spec §12.2). A host
that keeps the :class:`JournalHead` (:func:`journal_head`: entry count and last
``mac``) outside the store and passes ``head=`` refuses the cut as well.

The AIOps flow's journal (``aiops_journal_v2``, in :mod:`diagnosis_core.aiops`) is
the same kernel with its own call names; :func:`journal_to_json`,
:func:`journal_to_wire`, :func:`sign_journal`, :func:`sign_entry` and
:func:`entry_mac` accept either workflow's journal.

An engine adapter (a durable-execution engine driving the machine, like the
LangGraph and Temporal adapters) needs only this module and
:mod:`diagnosis_core.machine`: the entry builder (:func:`start_entry`,
:func:`finish_entry`, :func:`entry_result`), the resume rule
(:func:`resent_on_resume`, :func:`resume_journal`) and the codec
(:func:`entry_to_wire`, :func:`outcome_to_wire`, :func:`load_outcome`,
:func:`request_to_wire`, :func:`stored_json`); see ``docs/adapters.md``.

``import diagnosis_core`` does not load this module.
"""

from __future__ import annotations

# The chat journal module and the kernel's recorded values are public in full:
# their ``__all__`` is the list (a star import re-exports exactly it, and mypy sees
# each name), added to this module's ``__all__`` below instead of being written out
# a second time. The codec and MAC functions are picked by name: most of those
# modules' names stay private.
from ._chat import journal as _journal
from ._chat.entries import entry_from_json, entry_to_json
from ._chat.journal import *  # noqa: F403
from ._kernel.errors import JournalError
from ._kernel.journal import recorded as _recorded
from ._kernel.journal.codec import (
    JournalEnd,
    entry_to_wire,
    journal_to_json,
    journal_to_wire,
    load_outcome,
    outcome_to_wire,
    stored_json,
)
from ._kernel.journal.mac import JournalHead, entry_mac, journal_head, sign_entry, sign_journal
from ._kernel.journal.recorded import *  # noqa: F403
from ._kernel.public import publish as _publish

__all__ = [
    "JournalEnd",
    "JournalError",
    "JournalHead",
    "entry_from_json",
    "entry_mac",
    "entry_to_json",
    "entry_to_wire",
    "journal_head",
    "journal_to_json",
    "journal_to_wire",
    "load_outcome",
    "outcome_to_wire",
    "sign_entry",
    "sign_journal",
    "stored_json",
]
__all__ += _journal.__all__
__all__ += _recorded.__all__

# Public classes name this namespace, not the private module defining them.
_publish(__name__, globals(), __all__)
