"""The package's exceptions, split by who is at fault.

*Local* errors mean the caller misused the API (bad configuration, a malformed
scenario, advancing a finished run): they are raised. *Remote* errors mean an
agent or the gatekeeper broke the protocol: :class:`PayloadError` is raised by
the parsers, but the state machine always turns it into a node status with a
reason, never an exception for the user.

:class:`ToolBlockedError` and :class:`NonRetryableError` are for effect
implementations to raise, so the default classifier (spec §6.7) knows them.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DiagnosisError",
    "JournalError",
    "LedgerError",
    "MachineError",
    "NonRetryableError",
    "PayloadError",
    "RunOptionsError",
    "ScenarioError",
    "ToolBlockedError",
]


class DiagnosisError(Exception):
    """Base class of every exception this package raises on purpose."""


class ConfigError(DiagnosisError, ValueError):
    """A configuration value is out of range; the message names field and range."""


class PayloadError(DiagnosisError, ValueError):
    """An agent or gatekeeper payload broke the wire protocol (spec §5).

    ``path`` locates the offending value (``claims[3].bindings[0].raw_path``,
    empty for the document itself) and ``problem`` says what is wrong with it
    (``missing``, ``expected a string`` …). ``str(error)`` is
    ``"<path>: <problem>"``, the reason recorded on ``INVALID_OUTPUT``.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path or '$'}: {problem}")

    def __reduce__(self) -> tuple[type[PayloadError], tuple[str, str]]:
        # Rebuilt from its two fields (``args`` holds the joined message).
        return type(self), (self.path, self.problem)

    @property
    def reason(self) -> str:
        """The readable reason, identical to ``str(error)``."""
        return str(self)


class ScenarioError(DiagnosisError, ValueError):
    """A replay scenario (spec §9) is malformed; the message names the path."""


class JournalError(DiagnosisError, ValueError):
    """A run journal (spec §12) is malformed, tampered with, or diverges from the run.

    The message names the first bad place (``entries[3].outcome: expected
    "text" or "error"``, ``entries[3]: the run expects verifier round 1
    attempt 2, the journal has composer``).
    """


class RunOptionsError(DiagnosisError, ValueError, TypeError):
    """A driver's options do not go together (spec §12, §14): refused before anything runs.

    ``state=`` with ``journal=``/``sink=`` (a journaling run starts from its
    request or its journal), or ``key=``/``tools=`` without them (they record
    a journal; ignoring them would fail open). One error for both workflows'
    drivers; a ``ValueError``, and a ``TypeError`` too, which the AIOps
    drivers raised for the same misuse before.
    """


class MachineError(DiagnosisError, RuntimeError):
    """The state machine was misused by its driver.

    For example: advancing a finished run, or feeding a result that does not
    answer the pending action.
    """


class LedgerError(DiagnosisError, ValueError):
    """A tool-invocation ledger is malformed (for example a duplicate id)."""


class ToolBlockedError(DiagnosisError):
    """Raised by an executor effect when a tool call was blocked by policy.

    Classified ``TOOL_BLOCKED`` and reported as ``EXECUTOR_TOOL_BLOCKED``.
    """


class NonRetryableError(DiagnosisError):
    """Raised by an effect to say explicitly that retrying cannot help."""
