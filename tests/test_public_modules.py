"""Public classes name a public namespace (``__module__``), never a private module.

Tracebacks, class reprs and pickle read ``__module__``: a host must read
``diagnosis_core.MachineError``, not ``diagnosis_core._kernel.errors.MachineError``,
and an error pickled by an engine (Temporal, DBOS) must load back where it says
it lives. The home is the first namespace of ``_kernel.public.HOMES`` that
exports the class.
"""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import subprocess
import sys
import traceback
import warnings

import pytest

import diagnosis_core as dc
import diagnosis_core.adapters
from diagnosis_core._kernel.public import HOMES

OPTIONAL = ("langgraph", "temporalio", "dbos", "opentelemetry", "langchain_core", "psycopg")


def _namespaces() -> list[str]:
    names = [name for name in HOMES]
    names += [
        f"diagnosis_core.adapters.{info.name}"
        for info in pkgutil.iter_modules(diagnosis_core.adapters.__path__)
        if not info.name.startswith("_")
    ]
    return names


def _exported_classes(namespace: str) -> list[tuple[str, type]]:
    try:
        module = importlib.import_module(namespace)
    except ImportError as error:  # an adapter whose extra is not installed
        pytest.skip(f"{namespace}: {error}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        values = [(name, getattr(module, name)) for name in module.__all__]
    # A class exported under another name than its own (an alias) cannot name the
    # namespace: pickle looks a class up by its own name.
    return [(name, value) for name, value in values
            if isinstance(value, type) and value.__qualname__ == name]


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


NAMESPACES = _namespaces()


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_no_public_class_names_a_private_module(namespace: str) -> None:
    classes = _exported_classes(namespace)  # none, for a namespace of functions
    offenders = [f"{namespace}.{name}: {cls.__module__}" for name, cls in classes
                 if cls.__module__.startswith("diagnosis_core") and _private(cls.__module__)]
    assert offenders == []
    for name, cls in classes:
        if cls.__module__.startswith("diagnosis_core"):
            home = importlib.import_module(cls.__module__)
            assert getattr(home, cls.__qualname__) is cls, f"{namespace}.{name}"


def test_every_class_names_the_first_namespace_that_exports_it() -> None:
    homes: dict[type, str] = {}
    for namespace in _namespaces():
        try:
            classes = _exported_classes(namespace)
        except pytest.skip.Exception:
            continue
        for _, cls in classes:
            homes.setdefault(cls, namespace)
    wrong = [f"{cls.__qualname__}: {cls.__module__} (first: {home})"
             for cls, home in homes.items()
             if cls.__module__.startswith("diagnosis_core") and not _private(cls.__module__)
             and cls.__module__ != home]
    assert wrong == []


def _errors() -> list[BaseException]:
    return [
        dc.ConfigError("run_id: expected a non-empty string"),
        dc.DiagnosisError("base"),
        dc.JournalError("entries[3]: diverges"),
        dc.LedgerError("duplicate id"),
        dc.MachineError("finished"),
        dc.NonRetryableError("no"),
        dc.PayloadError("claims[0].raw_path", "missing"),
        dc.RunOptionsError("state= with sink="),
        dc.ScenarioError("$.steps: missing"),
        dc.ToolBlockedError("policy"),
    ]


@pytest.mark.parametrize("error", _errors(), ids=lambda e: type(e).__name__)
def test_errors_pickle_round_trip_and_name_their_public_home(error: BaseException) -> None:
    assert type(error).__module__ == "diagnosis_core"
    loaded = pickle.loads(pickle.dumps(error))
    assert type(loaded) is type(error) and str(loaded) == str(error)
    assert loaded.args == error.args
    if isinstance(error, dc.PayloadError):
        assert isinstance(loaded, dc.PayloadError)
        assert (loaded.path, loaded.problem) == (error.path, error.problem)
    rendered = "".join(traceback.format_exception_only(type(error), error))
    assert rendered.startswith(f"diagnosis_core.{type(error).__name__}: ")


def test_public_values_repr_and_pickle_from_their_namespace() -> None:
    config = dc.DiagnosisConfig(history_limit=3)
    assert pickle.loads(pickle.dumps(config)) == config
    assert repr(dc.RunConfig) == "<class 'diagnosis_core.RunConfig'>"
    assert pickle.loads(pickle.dumps(dc.Outcome.ANSWERED)) is dc.Outcome.ANSWERED
    assert repr(dc.Outcome) == "<enum 'Outcome'>" and dc.Outcome.__module__ == "diagnosis_core"


def test_a_fresh_process_names_the_public_module_in_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c",
         "import diagnosis_core as dc\nraise dc.MachineError('advancing a finished run')"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "diagnosis_core.MachineError: advancing a finished run"
    )
    assert "_kernel" not in done.stderr.strip().splitlines()[-1]


_FIRST_IMPORTS = {
    # however a namespace is first imported, its classes name it once it is bound
    "a private module of the namespace first": (
        "import diagnosis_core.stores._jsonl as m\n"
        "import diagnosis_core.journal as j, diagnosis_core.stores as s\n"
        "print(m.JsonlStore.__module__, j.StoreError.__module__, s.SqliteStore.__module__)",
        "diagnosis_core.stores diagnosis_core.journal diagnosis_core.stores",
    ),
    "importlib": (
        "import importlib\n"
        "t = importlib.import_module('diagnosis_core.testing')\n"
        "print(t.FakeGatekeeper.__module__, t.EffectScript.__module__)",
        "diagnosis_core.testing diagnosis_core.testing",
    ),
    "from the parent": (
        "from diagnosis_core import journal, tools\n"
        "print(journal.JournalStore.__module__, tools.ToolRecorder.__module__)",
        "diagnosis_core.journal diagnosis_core.tools",
    ),
    "the AIOps host's namespace, before the shared ones": (
        "import diagnosis_core.aiops as a\n"
        "from diagnosis_core._aiops.payloads import AiOpsPlan\n"
        "from diagnosis_core._aiops.journal import AiOpsJournal\n"
        "print(a.AiOpsState.__module__, AiOpsPlan.__module__, AiOpsJournal.__module__)",
        "diagnosis_core.aiops diagnosis_core.protocol diagnosis_core.journal",
    ),
    "a submodule of a public subpackage": (
        "from diagnosis_core.adapters import langgraph\n"
        "print(langgraph.ThreadBusyError.__module__, langgraph.RunOptions.__module__)",
        "diagnosis_core.adapters.langgraph diagnosis_core.adapters.langgraph",
    ),
}


@pytest.mark.parametrize("script", _FIRST_IMPORTS, ids=str)
def test_a_namespace_is_published_however_it_is_first_imported(script: str) -> None:
    """No namespace publishes itself: the package does it as each one is bound (public.py)."""
    if "langgraph" in script:
        pytest.importorskip("langgraph")
    source, expected = _FIRST_IMPORTS[script]
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected
