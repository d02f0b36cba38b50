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

def text_line(value: object) -> str:
    """``value`` as one inert line of a terminal report (``-`` for None)."""
    if value is None:
        return "-"
    text = str(value).replace("\n", "\\n").replace("\t", "\\t")
    return terminal_safe(text)


def _unsayable(char: str) -> bool:
    """A character a page may not hold: a lone surrogate or a noncharacter."""
    code = ord(char)
    return 0xD800 <= code <= 0xDFFF or 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE


def html_text(value: object) -> str:
    """``value`` as inert HTML text (attribute-safe too): markup escaped, the unsayable visible.

    The controls and bidi controls are shown as :func:`terminal_safe` shows them; what
    a page cannot hold besides (a lone surrogate, a noncharacter) as ``\\uXXXX``.
    """
    text = terminal_safe("-" if value is None else str(value))
    if any(_unsayable(char) for char in text):
        text = "".join(f"\\u{ord(char):04x}" if _unsayable(char) else char for char in text)
    return html.escape(text, quote=True)
