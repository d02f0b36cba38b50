"""Configuration of the AIOps flow (``AiOpsConfig``, frozen, validated at construction).

Like :class:`DiagnosisConfig`, an out-of-range value raises
:class:`ConfigError` naming the field and its range, so a bad configuration
never reaches the state machine.
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

__all__ = ["NO_PROGRESS_REPEATS", "AiOpsConfig"]

NO_PROGRESS_REPEATS = 3
"""The no-progress guard: the same agent chosen this many times in a row, with no
new tool invocation id reported in between, ends the run (spec §11)."""


@attrs.frozen
class AiOpsConfig:
    """Limits and presentation settings of an AIOps run.

    Attributes:
        technical_retry_limit: retries (not attempts) per LLM call after
            ``RETRYABLE_FAILED`` or ``INVALID_OUTPUT``, for the supervisor, the
            planner and the reporter (the executor, which calls tools, is
            never retried); 0..3.
        max_supervisor_steps: the most supervisor decisions a run may take;
            a decision other than FINISH at the last step ends the run with
            ``STEP_BUDGET_EXHAUSTED``; 1..50.
        max_item_chars: cap of any single item in a rendered report; 20..10000.
        locale: ``en`` or ``zh-CN`` for the rendered texts.
    """

    technical_retry_limit: int = technical_retry_limit_field()
    max_supervisor_steps: int = attrs.field(default=8, validator=int_in_range(1, 50))
    max_item_chars: int = max_item_chars_field()
    locale: Locale = attrs.field(default=Locale.EN, converter=to_locale)

    @property
    def max_node_executions(self) -> int:
        """No run executes more nodes than this.

        Each supervisor step runs at most ``L + 1`` supervisor attempts and one
        delegated agent with at most ``L + 1`` attempts; then the reporter
        (``L + 1`` attempts) or the fallback ends the run, and a reporter that
        fails is followed by the fallback.
        """
        attempts = self.technical_retry_limit + 1
        return self.max_supervisor_steps * 2 * attempts + attempts + 1
