"""The misuses that ``tests/typing/misuse.py`` makes mypy errors are runtime errors too.

Each ``rejected_*`` function there is one call a type checker must reject (checked by
``mypy --strict … tests/typing`` with ``warn_unused_ignores``); here each must also be
refused at run time with a typed error naming the field, so the signature is exactly as
strict as the validator behind it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from diagnosis_core import ConfigError

MISUSE = Path(__file__).parent / "typing" / "misuse.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("typing_misuse", MISUSE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MODULE = _module()
REJECTED: dict[str, Callable[[], None]] = {
    name: getattr(MODULE, name) for name in dir(MODULE) if name.startswith("rejected_")
}

# The field each misuse must be refused for (the start of the error message).
EXPECTED = {
    "rejected_history_of_strings": (TypeError, r"^history\[0\]: expected HistoryMessage"),
    "rejected_skills_of_dicts": (TypeError, r"^skills\[0\]: expected Skill"),
    "rejected_metadata_with_a_number": (ConfigError, r"^metadata: keys and values must be"),
    "rejected_metadata_that_is_a_list": (ConfigError, r"^metadata: expected a mapping"),
    "rejected_locale_that_is_a_number": (ConfigError, r"^locale: expected one of 'en'"),
    "rejected_retry_limit_as_text": (ConfigError, r"^technical_retry_limit: expected an int"),
    "rejected_run_config_as_text": (TypeError, r"'run' must be"),
    "rejected_alert_labels_with_a_number": (ConfigError, r"^labels: keys and values must"),
    "rejected_aiops_locale_that_is_a_number": (ConfigError, r"^locale: expected one of"),
}


def test_every_rejected_misuse_has_an_expected_error() -> None:
    assert set(REJECTED) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_runtime_rejects_what_the_types_reject(name: str) -> None:
    error, message = EXPECTED[name]
    with pytest.raises(error, match=message):
        REJECTED[name]()
