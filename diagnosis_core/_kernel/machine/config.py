"""Run configuration (spec §2) and the validators both workflows' configurations use.

Configurations are frozen and validated on construction: an out-of-range value raises
:class:`ConfigError` naming the field and its range, so a bad configuration
can never reach the state machine.

The fields both workflows' configurations declare alike (``technical_retry_limit``,
``max_item_chars``: same default, same range, same :class:`ConfigError`) are declared
here once, so the two configurations cannot drift apart. Each such function returns
an ``attrs`` field typed as the field's value, as ``attrs.field`` itself is, so a type
checker sees an ``int`` attribute with a default. (``locale`` stays spelled out in
each class: its converter is what lets a type checker accept ``"zh-CN"`` for it.)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from ..enums import Locale, member_of
from ..errors import ConfigError
from ..records import attrs_repr
from ..wire.json import describe_value

__all__ = [
    "RunConfig",
    "freeze_strings",
    "int_in_range",
    "max_item_chars_field",
    "technical_retry_limit_field",
    "to_locale",
]


def int_in_range(low: int, high: int) -> Any:
    def check(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(
                f"{attribute.name}: expected an integer in {low}..{high}, "
                f"got {describe_value(value)}"
            )
        if not low <= value <= high:
            # describe_value, not str(): an integer too long to print must still
            # give this ConfigError (spec §5 digit limit), never a ValueError.
            raise ConfigError(
                f"{attribute.name}: {describe_value(value)} is outside the range {low}..{high}"
            )

    return check


def to_locale(value: Locale | str) -> Locale:
    """A :class:`Locale` or its wire value (``"en"``, ``"zh-CN"``); anything else is a
    :class:`ConfigError` (the check stays for untyped callers)."""
    locale = member_of(Locale, value)
    if locale is None:
        allowed = ", ".join(repr(m.value) for m in Locale)
        shown = describe_value(value)
        raise ConfigError(f"locale: expected one of {allowed}, got {shown}")
    return locale


def freeze_strings(field: str, value: object) -> Mapping[str, str]:
    """``value`` as a read-only mapping of strings, sorted by key: ``ConfigError`` otherwise.

    Sorted so that two equal mappings give one wire form whatever order the host
    built them in (a run's metadata, an alert's labels and annotations).
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"{field}: expected a mapping of strings, got {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise ConfigError(
                f"{field}: keys and values must be strings, got "
                f"{describe_value(key)}: {describe_value(item)}"
            )
    return MappingProxyType(dict(sorted(value.items())))


def _freeze_metadata(value: Mapping[str, str]) -> Mapping[str, str]:
    return freeze_strings("metadata", value)


def _non_empty_str(instance: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ConfigError(
            f"{attribute.name}: expected a non-empty string, got {describe_value(value)}"
        )


@attrs.frozen(eq=False)
class RunConfig:
    """Passed explicitly to every agent invocation (spec §2).

    The chat session id *is* the diagnosis session id. ``metadata`` is a
    read-only mapping of strings.
    """

    __repr__ = attrs_repr

    run_id: str = attrs.field(validator=_non_empty_str)
    session_id: str = attrs.field(validator=_non_empty_str)
    metadata: Mapping[str, str] = attrs.field(
        factory=lambda: MappingProxyType({}), converter=_freeze_metadata
    )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunConfig):
            return NotImplemented
        return (self.run_id, self.session_id, dict(self.metadata)) == (
            other.run_id,
            other.session_id,
            dict(other.metadata),
        )

    def __hash__(self) -> int:
        return hash((self.run_id, self.session_id, tuple(self.metadata.items())))


def technical_retry_limit_field() -> int:
    """``technical_retry_limit``: retries (not attempts) after a retryable failure; 0..3, 1."""
    return attrs.field(default=1, validator=int_in_range(0, 3))


def max_item_chars_field() -> int:
    """``max_item_chars``: the cap of any single rendered item; 20..10000, 500."""
    return attrs.field(default=500, validator=int_in_range(20, 10000))
