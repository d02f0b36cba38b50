"""Inert text for a terminal (spec §15 "Terminal output is inert").

The readable ``diagnosis-core run`` output prints agent text (the composer's
answer, AIOps report items, rule messages) and scenario text. A terminal acts
on control characters: ``ESC [2J`` clears the screen, ``ESC ]0;…`` sets the
window title, OSC 8 makes hidden hyperlinks, a bare CR or backspaces overwrite
what was printed, C1 controls (U+0080..U+009F) are CSI/OSC on some
terminals, and bidi controls reorder what a reader sees. :func:`terminal_safe`
shows every such character as a visible escape (``\\x1b``, ``\\u202e``) instead,
so the output keeps every character's information and the terminal receives
none of them as a command. ``--json`` output is data and is never touched.
"""

from __future__ import annotations

__all__ = ["terminal_safe"]

# Unicode Bidi_Control characters: ALM, LRM, RLM, the embeddings and overrides
# LRE RLE PDF LRO RLO, and the isolates LRI RLI FSI PDI.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)

# Kept as they are: the line break and the tab are the layout of the output.
_KEPT = frozenset("\n\t")


def _is_unsafe(char: str) -> bool:
    code = ord(char)
    is_control = code < 0x20 or 0x7F <= code <= 0x9F
    return (is_control and char not in _KEPT) or char in _BIDI_CONTROLS


def _visible_escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every terminal control shown as a visible escape, nothing else changed.

    Escaped: C0 controls except ``\\n`` and ``\\t`` (so ESC, and with it every
    CSI, OSC and other escape sequence, CR, BEL, backspace), DEL, the C1
    controls U+0080..U+009F and the Unicode bidi controls. ESC ``[2J`` prints
    as the six characters ``\\x1b[2J``. Linear in ``len(text)``; never raises on
    a ``str`` (lone surrogates pass, the writer encodes them).
    """
    if not any(_is_unsafe(char) for char in text):
        return text
    return "".join(_visible_escape(char) if _is_unsafe(char) else char for char in text)
