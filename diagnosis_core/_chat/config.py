"""The chat workflow's configuration (spec §4): frozen and validated on construction.

An out-of-range value raises :class:`ConfigError` naming the field and its
range, so a bad configuration can never reach the state machine.
"""

from __future__ import annotations

import attrs

from .._kernel.enums import Locale
from .._kernel.machine.config import (
    int_in_range,
    max_item_chars_field,
    technical_retry_limit_field,
    to_locale,
)
from .._kernel.records import share_repr

__all__ = ["DiagnosisConfig"]


@attrs.frozen(repr=False)
class DiagnosisConfig:
    """Workflow limits and presentation settings (spec §4).

    Attributes:
        technical_retry_limit: retries (not attempts) per LLM node per round
            after ``RETRYABLE_FAILED`` or ``INVALID_OUTPUT``; 0..3.
        evidence_retry_limit: 0 or 1; the design allows one evidence retry.
        history_limit: how many trailing history messages the planner sees; 0..100.
        max_item_chars: cap of any single item in a fallback text; 20..10000.
        locale: ``en`` or ``zh-CN`` for the fallback texts.
    """

    technical_retry_limit: int = technical_retry_limit_field()
    evidence_retry_limit: int = attrs.field(default=1, validator=int_in_range(0, 1))
    history_limit: int = attrs.field(default=10, validator=int_in_range(0, 100))
    max_item_chars: int = max_item_chars_field()
    locale: Locale = attrs.field(default=Locale.EN, converter=to_locale)

    @property
    def max_node_executions(self) -> int:
        """The step bound of spec §7: no run executes more nodes than this."""
        attempts = self.technical_retry_limit + 1
        per_round = 3 + attempts  # executor + gatekeeper + verified_input + verifier
        return attempts + 2 * per_round + 1 + attempts + 1


share_repr(DiagnosisConfig)
