"""The facts one journal entry records: its state and what came back (spec §12, §13).

These values are the public face of a journal entry (re-exported in full by
:mod:`diagnosis_core.journal`), apart from the wire codec (``codec.py``) that
reads and writes them, so the public namespace takes this module's ``__all__``
instead of repeating it. Each value is immutable and checks its own fields:
a wrong type is a :class:`JournalError`, never a silently stored object.
"""

from __future__ import annotations

import enum
import json
import math
from typing import Self, TypeAlias

import attrs

from ..enums import FailureKind
from ..errors import JournalError
from ..wire.json import JsonValue, canonical_json

__all__ = [
    "EntryState",
    "JournalOutcome",
    "RecordedAgentError",
    "RecordedGatekeeperError",
    "RecordedGatekeeperResult",
    "RecordedReply",
    "RecordedToolError",
    "RecordedToolInvocation",
]


class EntryState(enum.StrEnum):
    """``started``: written before the effect ran; ``finished``: it returned."""

    STARTED = "started"
    FINISHED = "finished"


def _str(value: object) -> str:
    """The exact ``str`` of a string (a subclass's overrides cannot change it)."""
    if not isinstance(value, str):
        raise JournalError(f"expected a string, got {type(value).__name__}")
    return value if type(value) is str else str.__str__(value)


@attrs.frozen
class RecordedReply:
    """An agent returned this message text."""

    text: str = attrs.field(converter=_str)


@attrs.frozen
class RecordedAgentError:
    """An agent raised; ``kind`` is what the failure classifier said, ``message`` the error."""

    kind: FailureKind = attrs.field(validator=attrs.validators.instance_of(FailureKind))
    message: str = attrs.field(default="", converter=_str)


@attrs.frozen
class RecordedGatekeeperResult:
    """The gatekeeper returned this raw result, kept as its canonical JSON text.

    Stored as text so the value stays immutable; :attr:`result` gives a fresh
    copy. Build one from a value with :meth:`of`.
    """

    result_json: str

    @classmethod
    def of(cls, value: object) -> Self:
        """Record a JSON value; :class:`JournalError` if it is not one."""
        try:
            return cls(canonical_json(value))
        except (TypeError, ValueError, RecursionError) as error:
            raise JournalError(f"result: not a JSON value ({error})") from None

    @property
    def result(self) -> JsonValue:
        """A fresh copy of the recorded raw result."""
        value: JsonValue = json.loads(self.result_json)
        return value


@attrs.frozen
class RecordedGatekeeperError:
    """The gatekeeper callable raised with this message."""

    message: str = attrs.field(default="", converter=_str)


JournalOutcome: TypeAlias = (
    RecordedReply | RecordedAgentError | RecordedGatekeeperResult | RecordedGatekeeperError
)
"""What a finished entry says came back."""


@attrs.frozen
class RecordedToolError:
    """A tool's exception: its type name and message (spec §13)."""

    type: str = attrs.field(converter=_str)
    message: str = attrs.field(converter=_str)


def checked_duration(value: object) -> int | float | None:
    """A tool call's ``duration_ms``: None or a finite number >= 0 (the loader checks it too)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JournalError(f"duration_ms: expected a number, got {type(value).__name__}")
    if (isinstance(value, float) and not math.isfinite(value)) or value < 0:
        raise JournalError("duration_ms: expected a number >= 0")
    return value


@attrs.frozen
class RecordedToolInvocation:
    """One tool call the executor made during its call: a §13 ledger entry.

    ``output`` and ``input`` are kept as canonical JSON text (immutable);
    ``input_json`` is None when the recorder gave no input.
    """

    invocation_id: str = attrs.field(converter=_str)
    tool_name: str = attrs.field(converter=_str)
    success: bool = attrs.field(validator=attrs.validators.instance_of(bool))
    output_json: str = "null"
    input_json: str | None = None
    error: RecordedToolError | None = None
    duration_ms: int | float | None = attrs.field(default=None, converter=checked_duration)

    def to_record(self) -> dict[str, JsonValue]:
        """The §13 ledger record (plain JSON)."""
        record: dict[str, JsonValue] = {
            "invocation_id": self.invocation_id,
            "tool_name": self.tool_name,
            "success": self.success,
            "output": json.loads(self.output_json),
        }
        if self.input_json is not None:
            record["input"] = json.loads(self.input_json)
        if self.error is not None:
            record["error"] = {"type": self.error.type, "message": self.error.message}
        if self.duration_ms is not None:
            record["duration_ms"] = self.duration_ms
        return record
