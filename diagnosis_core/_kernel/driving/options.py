"""How a driver runs: one :class:`RunOptions` for every workflow's drivers (spec §12, §14, §16).

Its own module, apart from the driver loop (``_kernel/driving/driver.py``): a host
builds options, and ``import diagnosis_core`` exports them, long before a
run is driven, so the loop loads at the first run and not with the package.

Every driver takes :class:`RunOptions` as ``options=`` or as the same-named
keywords. The keywords are typed by one ``TypedDict`` (:class:`RunKeywords`),
parametrised by what differs between the workflows (the journal, its sink, the
observer and the tool recorder), so an option added to :class:`RunOptions` is
added to every driver's signature at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar

import attrs

from ..errors import RunOptionsError
from ..records import share_repr

if TYPE_CHECKING:
    from ..journal.codec import JournalBase
    from ..journal.fold import EntrySink
    from ..journal.mac import JournalHead
    from ..journal.store import JournalStore
    from ..tools.recorder import ToolRecorder

__all__ = [
    "DEFAULT_MAX_QUESTION_CHARS",
    "RunKeywords",
    "RunOptions",
    "merge_options",
    "question_limit",
]

DEFAULT_MAX_QUESTION_CHARS = 100_000
"""The longest question (in characters) a driver accepts unless told otherwise (spec §12.1).

About 25 000 tokens: far more than a chat question, far less than a pasted
log that would be sent to four agents and stored in every journal entry's
request. ``RunOptions(max_question_chars=…)`` changes it per run.
"""


def question_limit(value: object) -> None:
    """Refuse a question limit that is not a positive int (``RunOptionsError``)."""
    if type(value) is not int or value < 1:
        got = repr(value) if type(value) is int else type(value).__name__
        raise RunOptionsError(f"max_question_chars: expected a positive int, got {got}")


def _flag(name: str) -> Callable[[object, attrs.Attribute[bool], object], None]:
    def check(_instance: object, _attribute: attrs.Attribute[bool], value: object) -> None:
        if type(value) is not bool:  # a truthy string must not re-send an executor
            raise RunOptionsError(f"{name}: expected True or False, got {type(value).__name__}")

    return check


@attrs.frozen(kw_only=True, repr=False)
class RunOptions:
    """How a driver runs: journaling, resume, signing, tools, observer, store (spec §12, §14, §16).

    One value for both workflows' drivers, given as ``options=`` (or, as
    before, as the same-named keywords; not both). Everything a driver takes
    beyond its request, effects and ``state=``:

    * ``journal`` — resume this journal (same request; the resume rule of the
      workflow applies); ``sink`` — write the run's journal as it goes;
    * ``key`` — sign new entries, verify the resumed journal; ``head`` — refuse
      a resumed journal shorter than or diverging from it (§12.2);
    * ``tools`` — the run's :class:`ToolRecorder`: executor entries carry the
      tool calls (§12.3);
    * ``resend_gatekeeper`` / ``resend_executor`` — re-send an interrupted
      gatekeeper (read-only) / executor (tools declared replay-safe; needs
      ``tools``) call as the same attempt;
    * ``observer`` — watches the run (§14);
    * ``store`` — record the run in a :class:`JournalStore`, resuming it when
      the store holds it (§16; not with ``journal``, ``sink`` or ``state``);
    * ``max_question_chars`` — the longest question the run accepts
      (:data:`DEFAULT_MAX_QUESTION_CHARS`, 100 000 characters): a longer one is
      a :class:`PayloadError` before anything runs or is written. A driver
      option, never part of the request's wire form; AIOps requests hold no
      question.

    The flags must be booleans (``RunOptionsError`` otherwise): a truthy
    string would silently re-send an executor whose tools may have run.
    Whether the options go together is checked by the driver
    (:meth:`check`), with the same rules and errors for every workflow.
    """

    journal: JournalBase[Any, Any] | None = None
    sink: EntrySink[Any] | None = None
    key: bytes | None = None
    tools: ToolRecorder | None = None
    observer: object = None
    resend_gatekeeper: bool = attrs.field(default=False, validator=_flag("resend_gatekeeper"))
    resend_executor: bool = attrs.field(default=False, validator=_flag("resend_executor"))
    head: JournalHead | None = None
    store: JournalStore | None = None
    max_question_chars: int = attrs.field(
        default=DEFAULT_MAX_QUESTION_CHARS, validator=lambda _i, _a, value: question_limit(value)
    )

    @property
    def journaling(self) -> bool:
        """True when the run records a journal (``journal=`` or ``sink=`` given)."""
        return self.journal is not None or self.sink is not None

    def check(self, driver: str, *, state: object = None) -> None:
        """Refuse options that do not go together, before anything runs.

        Raises :class:`RunOptionsError` (a ``ValueError`` and a ``TypeError``)
        naming ``driver``: ``store=`` with ``journal=``, ``sink=`` or
        ``state=``; ``state=`` with a journal or sink; ``key=`` / ``tools=``
        without one; ``resend_executor=`` / ``head=`` without a journal to
        resume; ``resend_executor=`` without ``tools=``; ``head=`` with a
        sink but no journal. ``tools=`` that is not a tool recorder is a
        ``TypeError``.
        """
        if self.store is not None:
            for name, value in (("journal", self.journal), ("sink", self.sink), ("state", state)):
                if value is not None:
                    raise RunOptionsError(
                        f"{driver}: {name}: not with store= (the store holds the run's journal)"
                    )
        journaling = self.store is not None or self.journaling
        if journaling and state is not None:
            raise RunOptionsError(
                f"{driver}: state= cannot start a journaling run; a journaling run starts from "
                "its request or its journal (pass state= or journal=/sink=, not both)"
            )
        if not journaling and (self.key is not None or self.tools is not None):
            raise RunOptionsError(
                f"{driver}: key= and tools= record a journal; pass journal= or sink="
            )
        if self.tools is not None:
            from ..tools.recorder import ToolRecorder  # loaded only by a run that records tools

            if not isinstance(self.tools, ToolRecorder):
                raise TypeError(
                    f"{driver}: tools= must be a ToolRecorder, got {type(self.tools).__name__}"
                )
        if not journaling:
            if self.resend_executor or self.head is not None:
                raise RunOptionsError(
                    f"{driver}: resend_executor= and head= resume a journal; pass journal="
                )
            return
        if self.resend_executor and self.tools is None:
            raise RunOptionsError(
                f"{driver}: resend_executor= needs tools= (the run's ToolRecorder answers the "
                "recorded tool calls from the journal)"
            )
        if self.store is None and self.journal is None and self.head is not None:
            raise RunOptionsError(f"{driver}: head= checks a journal being resumed; pass journal=")


_DEFAULTS = RunOptions()


def merge_options(driver: str, options: RunOptions | None, **keywords: Any) -> RunOptions:
    """The run options of a driver call: ``options=``, or the loose keywords; never both.

    A keyword given with its default value is not "given". Raises
    :class:`RunOptionsError`; an unknown keyword is a ``TypeError`` naming it.
    """
    unknown = sorted(set(keywords) - set(attrs.fields_dict(RunOptions)))
    if unknown:
        raise TypeError(f"{driver}() got an unexpected keyword argument {unknown[0]!r}")
    given = sorted(
        name for name, value in keywords.items() if value is not getattr(_DEFAULTS, name)
        and value != getattr(_DEFAULTS, name)
    )
    if options is None:
        return RunOptions(**keywords)
    if not isinstance(options, RunOptions):
        raise RunOptionsError(
            f"{driver}: options= must be a RunOptions, got {type(options).__name__}"
        )
    if given:
        raise RunOptionsError(
            f"{driver}: pass the run options as options= or as keywords, not both "
            f"(got options= and {', '.join(name + '=' for name in given)})"
        )
    return options


J = TypeVar("J")
K = TypeVar("K")
O = TypeVar("O")  # noqa: E741
T = TypeVar("T")


class RunKeywords(TypedDict, Generic[J, K, O, T], total=False):
    """The run options as loose keywords (each one a :class:`RunOptions` field).

    ``J`` is the workflow's journal, ``K`` its journal sink, ``O`` its observer,
    ``T`` its tool recorder.
    """

    journal: J | None
    sink: K | None
    key: bytes | None
    resend_gatekeeper: bool
    tools: T | None
    observer: O | None
    store: JournalStore | None
    resend_executor: bool
    head: JournalHead | None
    max_question_chars: int


share_repr(RunOptions)
