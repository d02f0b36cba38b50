"""Regenerate the shipped corpus: ``python -m corpus_tools.generate``.

Run from the repository root: the bundled ``examples/`` are part of the
corpus, and this folder is repository tooling, not part of the installed
package. Writes ``diagnosis_core/conformance/corpus/<area>.json`` for every
area, removing files of areas that no longer exist, and prints the counts.
``--check`` writes nothing and exits 1 when the shipped corpus differs from
what this package produces. Deterministic: running it twice changes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from corpus_tools.cases import build_corpus
from diagnosis_core.conformance import PROTOCOL_VERSION
from diagnosis_core.conformance._corpus import Case

__all__ = ["corpus_file_text", "main", "render_corpus"]

_ROOT = Path(__file__).resolve().parents[1]
_CORPUS = _ROOT / "diagnosis_core" / "conformance" / "corpus"


def corpus_file_text(area: str, cases: list[Case]) -> str:
    """A corpus file's text: a header, then one case per line (deterministic)."""
    lines = [
        "{" + f'"protocol_version": {json.dumps(PROTOCOL_VERSION)}, '
        f'"area": {json.dumps(area)}, "cases": ['
    ]
    rows = [
        json.dumps(case.to_wire(), ensure_ascii=False, sort_keys=True) for case in cases
    ]
    lines.append(",\n".join(rows))
    lines.append("]}")
    return "\n".join(lines) + "\n"


def render_corpus(examples: Path) -> dict[str, str]:
    """Each corpus file's name and text, as this package produces them."""
    corpus = build_corpus(examples)
    return {f"{area}.json": corpus_file_text(area, cases) for area, cases in corpus.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check`` compare) the corpus; the exit status says what happened."""
    parser = argparse.ArgumentParser(prog="python -m corpus_tools.generate")
    parser.add_argument("--examples", type=Path, default=_ROOT / "examples")
    parser.add_argument("--out", type=Path, default=_CORPUS)
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a diff")
    args = parser.parse_args(argv)
    files = render_corpus(args.examples)
    out: Path = args.out
    stale = sorted(
        path.name for path in out.glob("*.json") if path.name not in files
    ) if out.is_dir() else []
    differs = [
        name for name, text in files.items()
        if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text
    ]
    if args.check:
        for name in [*differs, *stale]:
            sys.stdout.write(f"differs: {name}\n")
        return 1 if differs or stale else 0
    out.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (out / name).unlink()
    for name in differs:
        (out / name).write_text(files[name], encoding="utf-8", newline="\n")
    total = 0
    for name, text in files.items():
        count = text.count("\n") - 2
        total += count
        sys.stdout.write(f"{name[:-5]:<22}{count:>5}\n")
    sys.stdout.write(f"{'total':<22}{total:>5}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
