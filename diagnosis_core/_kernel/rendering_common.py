"""The lines both workflows' deterministic texts share, per locale (spec §6.8).

The chat fallbacks and the AIOps fallback and report view say different
things, but a few lines are the same sentence in both, in every locale: the
reason-code line, the "recommended actions" heading, the "none" bullet of an
empty section and the closing pointer to the run's trace. They are written
once here, so the two workflows cannot drift apart in wording (each workflow's
own ``_Templates`` keeps only what it alone says), and the layout of a titled
section is one function. Like every template, none of these contains ``&``,
``<`` or ``>``; placeholders are filled with values that went through
:func:`~diagnosis_core._kernel.text.sanitize_item`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import attrs

from .enums import Locale
from .text import run_trace_line

__all__ = ["SHARED_TEXTS", "SharedTexts", "titled_section", "trace_pointer"]


@attrs.frozen
class SharedTexts:
    """The fixed lines of one locale that both workflows' renderings use."""

    reason_code_line: str
    actions_title: str
    none_line: str
    trace_line: str
    unknown_run: str


# Each shared line with its translations side by side: a locale added to
# :class:`Locale` without a translation fails at import (``KeyError``), a line
# added to :class:`SharedTexts` without a row fails there too (``TypeError``).
_TRANSLATIONS: Mapping[str, Mapping[Locale, str]] = {
    "reason_code_line": {Locale.EN: "- Reason code: {code}", Locale.ZH_CN: "- 原因代码：{code}"},
    "actions_title": {Locale.EN: "### Recommended actions", Locale.ZH_CN: "### 建议的操作"},
    "none_line": {Locale.EN: "- None.", Locale.ZH_CN: "- 无。"},
    "trace_line": {
        Locale.EN: "Inspect the trace of run {run_id} for details.",
        Locale.ZH_CN: "请查看运行 {run_id} 的追踪记录以了解详情。",
    },
    "unknown_run": {Locale.EN: "(unknown run)", Locale.ZH_CN: "（未知运行）"},
}

SHARED_TEXTS: Mapping[Locale, SharedTexts] = MappingProxyType(
    {
        locale: SharedTexts(**{line: texts[locale] for line, texts in _TRANSLATIONS.items()})
        for locale in Locale
    }
)
"""Every locale's shared lines."""


def trace_pointer(texts: SharedTexts, run_id: str, max_chars: int) -> str:
    """The closing line of a fallback: where the run's trace is (the id sanitized)."""
    return run_trace_line(texts.trace_line, run_id, max_chars, texts.unknown_run)


def titled_section(title: str, lines: Sequence[str], none_line: str) -> list[str]:
    """``title``, a blank line, then ``lines`` — or ``none_line`` when there are none.

    Every section of a rendering is always present (spec §6.8), so an empty
    one must say so rather than vanish (usually :attr:`SharedTexts.none_line`).
    """
    return [title, "", *(lines or [none_line])]
