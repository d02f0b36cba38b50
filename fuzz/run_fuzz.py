"""Fuzz every parser of diagnosis_core with generated inputs.

    python fuzz/run_fuzz.py                      # 1 000 000 inputs on 2 processes
    python fuzz/run_fuzz.py --inputs 200000 --processes 4 --seed 7
    python fuzz/run_fuzz.py --progress 50000       # a line per 50 000 inputs per worker

Targets: the four agent parsers (``parse_planner_plan``,
``parse_executor_evidence``, ``parse_verifier_output``,
``parse_composer_output``), ``parse_gatekeeper_result`` /
``normalize_gatekeeper_result``, ``load_scenario`` (and a replay of every
scenario that loads), and the reference gatekeeper (``ledger_from_records``,
``ReferenceGatekeeper``, ``parse_raw_path`` / ``resolve_raw_path`` /
``match_excerpt``).

Inputs are generated fast and without Hypothesis: random edits and splices of
valid payload texts (the spec's examples and ``examples/*.json``), random
bytes decoded as UTF-8 (with replacement or surrogate escapes) or Latin-1,
random JSON documents, and structural mutations of valid documents (a key
removed, a value replaced by one of another type). Hostile shapes (spec §15):

* gatekeeper values from ``diagnosis_core.testing.hostile_gatekeeper_factories``
  (``dict`` subclasses whose ``get``/``items``/... raise, cycles, lying
  strings …), given to the parsers and returned by the gatekeeper of a run;
* requests whose history and skills are host subclasses with extra fields
  holding a secret (``host_subclassed``): the secret must reach no agent input;
* large texts (about 1 MB, one in every ``LARGE_EVERY`` inputs) for every agent
  parser, valid up to a ``NaN``, a duplicate key or a lone surrogate (escaped
  or raw) at the end, or a ``NaN`` after hundreds of open arrays: each must be
  rejected with a ``PayloadError`` naming that problem;
* many bindings citing one large ledger output (the reference gatekeeper):
  each binding's verdict is known in advance.

The only exceptions allowed are the package's own: ``PayloadError`` from the
parsers, ``ScenarioError`` from ``load_scenario`` and ``LedgerError`` from
``ledger_from_records``; ``normalize_gatekeeper_result``, ``replay`` of a
loaded scenario, a run with a hostile gatekeeper and the reference gatekeeper
may raise nothing at all. Any other exception, or a broken check above, is
printed with its input and the exit status is 1.

Runs are reproducible: worker ``k`` uses ``random.Random(seed + k)``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import multiprocessing
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

import diagnosis_core as dc
import diagnosis_core.protocol as dcp
import diagnosis_core.tools as dct
from diagnosis_core._chat.gatekeeper import normalize_gatekeeper_result
from diagnosis_core._chat.reference_gatekeeper import match_excerpt, resolve_raw_path
from diagnosis_core.testing import hostile_gatekeeper_factories
from diagnosis_core.testing._values import host_subclassed

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CATALOG = ["payment-timeout", "redis-latency", "db-pool-exhaustion"]
RUN_ID = "run-fuzz"
LEDGER_KEYS = ("invocation_id", "tool_name", "success", "output")
LARGE_EVERY = 1000  # one large (~1 MB) text per this many inputs
LARGE_SIZE = 1_000_000
SECRET = "HOST-SUBCLASS-SECRET-\u2af7"
HOSTILE = hostile_gatekeeper_factories()

SPEC_PLANNER = (
    '{"steps": [{"step_id": "s1", "goal": "check gateway timeout logs", "tools": ["query_logs"]}],'
    ' "selected_skill": "payment-timeout"}'
)
SPEC_EXECUTOR = """{"schema_version": "executor_evidence_v2",
 "evidence_status": "evidence_found",
 "claims": [
   {"claim_id": "c1", "text": "Gateway calls to pay-svc time out after 3000 ms",
    "is_critical": true,
    "bindings": [{"source_invocation_id": "inv-7", "tool_name": "query_logs",
                  "raw_path": "$.items[0].message",
                  "evidence_excerpt": "upstream timeout after 3000ms"}]}],
 "hypotheses": [{"text": "connection pool exhausted", "missing_evidence": "pool metrics"}],
 "tool_trace_summary": [{"invocation_id": "inv-7", "tool_name": "query_logs", "success": true}]}"""
SPEC_VERIFIER = """{"verdict": "LOW_CONFID", "groundedness_score": 0.55, "critical_fact_count": 1,
 "facts_checked": [{"claim_id": "c1", "fact": "timeouts after 3000 ms",
                    "is_critical": true, "verification": "indirect_support"}],
 "allowed_claim_ids": ["c1"], "missing_info": ["pay-svc connection pool metrics"],
 "recommended_actions": ["check pool size of pay-svc"], "rationale": "…"}"""
SPEC_COMPOSER = '{"answer": "…markdown…", "cited_claim_ids": ["c1"]}'
SPEC_GATEKEEPER = {
    "status": "fail", "level": "low_confid", "reason_codes": ["EXCERPT_MISMATCH"],
    "checked_bindings": [{"claim_id": "c1", "source_invocation_id": "inv-7",
                          "tool_name": "query_logs", "raw_path": "$.items[0].message",
                          "status": "pass", "matched_text": "upstream timeout after 3000ms",
                          "reason": None}],
}

TOKENS = (
    "{", "}", "[", "]", '"', ",", ":", "null", "true", "false", "0", "-0", "1.0", "1e400",
    "-1e400", "NaN", "Infinity", '"\\ud800"', "\\ud800", "\\udc00", "\\u0000", "\\", "```",
    "```json\n", "\n```", "~~~", "````", " ", "\t", "\n", "\r\n", "\u2028", "\u00a0", "\ud800",
    "\udfff", "é", "漢", "😀", "\x00", '"claims"', '"bindings"', '"status"', '"pass"', '"fail"',
    '"level"', '"low_confid"', '"reject"', '"$.a[0]"', '"$[\'a b\']"', '"steps"', '"verdict"',
    '"PASS"', '"answer"', '"schema_version"', '"executor_evidence_v2"', '"responses"',
    '"gatekeeper"', '"tool_ledger"', '"config"', '"error"', '"kind"', '"text"', "[[[[[[[[",
    "]]]]]]]]", '{"a":{"a":{"a":', "12345678901234567890123", "0.5", "2", "-1",
)

# --- corpus ---------------------------------------------------------------------------


def _load_examples() -> list[dict[str, Any]]:
    return [json.loads(path.read_text("utf-8")) for path in sorted(EXAMPLES.glob("*.json"))]


def build_corpus() -> dict[str, list[Any]]:
    """Valid inputs of every target, from the spec and the example scenarios."""
    scenarios = _load_examples()
    corpus: dict[str, list[Any]] = {
        "planner": [SPEC_PLANNER], "executor": [SPEC_EXECUTOR], "verifier": [SPEC_VERIFIER],
        "composer": [SPEC_COMPOSER], "gatekeeper": [SPEC_GATEKEEPER], "scenario": scenarios,
        "ledger": [],
    }
    for scenario in scenarios:
        responses = scenario.get("responses", {})
        for agent in ("planner", "executor", "verifier", "composer"):
            corpus[agent] += [e["text"] for e in responses.get(agent, []) if "text" in e]
        scripted = scenario.get("gatekeeper", [])
        corpus["gatekeeper"] += [entry["result"] for entry in scripted if "result" in entry]
        if "tool_ledger" in scenario:
            # The records of ``ledger_from_records``: a scenario's audit fields stripped.
            corpus["ledger"].append([
                {key: value for key, value in entry.items() if key in LEDGER_KEYS}
                for entry in scenario["tool_ledger"]
            ])
    evidence = parsed_evidence(corpus["executor"])
    for ledger in corpus["ledger"]:
        gatekeeper = dc.ReferenceGatekeeper(dct.ledger_from_records(ledger))
        corpus["gatekeeper"] += [gatekeeper(RUN_ID, item) for item in evidence]
    corpus["gatekeeper_text"] = [json.dumps(value) for value in corpus["gatekeeper"]]
    corpus["scenario_text"] = [json.dumps(value, ensure_ascii=False) for value in scenarios]
    corpus["ledger_text"] = [json.dumps(value) for value in corpus["ledger"]]
    return corpus


def parsed_evidence(texts: list[str]) -> list[dc.ExecutorEvidence]:
    """The executor texts that are valid (some examples script invalid ones on purpose)."""
    found = []
    for text in texts:
        with contextlib.suppress(dc.PayloadError):
            found.append(dcp.parse_executor_evidence(text))
    return found


# --- generators -----------------------------------------------------------------------


def random_text(rng: random.Random, size: int) -> str:
    """Random code points, surrogates and controls included."""
    pick = rng.random
    chars = []
    for _ in range(size):
        roll = pick()
        if roll < 0.6:
            chars.append(chr(rng.randint(0x20, 0x7E)))
        elif roll < 0.8:
            chars.append(chr(rng.randint(0, 0x3000)))
        elif roll < 0.95:
            chars.append(chr(rng.randint(0, 0x10FFFF)))
        else:
            chars.append(chr(rng.randint(0xD800, 0xDFFF)))
    return "".join(chars)


def random_json(rng: random.Random, budget: int = 12) -> Any:
    """A random JSON-compatible value (sometimes with non-finite floats)."""
    roll = rng.random()
    if budget <= 0 or roll < 0.45:
        kind = rng.randrange(8)
        if kind == 0:
            return None
        if kind == 1:
            return rng.random() < 0.5
        if kind == 2:
            return rng.randint(-(10**20), 10**20)
        if kind == 3:
            return rng.choice([0.0, -0.0, 1.5, 1e308, float("nan"), float("inf"), 0.55])
        if kind == 4:
            return rng.choice(["pass", "fail", "low_confid", "reject", "PASS", "c1", "$.a"])
        return random_text(rng, rng.randint(0, 12))
    if roll < 0.7:
        return [random_json(rng, budget // 2) for _ in range(rng.randint(0, 4))]
    keys = ["status", "level", "checked_bindings", "claim_id", "text", "steps", "claims",
            "bindings", "verdict", "answer", "question", "responses", "run", "result"]
    return {
        (rng.choice(keys) if rng.random() < 0.6 else random_text(rng, rng.randint(0, 6))):
        random_json(rng, budget // 2)
        for _ in range(rng.randint(0, 5))
    }


def mutate_text(rng: random.Random, text: str, corpus: list[str]) -> str:
    """A few random edits: delete, insert a token or junk, replace, duplicate, splice, swap."""
    for _ in range(rng.randint(1, 6)):
        size = len(text)
        at = rng.randint(0, size)
        op = rng.randrange(9)
        if op == 0:
            text = text[:at] + text[at + rng.randint(1, 16):]
        elif op in (1, 2):
            text = text[:at] + rng.choice(TOKENS) + text[at:]
        elif op == 3:
            text = text[:at] + random_text(rng, rng.randint(1, 4)) + text[at + 1:]
        elif op == 4:
            end = min(size, at + rng.randint(1, 40))
            text = text[:end] + text[at:end] + text[end:]
        elif op == 5:
            other = rng.choice(corpus)
            start = rng.randint(0, len(other))
            text = text[:at] + other[start:start + rng.randint(1, 60)] + text[at:]
        elif op == 6:
            text = text[:at]
        elif op == 7 and size > 2:
            first, second = sorted(rng.sample(range(size), 2))
            text = text[:first] + text[second:] + text[first:second]
        else:
            text = text[:at] + random_text(rng, rng.randint(1, 8)) + text[at:]
    return text


def mutate_value(rng: random.Random, value: Any) -> Any:
    """A deep copy of ``value`` with a few containers changed (delete, replace, insert)."""
    value = copy.deepcopy(value)
    for _ in range(rng.randint(1, 4)):
        containers: list[Any] = []
        stack = [value]
        while stack:
            node = stack.pop()
            if isinstance(node, dict | list):
                containers.append(node)
                stack.extend(node.values() if isinstance(node, dict) else node)
        if not containers:
            return random_json(rng)
        node = rng.choice(containers)
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        op = rng.randrange(4)
        if keys and op == 0:
            del node[rng.choice(keys)]
        elif keys and op == 1:
            node[rng.choice(keys)] = random_json(rng, 4)
        elif isinstance(node, dict):
            node[rng.choice(["status", "x", "claims", "level", "", random_text(rng, 3)])] = (
                random_json(rng, 4)
            )
        else:
            node.insert(rng.randint(0, len(node)), random_json(rng, 4))
    return value


def random_bytes_text(rng: random.Random) -> str:
    data = rng.randbytes(rng.randint(0, 80))
    mode = rng.randrange(3)
    if mode == 0:
        return data.decode("utf-8", "replace")
    if mode == 1:
        return data.decode("utf-8", "surrogateescape")
    return data.decode("latin-1")


def text_input(rng: random.Random, corpus: list[str], everything: list[str]) -> str:
    roll = rng.random()
    if roll < 0.7:
        return mutate_text(rng, rng.choice(corpus), everything)
    if roll < 0.8:
        return random_bytes_text(rng)
    if roll < 0.9:
        try:
            return json.dumps(random_json(rng), ensure_ascii=rng.random() < 0.5)
        except (ValueError, TypeError):
            return "{}"
    try:
        base = json.loads(rng.choice(corpus)) if rng.random() < 0.5 else {}
        return json.dumps(mutate_value(rng, base))
    except (ValueError, TypeError):  # a corpus text that is not bare JSON, or NaN
        return "[]"


def value_input(rng: random.Random, values: list[Any], texts: list[str]) -> Any:
    roll = rng.random()
    if roll < 0.45:
        return mutate_value(rng, rng.choice(values))
    if roll < 0.8:
        try:
            return json.loads(mutate_text(rng, rng.choice(texts), texts))
        except (ValueError, RecursionError):
            return mutate_value(rng, rng.choice(values))
    if roll < 0.95:
        return random_json(rng)
    return random_bytes_text(rng)


# --- large texts and large ledgers ---------------------------------------------------------

# (tail appended inside the top-level object, words the PayloadError must hold)
LARGE_PROBLEMS = (
    (', "zz_extra": NaN', "is not a JSON number"),
    (', "zz_extra": [1, 2, -Infinity]', "is not a JSON number"),
    (', "zz_extra": "end \\ud800"', "unpaired surrogate"),
    (', "zz_extra": "end \\udc00\\ud800"', "unpaired surrogate"),
    (', "zz_extra": "end \udfff"', "unpaired surrogate"),
    (', "zz_extra": {"k\\ud800": 1}', "unpaired surrogate"),
    (', "zz_extra": {"k": 1, "k": 2}', "duplicate key"),
    (', "zz_extra": 1e999', "out of range"),
)


def large_text(rng: random.Random, base: str, size: int) -> tuple[str, str]:
    """``base`` (a valid payload object) grown to about ``size`` characters with a
    padding key, and one problem at its very end; also the words its error must hold."""
    document = json.loads(base)
    element = rng.choice([
        {"text": "ok \u00e9 \u6f22", "n": 1, "f": 0.5, "b": [True, None]},
        "a plain ASCII string of some length",
        [1, 2.5, "x", {"k": "v"}],
        rng.randint(0, 10**9),
    ])
    unit = len(json.dumps(element, ensure_ascii=False)) + 1
    document["pad"] = [element] * max(1, size // unit)
    text = json.dumps(document, ensure_ascii=rng.random() < 0.5)
    roll = rng.random()
    if roll < 0.15:  # a NaN after many open arrays (and ASCII numbers only)
        depth = rng.randint(100, 900)
        body = "0," * max(1, (size - 2 * depth) // 2)
        return "[" * depth + body + "NaN" + "]" * depth, "is not a JSON number"
    if roll < 0.3:  # the document's first key again, at the end
        first = next(iter(document))
        return text[:-1] + f', "{first}": null}}', "duplicate key"
    tail, words = rng.choice(LARGE_PROBLEMS)
    return text[:-1] + tail + "}", words


def large_ledger_case(
    rng: random.Random,
) -> tuple[dc.ToolLedger, dc.ExecutorEvidence, dict[str, str]]:
    """One large ledger output cited by many bindings, and each binding's status.

    The ledger output holds ``items[i].message`` for a few thousand ``i``
    (about 1 MB in all); the bindings cite it by valid paths with the exact
    message (``pass``), a wrong excerpt, a path that does not resolve, or an
    invocation id the ledger does not hold (each ``fail``).
    """
    count = rng.randint(2_000, 8_000)
    width = max(8, LARGE_SIZE // count - 30)
    messages = [f"event {index} " + "x" * rng.randint(1, width) for index in range(count)]
    output = {"items": [{"message": message} for message in messages]}
    ledger = dct.ledger_from_records([
        {"invocation_id": "inv-big", "tool_name": "query_logs", "success": True,
         "output": output},
        {"invocation_id": "inv-small", "tool_name": "query_logs", "success": True,
         "output": {"items": []}},
    ])
    claims = []
    expected: dict[str, str] = {}
    for number in range(rng.randint(50, 300)):
        index = rng.randrange(count)
        kind = rng.randrange(4)
        invocation, path, excerpt, status = "inv-big", f"$.items[{index}].message", (
            messages[index]), "pass"
        if kind == 1:
            excerpt, status = messages[index] + " not there", "fail"
        elif kind == 2:
            path, status = f"$.items[{count + index}].message", "fail"
        elif kind == 3 and rng.random() < 0.3:
            invocation, status = "inv-missing", "fail"
        claim_id = f"c{number}"
        expected[claim_id] = status
        binding = dcp.EvidenceBinding(invocation, "query_logs", path, excerpt)
        claims.append(dcp.Claim(claim_id, f"claim {number}", (binding,), rng.random() < 0.5))
    evidence = dc.ExecutorEvidence(dcp.EvidenceStatus.EVIDENCE_FOUND, tuple(claims))
    return ledger, evidence, expected


# --- targets ------------------------------------------------------------------------------


class Fuzzer:
    """One worker: generates inputs, runs targets, counts, keeps unexpected failures."""

    def __init__(self, seed: int, progress: int = 0) -> None:
        self.seed = seed
        self.progress = progress  # print a progress line every this many inputs (0: never)
        self.rng = random.Random(seed)
        self.corpus = build_corpus()
        self.all_texts = [
            text for key in ("planner", "executor", "verifier", "composer", "gatekeeper_text")
            for text in self.corpus[key]
        ]
        self.evidence = parsed_evidence(self.corpus["executor"])
        self.requests = [
            (dc.scenario_request(scenario), dc.scenario_effects(scenario))
            for scenario in map(_chat_scenario, self.corpus["scenario"]) if scenario is not None
        ]
        self.counts: Counter[str] = Counter()
        self.failures: list[str] = []
        self.large_seconds = 0.0  # the slowest large-text rejection
        self.targets: list[Callable[[], None]] = [
            self.planner, self.executor, self.verifier, self.composer,
            self.gatekeeper, self.scenario, self.reference_gatekeeper, self.raw_paths,
            self.planner, self.executor, self.verifier, self.composer, self.gatekeeper,
            self.hostile_run, self.subclassed_run,
        ]

    def fail(self, name: str, message: str, shown: object) -> None:
        """Record a broken check (not an exception)."""
        if len(self.failures) < 20:
            self.failures.append(f"{name}: {message}\ninput: {repr(shown)[:400]}")
        else:
            self.failures.append(name)

    def expect(self, name: str, call: Callable[[], object],
               allowed: tuple[type[Exception], ...],
               shown: object) -> object:
        self.counts[name] += 1
        try:
            return call()
        except allowed:
            return None
        except Exception:
            self.fail(name, traceback.format_exc(limit=3), shown)
            return None

    def _text(self, key: str) -> str:
        return text_input(self.rng, self.corpus[key], self.all_texts)

    def planner(self) -> None:
        text = self._text("planner")
        self.expect("parse_planner_plan", lambda: dcp.parse_planner_plan(text, CATALOG),
                    (dc.PayloadError,), text)

    def executor(self) -> None:
        text = self._text("executor")
        self.expect("parse_executor_evidence", lambda: dcp.parse_executor_evidence(text),
                    (dc.PayloadError,), text)

    def verifier(self) -> None:
        text = self._text("verifier")
        self.expect("parse_verifier_output", lambda: dcp.parse_verifier_output(text),
                    (dc.PayloadError,), text)

    def composer(self) -> None:
        text = self._text("composer")
        allowed = self.rng.choice([[], ["c1"], ["c1", "c2", "c3"]])
        self.expect("parse_composer_output", lambda: dcp.parse_composer_output(text, allowed),
                    (dc.PayloadError,), text)

    def gatekeeper(self) -> None:
        raw = value_input(self.rng, self.corpus["gatekeeper"], self.corpus["gatekeeper_text"])
        self.expect("parse_gatekeeper_result", lambda: dcp.parse_gatekeeper_result(raw),
                    (dc.PayloadError,), raw)
        self.expect("normalize_gatekeeper_result", lambda: normalize_gatekeeper_result(raw),
                    (), raw)
        if self.rng.random() < 0.2:
            hostile = self.rng.choice(HOSTILE)()
            self.expect("parse_gatekeeper_result", lambda: dcp.parse_gatekeeper_result(hostile),
                        (dc.PayloadError,), hostile)
            self.expect("normalize_gatekeeper_result",
                        lambda: normalize_gatekeeper_result(hostile), (), hostile)

    def hostile_run(self) -> None:
        """A whole run whose gatekeeper returns a hostile Python value (spec §15)."""
        request, effects = self.rng.choice(self.requests)
        factory = self.rng.choice(HOSTILE)
        hostile = attrs.evolve(effects, gatekeeper=lambda run_id, evidence: factory())
        self.expect("run_diagnosis_hostile_gatekeeper",
                    lambda: dc.run_diagnosis(request, hostile).result, (), factory)

    def subclassed_run(self) -> None:
        """History and skills as host subclasses: their extra fields reach no agent."""
        request, effects = self.rng.choice(self.requests)
        rng = self.rng

        def maybe(item: Any) -> Any:
            return host_subclassed(item, SECRET) if rng.random() < 0.6 else item

        hostile = attrs.evolve(request, history=tuple(map(maybe, request.history)),
                               skills=tuple(map(maybe, request.skills)))
        state = self.expect("run_diagnosis_subclassed_inputs",
                            lambda: dc.run_diagnosis(hostile, effects), (), hostile)
        if isinstance(state, dc.DiagnosisState):
            for record in state.invocations:
                if SECRET in record.input:
                    self.fail("run_diagnosis_subclassed_inputs",
                              f"a subclass field reached the {record.agent} input", hostile)

    def large_text(self) -> None:
        """A ~1 MB payload, valid up to one problem at its end, for every agent parser."""
        key = self.rng.choice(["planner", "executor", "verifier", "composer"])
        bases = [text for text in self.corpus[key] if _is_object_text(text)]
        text, words = large_text(self.rng, self.rng.choice(bases), LARGE_SIZE)
        parse: Callable[[], object] = {
            "planner": lambda: dcp.parse_planner_plan(text, CATALOG),
            "executor": lambda: dcp.parse_executor_evidence(text),
            "verifier": lambda: dcp.parse_verifier_output(text),
            "composer": lambda: dcp.parse_composer_output(text, ["c1"]),
        }[key]
        name = f"large_{key}_text"
        self.counts[name] += 1
        started = time.perf_counter()
        try:
            parse()
        except dc.PayloadError as error:
            if words not in error.problem:
                self.fail(name, f"rejected for {error}, expected {words!r}", text[-200:])
        except Exception:
            self.fail(name, traceback.format_exc(limit=3), text[-200:])
        else:
            self.fail(name, f"accepted, expected {words!r}", text[-200:])
        self.large_seconds = max(self.large_seconds, time.perf_counter() - started)

    def large_ledger(self) -> None:
        """Many bindings citing one large ledger output: each verdict as planted."""
        ledger, evidence, expected = large_ledger_case(self.rng)
        result = self.expect("ReferenceGatekeeper_large_output",
                             lambda: dc.ReferenceGatekeeper(ledger)(RUN_ID, evidence), (),
                             len(expected))
        if isinstance(result, dict):
            found = {entry["claim_id"]: entry["status"] for entry in result["checked_bindings"]}
            if found != expected:
                wrong = sorted(key for key in expected if found.get(key) != expected[key])
                self.fail("ReferenceGatekeeper_large_output",
                          f"{len(wrong)} binding verdicts differ, e.g. {wrong[:3]}",
                          len(expected))

    def scenario(self) -> None:
        document = value_input(self.rng, self.corpus["scenario"], self.corpus["scenario_text"])
        scenario = self.expect("load_scenario", lambda: dc.load_scenario(document),
                               (dc.ScenarioError,), document)
        if isinstance(scenario, dc.Scenario):
            self.expect("replay_scenario", lambda: dc.replay_scenario(scenario).result, (),
                        document)

    def reference_gatekeeper(self) -> None:
        records = value_input(self.rng, self.corpus["ledger"], self.corpus["ledger_text"])
        ledger = self.expect("ledger_from_records", lambda: dct.ledger_from_records(records),
                             (dc.LedgerError,), records)
        if not isinstance(ledger, dc.ToolLedger):
            ledger = dct.ledger_from_records(self.rng.choice(self.corpus["ledger"]))
        evidence = self.rng.choice(self.evidence)
        text = self._text("executor")
        with contextlib.suppress(dc.PayloadError):
            evidence = dcp.parse_executor_evidence(text)
        gatekeeper = dc.ReferenceGatekeeper(ledger)
        self.expect("ReferenceGatekeeper", lambda: gatekeeper(RUN_ID, evidence), (), evidence)

    def raw_paths(self) -> None:
        path = mutate_text(self.rng, self.rng.choice(["$.items[0].message", "$['a b'][3].c", "$"]),
                           ["$", ".", "[", "]", "'", "0", "a"])
        output = self.rng.choice(self.corpus["ledger"])[0]["output"]
        excerpt = self._text("composer")[:40]
        self.expect("resolve_raw_path", lambda: resolve_raw_path(output, path), (), path)
        self.expect("match_excerpt", lambda: match_excerpt(path + excerpt, excerpt), (),
                    excerpt)

    def run(self, inputs: int) -> tuple[Counter[str], list[str], float]:
        targets = self.targets
        large = (self.large_text, self.large_text, self.large_ledger)
        started = time.perf_counter()
        for index in range(inputs):
            if self.progress and index and index % self.progress == 0:
                print(f"worker {self.seed}: {index:,} inputs, {sum(self.counts.values()):,} "
                      f"target calls, {len(self.failures)} unexpected, "
                      f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
            if index % LARGE_EVERY == LARGE_EVERY - 1:
                large[(index // LARGE_EVERY) % len(large)]()
            else:
                targets[index % len(targets)]()
        return self.counts, self.failures, self.large_seconds


def _chat_scenario(document: object) -> dc.Scenario | None:
    """The chat scenario of an example (None for an AIOps one)."""
    try:
        return dc.load_scenario(document)
    except dc.ScenarioError:
        return None


def _is_object_text(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _worker(arguments: tuple[int, int, int]) -> tuple[Counter[str], list[str], float]:
    seed, inputs, progress = arguments
    try:
        return Fuzzer(seed, progress).run(inputs)
    except Exception:  # report, never hang the pool on an unpicklable exception
        return Counter(), [f"worker {seed} crashed:\n{traceback.format_exc()}"], 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=1_000_000, help="generated inputs in all")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--progress", type=int, default=0, metavar="N",
                        help="each worker prints a progress line every N inputs (to stderr)")
    options = parser.parse_args(argv)
    share, extra = divmod(options.inputs, options.processes)
    jobs = [(options.seed + k, share + (1 if k < extra else 0), options.progress)
            for k in range(options.processes)]
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(options.processes) as pool:
        results = pool.map(_worker, jobs)
    elapsed = time.perf_counter() - started
    counts: Counter[str] = Counter()
    failures: list[str] = []
    slowest = 0.0
    for worker_counts, worker_failures, worker_slowest in results:
        counts.update(worker_counts)
        failures.extend(worker_failures)
        slowest = max(slowest, worker_slowest)
    print(f"{'target':<30}{'calls':>12}")
    for name, count in sorted(counts.items()):
        print(f"{name:<30}{count:>12,}")
    print(f"{'generated inputs':<30}{options.inputs:>12,}")
    print(f"{'target calls':<30}{sum(counts.values()):>12,}")
    print(f"time {elapsed:.1f} s on {options.processes} processes "
          f"({options.inputs / elapsed:,.0f} inputs/s); slowest large-text rejection "
          f"{slowest:.2f} s; unexpected exceptions or broken checks: {len(failures)}")
    for failure in failures[:10]:
        print("-" * 60)
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
