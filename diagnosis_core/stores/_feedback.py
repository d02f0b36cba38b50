"""Feedback as a stored fact: its text form, its checks and its MAC link (spec §16).

A person's rating of a finished run is stored beside the run's journal,
never inside it, so it cannot change the fold; when the journal is keyed the
feedback carries an HMAC linked to the journal's last ``mac`` (domain
``feedback``), so it cannot be moved to another run or edited without the key.
"""

from __future__ import annotations

import hashlib
import hmac

from .. import JsonValue, PayloadError
from ..journal import Feedback, StoreError, stored_json
from ..protocol import loads_stored

__all__ = ["check_feedback", "feedback_from_json", "feedback_mac", "feedback_to_json"]

_MAX_COMMENT = 10_000
_FEEDBACK_KEYS = frozenset({"rating", "comment", "after_seq", "mac"})


def _feedback_wire(feedback: Feedback, *, with_mac: bool) -> dict[str, JsonValue]:
    wire: dict[str, JsonValue] = {
        "rating": feedback.rating,
        "comment": feedback.comment,
        "after_seq": feedback.after_seq,
    }
    if with_mac and feedback.mac is not None:
        wire["mac"] = feedback.mac
    return wire


def feedback_to_json(feedback: Feedback) -> str:
    """The stored text of a feedback fact (canonical JSON)."""
    return stored_json(_feedback_wire(feedback, with_mac=True))


def feedback_from_json(text: str, where: str) -> Feedback:
    """A stored feedback fact, strictly; :class:`StoreError` naming ``where``."""
    try:
        data = loads_stored(text)
    except PayloadError as error:
        raise StoreError(f"{where}: {error}") from None
    if not isinstance(data, dict) or not set(data) <= _FEEDBACK_KEYS:
        raise StoreError(f"{where}: not a feedback record")
    rating, comment, after, mac = (data.get(k) for k in ("rating", "comment", "after_seq", "mac"))
    try:
        check_feedback(rating, comment)
    except StoreError as error:
        raise StoreError(f"{where}: {error}") from None
    if type(after) is not int or after < 1 or (mac is not None and not isinstance(mac, str)):
        raise StoreError(f"{where}: not a feedback record")
    assert isinstance(rating, int)
    assert comment is None or isinstance(comment, str)
    return Feedback(rating, comment, after, mac)


def check_feedback(rating: object, comment: object) -> None:
    if type(rating) is not int or not 1 <= rating <= 5:
        raise StoreError(f"rating: expected an integer from 1 to 5, got {rating!r}")
    if comment is not None and (not isinstance(comment, str) or len(comment) > _MAX_COMMENT):
        raise StoreError(f"comment: expected text of at most {_MAX_COMMENT} characters or None")


def feedback_mac(feedback: Feedback, previous: str, key: bytes) -> str:
    text = "feedback\x00" + previous + stored_json(_feedback_wire(feedback, with_mac=False))
    return hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
