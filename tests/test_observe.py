"""The observer protocol's one calling point: a hook that raises is reported, never raised."""

from __future__ import annotations

import logging
import warnings

import pytest

import diagnosis_core as dc
from diagnosis_core._kernel.driving.observe import Watcher
from tests._reach import machine as dcm


class Recording:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    def event_appended(self, *args: object) -> None:
        self.calls.append(("event_appended", args))


class Raising:
    def event_appended(self, *args: object) -> None:
        raise RuntimeError("exporter down")


def test_notify_calls_the_hook_with_the_arguments() -> None:
    observer = Recording()
    dcm.notify(observer, "event_appended", 1, "two")
    assert observer.calls == [("event_appended", (1, "two"))]


def test_notify_skips_none_and_missing_hooks(caplog: pytest.LogCaptureFixture) -> None:
    observer = Recording()
    with warnings.catch_warnings(), caplog.at_level(logging.DEBUG):
        warnings.simplefilter("error")
        assert dcm.notify(None, "event_appended", 1) is None
        assert dcm.notify(observer, "effect_started", 1) is None
    assert observer.calls == []  # the missing hook was not routed to another one
    assert caplog.records == []  # skipping is not a failure: nothing is reported
    watcher = Watcher(observer)
    watcher.notify("effect_started", 1)
    watcher.notify("event_appended", 2)
    assert watcher.failures == 0
    assert observer.calls == [("event_appended", (2,))]


def test_a_raising_hook_is_logged_naming_it_and_never_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, "diagnosis_core.observe"):
        warnings.simplefilter("error")
        dcm.notify(Raising(), "event_appended", 1)
    (record,) = caplog.records
    assert record.name == "diagnosis_core.observe" and record.levelno == logging.WARNING
    assert "event_appended raised RuntimeError: exporter down" in record.getMessage()
    assert issubclass(dc.ObserverWarning, RuntimeWarning)  # kept importable


def test_cancellation_still_propagates() -> None:
    class Cancelling:
        def effect_started(self, *args: object) -> None:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dcm.notify(Cancelling(), "effect_started")


def test_new_events_are_the_appended_tail() -> None:
    assert list(dcm.new_events([1, 2], [1, 2, 3, 4])) == [3, 4]
    assert list(dcm.new_events([], [])) == []
