"""Read the package's reST inline markup as Markdown when the API reference is built.

The docstrings are written for ``help()`` and editors: Google-style sections with
reST inline roles (``:class:`Name```, ``:func:`~pkg.name```) and ``::`` literal
blocks. mkdocstrings renders Markdown, so this griffe extension rewrites, before a
docstring is parsed, each role to a code span of its target's short name (or of its
explicit title) and a paragraph-ending ``::`` to ``:`` (the indented block that follows
is a Markdown code block already). The docstrings themselves stay unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):`([^`]+)`")
_TITLED = re.compile(r"^(.*?)\s*<[^<>]+>$")
_LITERAL_MARKER = re.compile(r"(?<=\S)::$", re.MULTILINE)


def _role_text(match: re.Match[str]) -> str:
    target = match.group(1).strip()
    titled = _TITLED.match(target)
    if titled:
        return f"`{titled.group(1)}`"
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target}`"


def markdown_docstring(text: str) -> str:
    """Return ``text`` with reST roles and ``::`` markers turned into Markdown."""
    return _LITERAL_MARKER.sub(":", _ROLE.sub(_role_text, text))


class SphinxRoles(griffe.Extension):
    """Rewrite the reST inline markup of every docstring to Markdown."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        # The root package is finished after its members: give it the same treatment.
        for obj in (pkg, *pkg.modules.values()):
            if obj.docstring is not None:
                obj.docstring.value = markdown_docstring(obj.docstring.value)
