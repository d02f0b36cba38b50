"""Failure classification of exceptions raised by effects (spec §6.7).

A wrong "retryable" can repeat a side effect, a wrong "non-retryable" only
costs an answer, so every doubt resolves to ``NON_RETRYABLE`` (fail closed).
The default classifier applies these rules, first match wins:

1. the package's :class:`ToolBlockedError` → ``TOOL_BLOCKED`` and its
   :class:`NonRetryableError` → ``NON_RETRYABLE``: an explicit package type is
   the effect's own statement and beats any ``retryable`` attribute it carries;
2. an exception that has a ``retryable`` attribute: truthy → ``RETRYABLE``,
   falsy → ``NON_RETRYABLE`` (this beats every later rule, so a
   ``TimeoutError`` marked ``retryable = False`` is not retried); if reading
   the attribute or taking its truth value raises, → ``NON_RETRYABLE``;
3. the HTTP client table :data:`HTTP_CLIENT_ERRORS` below, matched on the
   module and qualified name of each class of the exception's MRO, most
   specific first, so a library's own subclass entry beats its parent's
   (``requests.exceptions.SSLError`` before ``ConnectionError``). The
   libraries are never imported: the table is names only;
4. an HTTP status carried by the exception — the first of ``status_code``,
   ``status`` and ``response.status_code`` that is an ``int`` (not a
   ``bool``) from 100 to 599: 408, 409, 429 and 5xx → ``RETRYABLE``, any
   other 4xx → ``NON_RETRYABLE``; other statuses fall through;
5. ``TimeoutError`` (``asyncio.TimeoutError`` and ``socket.timeout`` are the
   same class since 3.11) and ``ConnectionError`` → ``RETRYABLE``;
6. everything else → ``NON_RETRYABLE``.

Reading any attribute (a class's ``__mro__``/``__module__``/``__qualname__``,
``reason``, ``status_code``, ``status``, ``response``) that raises gives
``NON_RETRYABLE``: an exception we cannot inspect is an exception we do not
know.

The table (rule 3). ``REASON`` means "classify the wrapped ``reason``": a
``reason`` that is a ``TimeoutError`` or ``ConnectionError`` instance, or
that the table calls ``RETRYABLE``, → ``RETRYABLE``; otherwise the later
rules go on with the outer exception (so ``urllib.error.HTTPError``, whose
``reason`` is a string, is decided by its ``status``).

==============================================  ===============  ========================
exception class (any subclass)                  kind             why
==============================================  ===============  ========================
``httpx.TimeoutException``                      RETRYABLE        connect/read/write/pool
``httpx.NetworkError``                          RETRYABLE        connect/read/write/close
``requests.exceptions.SSLError``                NON_RETRYABLE    TLS setup, not transient
``requests.exceptions.ProxyError``              NON_RETRYABLE    proxy configuration
``requests.exceptions.Timeout``                 RETRYABLE        connect and read timeouts
``requests.exceptions.ConnectionError``         RETRYABLE        refused, reset, DNS
``urllib3.exceptions.TimeoutError``             RETRYABLE        incl. NewConnectionError
``urllib3.exceptions.MaxRetryError``            REASON           the last attempt's error
``urllib.error.URLError``                       REASON           e.g. a refused connection
``aiohttp.client_exceptions.ClientSSLError``    NON_RETRYABLE    TLS setup, not transient
``aiohttp.client_exceptions.ServerTimeoutError``  RETRYABLE      connect and socket reads
``aiohttp.client_exceptions.ClientConnectorError``  RETRYABLE    refused, DNS
``aiohttp.client_exceptions.ServerDisconnectedError``  RETRYABLE  dropped connection
==============================================  ===============  ========================

HTTP status errors (``httpx.HTTPStatusError``, ``requests.exceptions.HTTPError``,
``aiohttp.ClientResponseError``, ``urllib.error.HTTPError``) are not in the
table: rule 4 reads their status. Everything else of those libraries
(protocol errors, invalid URLs, decoding errors, too many redirects) is
unknown and ``NON_RETRYABLE``.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Mapping
from typing import Final, Protocol

from ..enums import FailureKind
from ..errors import NonRetryableError, ToolBlockedError

__all__ = [
    "HTTP_CLIENT_ERRORS",
    "FailureClassifier",
    "HttpClientRule",
    "classify_failure",
    "default_failure_classifier",
]

_ABSENT = object()


class HttpClientRule(enum.Enum):
    """What a row of :data:`HTTP_CLIENT_ERRORS` says about an exception class."""

    RETRYABLE = "RETRYABLE"
    NON_RETRYABLE = "NON_RETRYABLE"
    REASON = "REASON"
    """Classify the exception's ``reason`` attribute (the error it wraps)."""


_R, _N, _W = HttpClientRule.RETRYABLE, HttpClientRule.NON_RETRYABLE, HttpClientRule.REASON

HTTP_CLIENT_ERRORS: Final[Mapping[str, HttpClientRule]] = {
    "httpx.TimeoutException": _R,
    "httpx.NetworkError": _R,
    "requests.exceptions.SSLError": _N,
    "requests.exceptions.ProxyError": _N,
    "requests.exceptions.Timeout": _R,
    "requests.exceptions.ConnectionError": _R,
    "urllib3.exceptions.TimeoutError": _R,
    "urllib3.exceptions.MaxRetryError": _W,
    "urllib.error.URLError": _W,
    "aiohttp.client_exceptions.ClientSSLError": _N,
    "aiohttp.client_exceptions.ServerTimeoutError": _R,
    "aiohttp.client_exceptions.ClientConnectorError": _R,
    "aiohttp.client_exceptions.ServerDisconnectedError": _R,
}
"""Rule 3 of the module docstring: ``module.QualifiedName`` of a class → rule."""

_RETRYABLE_STATUSES: Final = frozenset({408, 409, 429})


class FailureClassifier(Protocol):
    """Maps an exception raised by an effect to a :class:`FailureKind` (spec §2, §6.7)."""

    def __call__(self, error: BaseException) -> FailureKind:
        """Classify ``error``; raising is allowed and means ``NON_RETRYABLE``."""
        ...


def _retryable_flag(error: BaseException) -> FailureKind | None:
    """Rule 2: the kind a ``retryable`` attribute dictates, or None when it has none.

    The attribute is first looked up statically, so a property that raises
    ``AttributeError`` counts as present (and unreadable), not as absent.
    """
    try:
        present = inspect.getattr_static(error, "retryable", _ABSENT) is not _ABSENT
        if present:
            value = getattr(error, "retryable")  # noqa: B009 - a property may raise
        else:
            try:
                # ``__getattr__`` hooks are invisible to the static lookup.
                value = getattr(error, "retryable")  # noqa: B009
            except AttributeError:
                return None
        return FailureKind.RETRYABLE if bool(value) else FailureKind.NON_RETRYABLE
    except Exception:
        return FailureKind.NON_RETRYABLE


def default_failure_classifier(error: BaseException) -> FailureKind:
    """The default classifier of spec §6.7; the rule order is in the module docstring.

    Guarantee: an exception it does not know is never ``RETRYABLE``, and it
    never raises.
    """
    if isinstance(error, ToolBlockedError):
        return FailureKind.TOOL_BLOCKED
    if isinstance(error, NonRetryableError):
        return FailureKind.NON_RETRYABLE
    flagged = _retryable_flag(error)
    if flagged is not None:
        return flagged
    try:
        listed = _table_kind(error)
        if listed is not None:
            return listed
        status = _http_status(error)
    except Exception:
        return FailureKind.NON_RETRYABLE
    if status is not None:
        if status in _RETRYABLE_STATUSES or 500 <= status <= 599:
            return FailureKind.RETRYABLE
        if 400 <= status <= 499:
            return FailureKind.NON_RETRYABLE
    # The real type: ``isinstance`` believes a ``__class__`` attribute that lies.
    if issubclass(type(error), TimeoutError | ConnectionError):
        return FailureKind.RETRYABLE
    return FailureKind.NON_RETRYABLE


def _table_rule(error: BaseException) -> HttpClientRule | None:
    """The first row of the table naming a class of ``error``'s real MRO."""
    for cls in type(error).__mro__:
        module = cls.__dict__.get("__module__")
        name = cls.__dict__.get("__qualname__", cls.__name__)
        if isinstance(module, str) and isinstance(name, str):
            rule = HTTP_CLIENT_ERRORS.get(f"{module}.{name}")
            if rule is not None:
                return rule
    return None


def _table_kind(error: BaseException) -> FailureKind | None:
    """Rule 3; raises when an attribute it needs cannot be read."""
    rule = _table_rule(error)
    if rule is HttpClientRule.RETRYABLE:
        return FailureKind.RETRYABLE
    if rule is HttpClientRule.NON_RETRYABLE:
        return FailureKind.NON_RETRYABLE
    if rule is HttpClientRule.REASON:
        reason = getattr(error, "reason", None)
        if isinstance(reason, BaseException) and (
            issubclass(type(reason), TimeoutError | ConnectionError)
            or _table_rule(reason) is HttpClientRule.RETRYABLE
        ):
            return FailureKind.RETRYABLE
    return None


def _int_status(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        status = int.__int__(value)  # an IntEnum (``http.HTTPStatus``) is fine
        if 100 <= status <= 599:
            return status
    return None


def _http_status(error: BaseException) -> int | None:
    """Rule 4's status, or None; raises when an attribute cannot be read."""
    for name in ("status_code", "status"):
        status = _int_status(getattr(error, name, None))
        if status is not None:
            return status
    response = getattr(error, "response", None)
    if response is None:
        return None
    return _int_status(getattr(response, "status_code", None))


def classify_failure(classifier: FailureClassifier, error: BaseException) -> FailureKind:
    """Run an injected classifier, failing closed on its own misbehaviour (spec §6.7).

    A classifier that raises an ``Exception`` or returns anything but a
    :class:`FailureKind` member (a plain string included) yields
    ``NON_RETRYABLE``. A ``BaseException`` that is not an ``Exception``
    (``KeyboardInterrupt``, ``SystemExit``) propagates: it is the host's
    business, not a classification.
    """
    try:
        kind = classifier(error)
    except Exception:
        return FailureKind.NON_RETRYABLE
    if type(kind) is FailureKind:  # exact: ``__class__`` can be faked for isinstance
        return kind
    return FailureKind.NON_RETRYABLE
