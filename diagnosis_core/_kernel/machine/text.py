"""Safe rendering of one interpolated item (spec §6.8), shared by both workflows' fallbacks.

Every string a deterministic fallback text interpolates — a question, a
claim, a tool name, an alert — goes through :func:`sanitize_item`, so a
model's or a host's text can never become Markdown or HTML structure.

The lines both workflows' deterministic texts share, per locale, are here too
(:data:`SHARED_TEXTS`): the chat fallbacks and the AIOps fallback and report view
say different things, but the reason-code line, the "recommended actions" heading,
the "none" bullet of an empty section and the closing pointer to the run's trace
are the same sentence in both, in every locale. They are written once, so the two
workflows cannot drift apart in wording (each workflow's own ``_Templates`` keeps
only what it alone says), and the layout of a titled section is one function.
Like every template, none of these contains ``&``, ``<`` or ``>``; placeholders are
filled with values that went through :func:`sanitize_item`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

import attrs

from ..enums import Locale

__all__ = [
    "ELLIPSIS",
    "SHARED_TEXTS",
    "SharedTexts",
    "sanitize_item",
    "titled_section",
    "trace_pointer",
]

ELLIPSIS = "…"


# Every ASCII punctuation character: exactly the set CommonMark lets a
# backslash escape (spec section 2.4), so a backslash before any of them renders
# as the character itself, literal text, in every CommonMark/GFM renderer.
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


# `&`, `<` and `>` are HTML-escaped instead: a backslash before `&` would let
# the entity that follows print literally, and `&gt;`/`&lt;` can start neither
# a block quote, an autolink nor an HTML block.
_HTML_ESCAPES = MappingProxyType({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


# `_` and `-` between two ASCII letters or digits stay bare: such a `_` can
# neither open nor close emphasis (it is both left- and right-flanking and not
# next to punctuation), and a single `-` inside a word starts no construct, so
# identifiers such as `GATEKEEPER_REJECTED` or `run-1` keep their plain form.
_INTRAWORD_SAFE = frozenset("_-")


# U+2060 WORD JOINER before every `@`: it is invisible and allows no line
# break, and it leaves no ASCII local part before the `@` for an email
# autolink extension that runs on the decoded text (GitHub's cmark-gfm merges
# text nodes before looking for emails, so a backslash alone does not stop
# it). A literal character, not a reference: some renderers (mistune's escape
# mode) print references literally.
_AT_SIGN = "\u2060\\@"


def _cleaned_chars(text: str) -> Iterator[str]:
    """Yield ``text`` with control characters removed or turned into one space.

    * a control or separator character that Python counts as whitespace (tab,
      LF, VT, FF, CR, U+001C..U+001F, U+0085, U+2028, U+2029) becomes one
      space; CR LF counts as one line break;
    * every other ``Cc`` (C0/C1 controls, DEL) and ``Cf`` character (zero
      width, bidi overrides such as U+202E, soft hyphen, BOM) is removed —
      they can hide or reorder what a reader sees;
    * a lone surrogate (``Cs``) becomes U+FFFD so the result always encodes
      to UTF-8.
    """
    after_cr = False
    for char in text:
        if char == "\n" and after_cr:
            after_cr = False
            continue
        after_cr = char == "\r"
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Zl", "Zp"):
            if char.isspace():
                yield " "
            continue
        yield "\ufffd" if category == "Cs" else char


def _clean_and_cap(text: str, max_chars: int) -> str:
    """Clean, strip and cap ``text``; stop reading once the outcome is known.

    Equivalent to ``cleaned = clean(text).strip()`` followed by
    ``cleaned if len(cleaned) <= max_chars else cleaned[:max_chars - 1] + "…"``,
    but it reads at most as far as the first non-whitespace character after
    ``max_chars`` kept characters, so a huge item costs O(max_chars).
    """
    kept: list[str] = []
    chars = _cleaned_chars(text)
    for char in chars:
        if kept or not char.isspace():
            kept.append(char)
            if len(kept) == max_chars:
                if any(not rest.isspace() for rest in chars):
                    return "".join(kept[: max_chars - 1]) + ELLIPSIS
                break
    return "".join(kept).rstrip()


def _is_ascii_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _escape_markdown(text: str) -> str:
    """Make ``text`` inert literal text for any CommonMark/GFM renderer (spec §6.8).

    ``&``, ``<``, ``>`` become ``&amp;``, ``&lt;``, ``&gt;``; ``@`` becomes
    U+2060 followed by ``\\@`` (see ``_AT_SIGN``); every other ASCII punctuation character
    gets a backslash, except ``_`` and ``-`` between two ASCII letters or digits.
    Every character that can start a Markdown construct — emphasis, code span,
    link, image, autolink, raw HTML, entity, heading, list, block quote,
    table, strikethrough — is ASCII punctuation, and linkify/autolink
    extensions need an unescaped ``.``, ``:`` or ``@`` inside one text run, so
    the result renders as the characters of ``text`` and nothing else.
    Non-ASCII characters are never syntax and pass unchanged.
    """
    out: list[str] = []
    last = len(text) - 1
    for index, char in enumerate(text):
        if char not in _ASCII_PUNCTUATION:
            out.append(char)
        elif char in _HTML_ESCAPES:
            out.append(_HTML_ESCAPES[char])
        elif char == "@":
            out.append(_AT_SIGN)
        elif (
            char in _INTRAWORD_SAFE
            and 0 < index < last
            and _is_ascii_alnum(text[index - 1])
            and _is_ascii_alnum(text[index + 1])
        ):
            out.append(char)
        else:
            out.append("\\" + char)
    return "".join(out)


def sanitize_item(text: str, max_chars: int) -> str:
    """Render one interpolated string safely (spec §6.8); never raises on a ``str``.

    Steps, in this order:

    1. control characters: whitespace-like controls and line/paragraph
       separators (``\\t``, ``\\n``, ``\\r``, U+2028 …) become one space (CR LF
       is one), every other ``Cc``/``Cf`` character is removed, a lone
       surrogate becomes U+FFFD;
    2. leading and trailing whitespace (``str.strip``) is removed, so an
       indent can never make a code block;
    3. the cap: a result longer than ``max_chars`` characters becomes its first
       ``max_chars - 1`` characters followed by ``…`` — exactly ``max_chars``
       characters, counted before any escaping;
    4. Markdown and HTML escaping (``_escape_markdown``): ``&``, ``<``, ``>``
       become ``&amp;``, ``&lt;``, ``&gt;``; ``@`` becomes U+2060 WORD JOINER and
       ``\\@`` (the invisible joiner breaks email autolinks); every
       other ASCII punctuation character gets a backslash, except ``_`` and
       ``-`` between two ASCII letters or digits.

    The outcome (spec §6.8): rendered with any CommonMark or GFM renderer,
    linkify and autolinks on, the item is literal text — no link, image,
    autolink, raw HTML, heading, list, block quote, emphasis, strikethrough
    or code span — and its visible text is the cleaned, capped text (plus
    the invisible U+2060 before each ``@``). The result contains no line
    break, no raw ``<``/``>`` and no ``&`` outside ``&amp;``/``&lt;``/``&gt;``.
    It may be empty. ``max_chars`` below 1 is a caller error
    (``ValueError``); :class:`DiagnosisConfig` guarantees ≥ 20.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars: expected at least 1, got {max_chars}")
    return _escape_markdown(_clean_and_cap(text, max_chars))


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
    """The closing line of a fallback text: where to look for the run's trace (spec §6.8).

    The run id is the caller's and is sanitized like every interpolated item;
    an id that sanitizes to nothing shows ``unknown_run`` instead, so the line
    never reads as if it named a run. Both workflows' fallbacks end with it.
    """
    return texts.trace_line.format(run_id=sanitize_item(run_id, max_chars) or texts.unknown_run)


def titled_section(title: str, lines: Sequence[str], none_line: str) -> list[str]:
    """``title``, a blank line, then ``lines`` — or ``none_line`` when there are none.

    Every section of a rendering is always present (spec §6.8), so an empty
    one must say so rather than vanish (usually :attr:`SharedTexts.none_line`).
    """
    return [title, "", *(lines or [none_line])]
