"""Stored text as a report prints it: escaped for its medium, a terminal or an HTML page (spec §15).

Reports print strings the store holds and an agent or a tool chose: a tool
name, a session id, a comment, an answer. Such a string is data, never layout
or markup. :func:`text_line` makes it one inert line of a terminal report
(every control shown as a visible escape, the line break and the tab too, so
it cannot forge a line of the report); :func:`html_text` makes it inert HTML
text (markup escaped, and every character a page may not hold — a lone
surrogate, a control, a noncharacter — or that reorders what a reader sees
— a bidi control — shown as a visible ``\\uXXXX``), so writing the page as
UTF-8 never fails.
"""

from __future__ import annotations

import html

from .. import terminal_safe

__all__ = ["html_text", "text_line"]

_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def _visible(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def text_line(value: object) -> str:
    """``value`` as one inert line of a terminal report (``-`` for None)."""
    if value is None:
        return "-"
    text = str(value).replace("\n", "\\n").replace("\t", "\\t")
    return terminal_safe(text)


def _unsafe_in_html(char: str) -> bool:
    code = ord(char)
    return (
        (code < 0x20 and char not in "\n\t")
        or 0x7F <= code <= 0x9F
        or 0xD800 <= code <= 0xDFFF
        or 0xFDD0 <= code <= 0xFDEF
        or (code & 0xFFFE) == 0xFFFE
        or char in _BIDI_CONTROLS
    )


def html_text(value: object) -> str:
    """``value`` as inert HTML text (attribute-safe too): markup escaped, the unsayable visible."""
    text = "-" if value is None else str(value)
    if any(_unsafe_in_html(char) for char in text):
        text = "".join(_visible(char) if _unsafe_in_html(char) else char for char in text)
    return html.escape(text, quote=True)
