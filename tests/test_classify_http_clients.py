"""The default classifier on the real exception classes of HTTP clients (spec §6.7).

Every exception below is constructed from the real library (dev dependencies),
and the urllib and httpx connection failures are real refused connections to
a closed port on 127.0.0.1.
"""

from __future__ import annotations

import http
import socket
import urllib.error
import urllib.request
from typing import Any

import aiohttp
import httpx
import pytest
import requests
import urllib3

from diagnosis_core import (
    FailureKind,
    default_failure_classifier,
)
from diagnosis_core._kernel.machine.classify import HTTP_CLIENT_ERRORS, HttpClientRule

RETRYABLE, NON_RETRYABLE = FailureKind.RETRYABLE, FailureKind.NON_RETRYABLE


def closed_port() -> int:
    """A localhost port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


_request = httpx.Request("GET", "http://127.0.0.1/")


def _httpx_status(code: int) -> httpx.HTTPStatusError:
    response = httpx.Response(code, request=_request)
    return httpx.HTTPStatusError("status", request=_request, response=response)


def _requests_status(code: int) -> requests.exceptions.HTTPError:
    response = requests.Response()
    response.status_code = code
    return requests.exceptions.HTTPError("status", response=response)


def _aiohttp_status(code: int) -> aiohttp.ClientResponseError:
    info: Any = None
    return aiohttp.ClientResponseError(info, (), status=code)


def _urllib_status(code: int) -> urllib.error.HTTPError:
    return urllib.error.HTTPError("http://127.0.0.1/", code, "status", None, None)  # type: ignore[arg-type]


_connection_key: Any = None  # aiohttp's ConnectionKey is only read for messages

CASES: list[tuple[str, BaseException, FailureKind]] = [
    ("httpx.ReadTimeout", httpx.ReadTimeout("slow", request=_request), RETRYABLE),
    ("httpx.ConnectTimeout", httpx.ConnectTimeout("slow"), RETRYABLE),
    ("httpx.WriteTimeout", httpx.WriteTimeout("slow"), RETRYABLE),
    ("httpx.PoolTimeout", httpx.PoolTimeout("slow"), RETRYABLE),
    ("httpx.ConnectError", httpx.ConnectError("refused"), RETRYABLE),
    ("httpx.ReadError", httpx.ReadError("reset"), RETRYABLE),
    ("httpx.RemoteProtocolError", httpx.RemoteProtocolError("bad"), NON_RETRYABLE),
    ("httpx.ProxyError", httpx.ProxyError("proxy"), NON_RETRYABLE),
    ("httpx.UnsupportedProtocol", httpx.UnsupportedProtocol("ftp"), NON_RETRYABLE),
    ("httpx.TooManyRedirects", httpx.TooManyRedirects("loop"), NON_RETRYABLE),
    ("httpx.InvalidURL", httpx.InvalidURL("bad"), NON_RETRYABLE),
    ("requests.ConnectTimeout", requests.exceptions.ConnectTimeout("slow"), RETRYABLE),
    ("requests.ReadTimeout", requests.exceptions.ReadTimeout("slow"), RETRYABLE),
    ("requests.ConnectionError", requests.exceptions.ConnectionError("refused"), RETRYABLE),
    ("requests.SSLError", requests.exceptions.SSLError("cert"), NON_RETRYABLE),
    ("requests.ProxyError", requests.exceptions.ProxyError("proxy"), NON_RETRYABLE),
    ("requests.InvalidURL", requests.exceptions.InvalidURL("bad"), NON_RETRYABLE),
    ("requests.HTTPError without response", requests.exceptions.HTTPError("x"), NON_RETRYABLE),
    ("urllib3.ReadTimeoutError", urllib3.exceptions.ReadTimeoutError(None, "/", "slow"),  # type: ignore[arg-type]
     RETRYABLE),
    ("urllib3.ConnectTimeoutError", urllib3.exceptions.ConnectTimeoutError("slow"), RETRYABLE),
    ("urllib3.NewConnectionError", urllib3.exceptions.NewConnectionError(None, "refused"),  # type: ignore[arg-type]
     RETRYABLE),
    ("urllib3.MaxRetryError(NewConnectionError)", urllib3.exceptions.MaxRetryError(
        None, "/", urllib3.exceptions.NewConnectionError(None, "refused")),  # type: ignore[arg-type]
     RETRYABLE),
    ("urllib3.MaxRetryError(SSLError)", urllib3.exceptions.MaxRetryError(
        None, "/", urllib3.exceptions.SSLError("cert")), NON_RETRYABLE),  # type: ignore[arg-type]
    ("urllib3.ProtocolError", urllib3.exceptions.ProtocolError("aborted"), NON_RETRYABLE),
    ("URLError(ConnectionRefusedError)",
     urllib.error.URLError(ConnectionRefusedError(111, "refused")), RETRYABLE),
    ("URLError(TimeoutError)", urllib.error.URLError(TimeoutError("slow")), RETRYABLE),
    ("URLError(socket.timeout)", urllib.error.URLError(TimeoutError("slow")), RETRYABLE),
    ("URLError(socket.gaierror)", urllib.error.URLError(socket.gaierror(-2, "dns")),
     NON_RETRYABLE),
    ("URLError(str)", urllib.error.URLError("unknown url type: ftp"), NON_RETRYABLE),
    ("aiohttp.ServerTimeoutError", aiohttp.ServerTimeoutError("slow"), RETRYABLE),
    ("aiohttp.ConnectionTimeoutError", aiohttp.ConnectionTimeoutError("slow"), RETRYABLE),
    ("aiohttp.ClientConnectorError", aiohttp.ClientConnectorError(
        _connection_key, ConnectionRefusedError(111, "refused")), RETRYABLE),
    ("aiohttp.ServerDisconnectedError", aiohttp.ServerDisconnectedError(), RETRYABLE),
    ("aiohttp.ClientSSLError", aiohttp.ClientSSLError(_connection_key, OSError(1, "tls")),
     NON_RETRYABLE),
    ("aiohttp.InvalidURL", aiohttp.InvalidURL("bad"), NON_RETRYABLE),
    ("aiohttp.ClientPayloadError", aiohttp.ClientPayloadError("bad"), NON_RETRYABLE),
]


@pytest.mark.parametrize(("error", "expected"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_real_http_client_exceptions(error: BaseException, expected: FailureKind) -> None:
    assert default_failure_classifier(error) is expected


STATUS_CASES = [
    (408, RETRYABLE), (409, RETRYABLE), (429, RETRYABLE), (500, RETRYABLE),
    (502, RETRYABLE), (503, RETRYABLE), (599, RETRYABLE),
    (400, NON_RETRYABLE), (401, NON_RETRYABLE), (403, NON_RETRYABLE), (404, NON_RETRYABLE),
    (422, NON_RETRYABLE), (499, NON_RETRYABLE),
]
FACTORIES = {"httpx": _httpx_status, "requests": _requests_status,
             "aiohttp": _aiohttp_status, "urllib": _urllib_status}


@pytest.mark.parametrize("library", sorted(FACTORIES))
@pytest.mark.parametrize(("code", "expected"), STATUS_CASES)
def test_http_status_errors_of_every_library(
    library: str, code: int, expected: FailureKind
) -> None:
    assert default_failure_classifier(FACTORIES[library](code)) is expected


def test_refused_urllib_connection_on_localhost_is_retryable() -> None:
    url = f"http://127.0.0.1:{closed_port()}/"
    with pytest.raises(urllib.error.URLError) as caught:
        urllib.request.urlopen(url, timeout=5)
    assert isinstance(caught.value.reason, ConnectionRefusedError)
    assert default_failure_classifier(caught.value) is RETRYABLE


def test_refused_httpx_connection_on_localhost_is_retryable() -> None:
    url = f"http://127.0.0.1:{closed_port()}/"
    with pytest.raises(httpx.ConnectError) as caught:
        httpx.get(url, timeout=5)
    assert default_failure_classifier(caught.value) is RETRYABLE


def test_refused_requests_connection_on_localhost_is_retryable() -> None:
    url = f"http://127.0.0.1:{closed_port()}/"
    with pytest.raises(requests.exceptions.ConnectionError) as caught:
        requests.get(url, timeout=5)
    assert default_failure_classifier(caught.value) is RETRYABLE


# --- fail closed ------------------------------------------------------------------


class _Status(Exception):
    def __init__(self, **attributes: object) -> None:
        super().__init__("status")
        for name, value in attributes.items():
            setattr(self, name, value)


class _Response:
    def __init__(self, status_code: object) -> None:
        self.status_code = status_code

    def __repr__(self) -> str:  # a test id: the same in every xdist worker (no address)
        return f"_Response({self.status_code!r})"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (_Status(status_code=503), RETRYABLE),
        (_Status(status=429), RETRYABLE),
        (_Status(response=_Response(500)), RETRYABLE),
        (_Status(status_code=http.HTTPStatus.SERVICE_UNAVAILABLE), RETRYABLE),
        (_Status(status_code=True), NON_RETRYABLE),  # a bool is not a status
        (_Status(status_code="503"), NON_RETRYABLE),
        (_Status(status_code=503.0), NON_RETRYABLE),
        (_Status(status_code=200), NON_RETRYABLE),
        (_Status(status_code=700), NON_RETRYABLE),
        (_Status(status_code=None, status=502), RETRYABLE),  # first *int* attribute
        (_Status(status_code=404, status=503), NON_RETRYABLE),  # status_code first
        (_Status(response=_Response(True)), NON_RETRYABLE),
    ],
    ids=lambda value: repr(getattr(value, "__dict__", value)),
)
def test_status_attributes(error: BaseException, expected: FailureKind) -> None:
    assert default_failure_classifier(error) is expected


class _RaisingStatus(ConnectionError):
    @property
    def status_code(self) -> int:
        raise RuntimeError("cannot read")


class _RaisingResponse(Exception):
    @property
    def response(self) -> object:
        raise RuntimeError("cannot read")


class _RaisingReason(urllib.error.URLError):
    def __init__(self) -> None:
        Exception.__init__(self, "x")

    def __getattribute__(self, name: str) -> object:
        if name == "reason":
            raise RuntimeError("cannot read")
        return super().__getattribute__(name)


@pytest.mark.parametrize("error", [_RaisingStatus(), _RaisingResponse(), _RaisingReason()],
                         ids=["status_code", "response", "reason"])
def test_an_attribute_that_raises_is_non_retryable(error: BaseException) -> None:
    assert default_failure_classifier(error) is NON_RETRYABLE


def test_retryable_attribute_beats_the_table_and_the_status() -> None:
    error = httpx.ConnectError("refused")
    error.retryable = False  # type: ignore[attr-defined]
    assert default_failure_classifier(error) is NON_RETRYABLE
    status = _httpx_status(400)
    status.retryable = True  # type: ignore[attr-defined]
    assert default_failure_classifier(status) is RETRYABLE


def test_the_table_beats_the_builtin_rule_for_a_library_subclass() -> None:
    # requests.SSLError subclasses requests' ConnectionError (RETRYABLE): its own row wins.
    assert default_failure_classifier(requests.exceptions.SSLError("x")) is NON_RETRYABLE


def test_a_lookalike_class_name_in_another_module_is_unknown() -> None:
    class TimeoutException(Exception):
        pass

    assert default_failure_classifier(TimeoutException()) is NON_RETRYABLE


def test_the_table_names_only_importable_classes() -> None:
    import importlib

    for dotted, rule in HTTP_CLIENT_ERRORS.items():
        module_name, _, name = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module_name), name)
        assert isinstance(cls, type) and issubclass(cls, BaseException), dotted
        assert f"{cls.__module__}.{cls.__qualname__}" == dotted
        assert isinstance(rule, HttpClientRule)
