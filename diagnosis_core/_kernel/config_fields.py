"""The configuration fields both workflows' configurations declare alike (spec §4, §11).

``DiagnosisConfig`` and ``AiOpsConfig`` bound the technical retries and the
length of a rendered item the same way: same default, same range, same
:class:`ConfigError`. Declaring each field here once keeps the two configurations
from drifting apart (a range widened in one workflow and not the other).

Each function returns an ``attrs`` field; it is typed as the field's value, as
``attrs.field`` itself is, so a type checker sees an ``int`` attribute with a
default. (``locale`` stays spelled out in each class: its converter is what lets
a type checker accept ``"zh-CN"`` for it.)
"""

from __future__ import annotations

import attrs

from .config import int_in_range

__all__ = ["max_item_chars_field", "technical_retry_limit_field"]


def technical_retry_limit_field() -> int:
    """``technical_retry_limit``: retries (not attempts) after a retryable failure; 0..3, 1."""
    return attrs.field(default=1, validator=int_in_range(0, 3))


def max_item_chars_field() -> int:
    """``max_item_chars``: the cap of any single rendered item; 20..10000, 500."""
    return attrs.field(default=500, validator=int_in_range(20, 10000))
