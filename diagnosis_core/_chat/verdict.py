"""The verdict ceiling (spec §6.3).

The gatekeeper bounds what the verifier may conclude: a model ``PASS`` over
evidence the gatekeeper only half-trusted is at most ``LOW_CONFID``. The
verifier's execution status, its model verdict and the effective verdict are
kept as three separate fields; a technical failure never invents a verdict.
"""

from __future__ import annotations

from .enums import AnswerMode, GatekeeperStatus, Verdict

__all__ = ["answer_mode_for", "apply_verdict_ceiling", "verdict_ceiling"]

_CEILING = {
    GatekeeperStatus.PASS: Verdict.PASS,
    GatekeeperStatus.LOW_CONFID: Verdict.LOW_CONFID,
    GatekeeperStatus.REJECT: Verdict.REJECT,
}

_ANSWER_MODE = {
    Verdict.PASS: AnswerMode.NORMAL,
    Verdict.LOW_CONFID: AnswerMode.LOW_CONFIDENCE,
    Verdict.REJECT: AnswerMode.DEGRADED,
}


def verdict_ceiling(gatekeeper_status: GatekeeperStatus) -> Verdict:
    """The highest verdict the gatekeeper's status allows.

    ``PASS`` → ``PASS``, ``LOW_CONFID`` → ``LOW_CONFID``; a ``REJECT`` run
    never reaches the verifier, and its ceiling would be ``REJECT``.
    """
    return _CEILING[gatekeeper_status]


def apply_verdict_ceiling(model_verdict: Verdict, ceiling: Verdict) -> Verdict:
    """``min(model_verdict, ceiling)`` in the order ``REJECT < LOW_CONFID < PASS``.

    Guarantee: the result is never above either argument.
    """
    return model_verdict if model_verdict.rank <= ceiling.rank else ceiling


def answer_mode_for(effective_verdict: Verdict) -> AnswerMode:
    """How the composer presents the answer, from the effective verdict (spec §3)."""
    return _ANSWER_MODE[effective_verdict]
