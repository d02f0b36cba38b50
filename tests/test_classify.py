"""Failure classification (spec §6.7): every rule, and its precedence."""

from __future__ import annotations

import asyncio

import pytest

from diagnosis_core._kernel.enums import FailureKind
from diagnosis_core._kernel.errors import NonRetryableError, ToolBlockedError
from diagnosis_core._kernel.machine.classify import classify_failure, default_failure_classifier


class Flagged(Exception):
    def __init__(self, retryable: object) -> None:
        super().__init__("flagged")
        self.retryable = retryable


class FlaggedTimeout(TimeoutError):
    def __init__(self, retryable: object) -> None:
        super().__init__("flagged timeout")
        self.retryable = retryable


class RaisingFlag(TimeoutError):
    @property
    def retryable(self) -> bool:
        raise RuntimeError("cannot tell")


class AttributeErrorFlag(TimeoutError):
    @property
    def retryable(self) -> bool:
        raise AttributeError("hidden")


class DynamicFlag(Exception):
    def __getattr__(self, name: str) -> object:
        if name == "retryable":
            return True
        raise AttributeError(name)


class BadBool:
    def __bool__(self) -> bool:
        raise ValueError("no truth value")


class RetryableToolBlocked(ToolBlockedError):
    retryable = True


class RetryableNonRetryable(NonRetryableError):
    retryable = True


class ExplodingStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("boom")


def test_timeout_error_is_retryable() -> None:
    assert default_failure_classifier(TimeoutError("slow")) is FailureKind.RETRYABLE


def test_asyncio_timeout_error_is_retryable() -> None:
    alias = asyncio.TimeoutError  # the alias itself is under test
    assert default_failure_classifier(alias()) is FailureKind.RETRYABLE


def test_connection_error_and_subclasses_are_retryable() -> None:
    assert default_failure_classifier(ConnectionError()) is FailureKind.RETRYABLE
    assert default_failure_classifier(ConnectionResetError()) is FailureKind.RETRYABLE


def test_truthy_retryable_attribute_is_retryable() -> None:
    assert default_failure_classifier(Flagged(True)) is FailureKind.RETRYABLE
    assert default_failure_classifier(Flagged("yes")) is FailureKind.RETRYABLE


def test_retryable_attribute_from_getattr_hook_counts() -> None:
    assert default_failure_classifier(DynamicFlag()) is FailureKind.RETRYABLE


def test_tool_blocked_error_is_tool_blocked() -> None:
    assert default_failure_classifier(ToolBlockedError("policy")) is FailureKind.TOOL_BLOCKED


def test_non_retryable_error_is_non_retryable() -> None:
    assert default_failure_classifier(NonRetryableError("no")) is FailureKind.NON_RETRYABLE


@pytest.mark.parametrize("flag", [False, 0, "", None])
def test_falsy_retryable_attribute_is_non_retryable(flag: object) -> None:
    assert default_failure_classifier(Flagged(flag)) is FailureKind.NON_RETRYABLE


@pytest.mark.parametrize(
    "error", [ValueError("x"), RuntimeError(), KeyError("k"), Exception(), KeyboardInterrupt()]
)
def test_unknown_exceptions_are_non_retryable(error: BaseException) -> None:
    assert default_failure_classifier(error) is FailureKind.NON_RETRYABLE


def test_package_types_beat_a_retryable_attribute() -> None:
    assert default_failure_classifier(RetryableToolBlocked()) is FailureKind.TOOL_BLOCKED
    assert default_failure_classifier(RetryableNonRetryable()) is FailureKind.NON_RETRYABLE


def test_falsy_retryable_attribute_beats_timeout_error() -> None:
    assert default_failure_classifier(FlaggedTimeout(False)) is FailureKind.NON_RETRYABLE


def test_truthy_retryable_attribute_on_timeout_error_stays_retryable() -> None:
    assert default_failure_classifier(FlaggedTimeout(True)) is FailureKind.RETRYABLE


def test_retryable_property_that_raises_is_non_retryable() -> None:
    assert default_failure_classifier(RaisingFlag()) is FailureKind.NON_RETRYABLE


def test_retryable_property_raising_attribute_error_is_not_treated_as_absent() -> None:
    assert default_failure_classifier(AttributeErrorFlag()) is FailureKind.NON_RETRYABLE


def test_retryable_value_without_truth_value_is_non_retryable() -> None:
    assert default_failure_classifier(FlaggedTimeout(BadBool())) is FailureKind.NON_RETRYABLE


def test_unprintable_exception_is_classified_without_raising() -> None:
    assert default_failure_classifier(ExplodingStr()) is FailureKind.NON_RETRYABLE


def test_classify_failure_returns_the_classifier_kind() -> None:
    for kind in FailureKind:
        assert classify_failure(lambda error, kind=kind: kind, ValueError()) is kind


def test_classify_failure_uses_default_classifier() -> None:
    assert classify_failure(default_failure_classifier, TimeoutError()) is FailureKind.RETRYABLE


def test_raising_classifier_is_non_retryable() -> None:
    def classifier(error: BaseException) -> FailureKind:
        raise RuntimeError("classifier bug")

    assert classify_failure(classifier, TimeoutError()) is FailureKind.NON_RETRYABLE


@pytest.mark.parametrize("result", ["RETRYABLE", None, 1, True, FailureKind])
def test_classifier_returning_a_non_member_is_non_retryable(result: object) -> None:
    assert classify_failure(lambda error: result, TimeoutError()) is FailureKind.NON_RETRYABLE  # type: ignore[arg-type]


def test_base_exception_from_classifier_propagates() -> None:
    def classifier(error: BaseException) -> FailureKind:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        classify_failure(classifier, TimeoutError())
