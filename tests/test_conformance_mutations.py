"""The kit catches broken rules: each deliberate break fails cases whose ``why`` names the rule.

Each mutation edits one rule in a copy of the package (found by its source
text, wherever the module lives), then the corpus runs against the copy in
batch mode, through a child process whose ``PYTHONPATH`` points at the copy;
the runner and the expected results stay this package's. At least one case
must fail, and at least one failing case's ``why`` must name the broken rule.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from diagnosis_core.conformance._corpus import load_corpus
from diagnosis_core.conformance._runner import BatchCommand, run_cases

ROOT = Path(__file__).resolve().parents[1]

# (name, source text, replacement, words the why of a failing case must contain)
MUTATIONS: list[tuple[str, str, str, str]] = [
    ("verdict_ceiling_off",
     "return model_verdict if model_verdict.rank <= ceiling.rank else ceiling",
     "return model_verdict", "verdict ceiling"),
    ("executor_retried",
     "    Route(_N.EXECUTOR, _C.ANY_FAILURE, _PRE, reason_from_node=True),",
     "    Route(_N.EXECUTOR, _C.RETRY_LEFT, _N.EXECUTOR, same_input=True),\n"
     "    Route(_N.EXECUTOR, _C.ANY_FAILURE, _PRE, reason_from_node=True),",
     "executor is never retried"),
    ("planner_whitelist_widened",
     "recent = last_items(history, config.history_limit)",
     "recent = tuple(history)", "whitelist"),
    ("reason_code_renamed",
     'NO_TRUSTED_EVIDENCE = "NO_TRUSTED_EVIDENCE"',
     'NO_TRUSTED_EVIDENCE = "NO_TRUSTED_EVIDENCES"', "NO_TRUSTED_EVIDENCE"),
    ("canonical_json_key_order",
     '    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False\n)',
     '    sort_keys=False, ensure_ascii=False, separators=(",", ":"), allow_nan=False\n)',
     "canonical JSON"),
    ("fallback_leaks_a_claim",
     "        allowed_claims=_allowed_claims(state),\n        missing_info=output.missing_info,",
     "        allowed_claims=tuple(AllowedClaim(c.claim_id, c.text)\n"
     "                             for c in state.verified.verified_executor_output),\n"
     "        missing_info=output.missing_info,",
     "post-verification fallback"),
    ("gatekeeper_status_case_sensitive",
     "word = str.lower(str.strip(value))", "word = value", "case and"),
    ("binding_key_trimmed",
     "key = (claim_id, binding.source_invocation_id, binding.tool_name, binding.raw_path)",
     "key = (claim_id.upper(), binding.source_invocation_id.strip(), "
     "binding.tool_name.lower(), binding.raw_path)",
     "exact 4-tuple"),
    ("matched_text_from_excerpt",
     "evidence.append(VerifiedEvidence(*key, matched_text=matched))",
     "evidence.append(VerifiedEvidence(*key, matched_text=binding.evidence_excerpt))",
     "matched_text"),
    ("contradicted_counted_as_gap",
     "_GAP_VERIFICATIONS = frozenset({Verification.NO_EVIDENCE, Verification.INDIRECT_SUPPORT})",
     "_GAP_VERIFICATIONS = frozenset({Verification.NO_EVIDENCE, Verification.INDIRECT_SUPPORT,"
     " Verification.CONTRADICTED})",
     "§6.4"),
    ("technical_retry_off_by_one",
     "return attempt - 1 < limit",
     "return attempt - 1 <= limit",
     "technical retry limit"),
    ("evidence_retry_twice",
     "evidence_retry_left=state.evidence_retries < state.request.config.evidence_retry_limit",
     "evidence_retry_left=state.evidence_retries <= state.request.config.evidence_retry_limit",
     "evidence retry"),
    ("reference_gatekeeper_no_folding",
     'return _WHITESPACE_RUN.sub(" ", text)', "return text", "reference gatekeeper"),
    ("journal_hash_unchecked",
     "or entry.input_sha256 != expected.input_sha256", "or False", "tamper"),
]


def _mutated_copy(tmp_path: Path, source: str, replacement: str) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "diagnosis_core", copy / "diagnosis_core",
                    ignore=shutil.ignore_patterns("__pycache__", "corpus"))
    hits = [path for path in (copy / "diagnosis_core").rglob("*.py")
            if "testing" not in path.parts and source in path.read_text(encoding="utf-8")]
    assert len(hits) == 1, f"the rule's source text is in {len(hits)} files: {source!r}"
    text = hits[0].read_text(encoding="utf-8")
    assert text.count(source) == 1
    hits[0].write_text(text.replace(source, replacement), encoding="utf-8")
    return copy


def _command(copy: Path) -> list[str]:
    """The copy's command line: ``-P`` keeps the working directory's package off the path."""
    return ["env", f"PYTHONPATH={copy}", sys.executable, "-P", "-m", "diagnosis_core"]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "source", "replacement", "words"), MUTATIONS,
                         ids=[m[0] for m in MUTATIONS])
def test_the_kit_names_the_broken_rule(
    tmp_path: Path, name: str, source: str, replacement: str, words: str
) -> None:
    copy = _mutated_copy(tmp_path, source, replacement)
    command = _command(copy)
    results = run_cases(BatchCommand(command, timeout=30), load_corpus())
    failing = [result for result in results if not result.passed]
    assert failing, f"{name}: no case failed"
    named = [r.case.id for r in failing if words.lower() in r.case.why.lower()]
    assert named, (
        f"{name}: {len(failing)} cases failed, none whose why names {words!r}: "
        + ", ".join(r.case.id for r in failing[:10])
    )


def test_the_child_runs_the_copy(tmp_path: Path) -> None:
    """The harness itself: the child imports the copy, and an unedited copy passes."""
    import subprocess

    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "diagnosis_core", copy / "diagnosis_core",
                    ignore=shutil.ignore_patterns("__pycache__", "corpus"))
    where = subprocess.run(
        [*_command(copy)[:-2], "-c", "import diagnosis_core; print(diagnosis_core.__file__)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(copy)


def test_the_unmutated_copy_passes(tmp_path: Path) -> None:
    """An unedited copy passes every case (so a failure above is the edit's)."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "diagnosis_core", copy / "diagnosis_core",
                    ignore=shutil.ignore_patterns("__pycache__", "corpus"))
    command = _command(copy)
    results = run_cases(BatchCommand(command, timeout=30), load_corpus())
    assert [r.case.id for r in results if not r.passed] == []
