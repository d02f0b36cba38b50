"""Messages for mistakes a host can make, built on the error path only.

A host that resumes a run with the wrong request, or a thread that holds no run, gets
a message that says which and what to do instead — not just that something differs.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

import attrs

from .errors import JournalError

__all__ = ["other_request_error"]


def other_request_error(recorded: Any, given: Any) -> JournalError:
    """The journal of ``recorded`` was passed with the request ``given`` (both attrs requests).

    Names the fields that differ and, since the run id is what a host keys its
    journals by, both run ids.
    """
    differing = [
        field.name
        for field in attrs.fields(type(recorded))
        if getattr(recorded, field.name) != getattr(given, field.name)
    ]
    fields = ", ".join(differing) or "request"
    return JournalError(
        f"request: the journal is of another request (different {fields}; the journal's "
        f"run_id is {recorded.run.run_id!r}, this request's {given.run.run_id!r}) — resume "
        "with the journal's own request (journal.request), or start this request without "
        "journal="
    )
