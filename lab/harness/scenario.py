"""Scenario scripts: the teaching scenarios as data, run on the simulator, as real processes, or step by step.

A script (lab/sim/scenarios/*.txt) has header lines (`nodes 3`, `truncation generation`, `fsync B never`), then
steps: `step "narration"` followed by commands. The same script drives any `Driver` (SimDriver below,
lab.harness.realdriver.RealDriver for processes). See docs/scenarios.md for the command reference.
"""

from __future__ import annotations

import json
import random
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol

from lab.ports.cluster import Cluster
from lab.core.config import PRE_VOTE, node_names, pace_timing, wait_seconds
from lab.core import events as ev
from lab.core.events import (
    DISK_FULL, DISK_OK, EXPECTATION, FSYNC_FAIL, NODE_SAYS, READ_SERVED, RULE_BROKEN, Reason, Reasons, SERVED, STEP,
    TRUNCATED, WRITE_ACKED)
from lab.core.guard import DEFAULT_LIMIT, Fault
from lab.core.invariants import safety_violations
from lab.core.monitor import check_trace
from lab.core.messages import TIMEOUT, Answer, digest
from lab.ports.wal import SEGMENT_BYTES
from lab.sim.cluster import SimCluster

SCENARIO_DIR = Path(__file__).parent.parent / "sim" / "scenarios"  # data of the simulator's folder


class ScenarioError(Exception):
    """A script that cannot be parsed or a command that cannot run."""


# ---- the script -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    line: int
    words: tuple[str, ...]

    def __str__(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Step:
    text: str
    commands: tuple[Command, ...]


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    description: str
    nodes: int
    truncation: str
    fsync: dict[str, str]
    steps: tuple[Step, ...]
    liveness_bound: float = 5.0
    segment_bytes: int | None = None  # the write-ahead log's segment size (default: lab.ports.wal.SEGMENT_BYTES)
    # `manual`: every message waits until a command delivers, drops or duplicates it, and the grader's rules are
    # checked after every step (the explorer's counterexamples, lab.explore)
    network: str = "timed"
    rules: tuple[str, ...] = ()  # with `network manual`: only these rules end the run (default: every rule)


HEADERS = {"nodes", "truncation", "fsync", "liveness", "segment-bytes", "network", "rules"}
NETWORKS = ("timed", "manual")


def parse(text: str, name: str = "scenario") -> Scenario:
    title, description, nodes, truncation, fsync, liveness = name, [], 3, "generation", {}, 5.0
    segment_bytes, network, rules = None, "timed", ()
    steps: list[Step] = []
    current: tuple[str, list[Command]] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            if not steps and current is None:
                if title == name:
                    title = line.lstrip("# ").strip()
                else:
                    description.append(line.lstrip("#").strip())
            continue
        if not line:
            continue
        try:
            words = tuple(shlex.split(line))
        except ValueError as exc:
            raise ScenarioError(f"{name} line {number}: {exc}") from exc
        head = words[0]
        if head == STEP:
            if len(words) != 2:
                raise ScenarioError(f'{name} line {number}: write a step as: step "what happens and why"')
            if current:
                steps.append(Step(current[0], tuple(current[1])))
            current = (words[1], [])
        elif current is None and head in HEADERS:
            try:
                if head == "nodes":
                    nodes = int(words[1])
                elif head == "truncation":
                    truncation = words[1]
                elif head == "fsync":
                    fsync[words[1]] = words[2]
                elif head == "liveness":
                    liveness = float(words[1].rstrip("s"))
                elif head == "segment-bytes":
                    segment_bytes = int(words[1])
                elif head == "rules":
                    rules = tuple(r for r in words[1].split(",") if r)
                elif head == "network":
                    network = words[1]
                    if network not in NETWORKS:
                        raise ValueError(network)
            except (IndexError, ValueError) as exc:
                raise ScenarioError(f"{name} line {number}: bad header {line!r}") from exc
        elif current is None:
            raise ScenarioError(f"{name} line {number}: {head!r} before the first step")
        else:
            if head not in COMMANDS and head not in CHOICES:
                raise ScenarioError(f"{name} line {number}: unknown command {head!r} "
                                    f"(known: {', '.join(sorted(COMMANDS))})")
            current[1].append(Command(number, words))
    if current:
        steps.append(Step(current[0], tuple(current[1])))
    if not steps:
        raise ScenarioError(f"{name}: no steps")
    return Scenario(name=name, title=title, description=" ".join(description), nodes=nodes,
                    truncation=truncation, fsync=fsync, steps=tuple(steps), liveness_bound=liveness,
                    segment_bytes=segment_bytes, network=network, rules=rules)


def available() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.txt"))


def load(name_or_path: str) -> Scenario:
    path = Path(name_or_path)
    if not path.suffix:
        path = SCENARIO_DIR / f"{name_or_path.lower()}.txt"
    if not path.exists():
        raise ScenarioError(f"no scenario {name_or_path!r}; available: {', '.join(available())}")
    return parse(path.read_text(encoding="utf-8"), path.stem)


# ---- drivers ----------------------------------------------------------------------------------------------


class Driver(Protocol):
    """What a scenario runs on: a cluster for the faults (lab.ports.cluster), plus clients and the passing of time."""

    names: list[str]
    cluster: Cluster

    def write(self, payload: str, node: str | None = None, wait: bool = True, timeout: float = 5.0) -> Answer | None: ...
    def read(self, index: int, node: str) -> Answer: ...
    def stream(self, on: bool) -> None: ...
    def status(self) -> dict: ...
    def wait_for(self, predicate: Callable[[dict], bool], timeout: float) -> bool: ...
    def events(self) -> list[dict]: ...
    def note(self, kind: str, **fields: Any) -> None: ...
    def close(self) -> None: ...


class SimDriver:
    """Runs a scenario on the seeded simulator: waits advance simulated time, so runs are exact and fast."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.names = cluster.names
        self._streaming = False
        self._stream_count = 0

    def _tick(self) -> None:
        if self._streaming:
            leader = self.cluster.leader()
            if leader:
                self._stream_count += 1
                self.cluster.write(f"s{self._stream_count}", leader)
        self.cluster.tick()

    def _run_until(self, done: Callable[[], bool], timeout: float) -> bool:
        for _ in range(max(1, round(timeout / self.cluster.tick_seconds))):
            if done():
                return True
            if self.cluster.faults:  # the student's code stopped a node: the scenario ends and says so
                return False
            self._tick()
        return done()

    def write(self, payload, node=None, wait=True, timeout=5.0):
        request = self.cluster.write(payload, node)
        if not wait:
            self._tick()
            return None
        self._run_until(lambda: request in self.cluster.answers, timeout)
        return self.cluster.answers.get(request) or Answer(request=request, ok=False, refusal=TIMEOUT,
                                                           error=f"timeout: no answer within {timeout}s")

    def read(self, index, node):
        return self.cluster.read(index, node)

    def stream(self, on):
        self._streaming = on

    def status(self):
        return self.cluster.status()

    def wait_for(self, predicate, timeout):
        return self._run_until(lambda: predicate(self.cluster.status()), timeout)

    def events(self):
        return self.cluster.events

    def note(self, kind, **fields):
        self.cluster.note(kind, **fields)

    def close(self):
        self.cluster.close()


# ---- running ----------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    name: str
    ok: bool
    detail: str
    step: int
    line: int


@dataclass
class Verdict:
    scenario: str
    truncation: str
    outcomes: list[Outcome] = field(default_factory=list)
    aborted: str = ""
    fault: dict | None = None  # the student's code stopped a node: the node, the step and the Fault's fields
    violation: Any = None  # with `network manual`: the first rule broken (lab.core.monitor.Violation)

    @property
    def passed(self) -> bool:
        return not self.aborted and all(o.ok for o in self.outcomes)

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def as_dict(self) -> dict:
        return {"scenario": self.scenario, "truncation": self.truncation, "passed": self.passed,
                "aborted": self.aborted, "expectations": [o.__dict__ for o in self.outcomes], "fault": self.fault}

    def summary(self) -> str:
        lines = [f"{self.scenario} ({self.truncation}): {'PASS' if self.passed else 'FAIL'}"]
        for o in self.outcomes:
            lines.append(f"  [{'ok' if o.ok else 'FAIL'}] step {o.step + 1}, line {o.line}: {o.name}"
                         + (f" -- {o.detail}" if o.detail else ""))
        if self.aborted:
            lines.append(f"  aborted: {self.aborted}")
        return "\n".join(lines)


class Run:
    """Executes a scenario on a driver, one step at a time (the dashboard calls run_step for next/back)."""

    def __init__(self, scenario: Scenario, driver: Driver, *, seed: int = 0, wait_timeout: float = 10.0):
        self.scenario = scenario
        self.driver = driver
        self.rng = random.Random(f"{seed}-scenario")
        self.wait_timeout = wait_timeout
        self.verdict = Verdict(scenario.name, scenario.truncation)
        self.next_step = 0
        self.last_killed: str | None = None

    def run_step(self, index: int | None = None) -> list[Outcome]:
        index = self.next_step if index is None else index
        step = self.scenario.steps[index]
        self.driver.note(STEP, text=step.text, index=index)
        before = len(self.verdict.outcomes)
        for command in step.commands:
            try:
                self._execute(command, index)
            except WaitTimeout as exc:
                self._record(index, command, False, exc.args[0])
                self.verdict.aborted = Reason(ev.AT_STEP, step=index + 1, error=exc.args[0])
            if self._stopped_by_fault(index) or self.verdict.aborted:
                break
        if self.scenario.network == "manual":
            self._check_rules(index)
        self.next_step = index + 1
        return self.verdict.outcomes[before:]

    def run_all(self) -> Verdict:
        while self.next_step < len(self.scenario.steps) and not self.verdict.aborted:
            self.run_step()
        return self.verdict

    def _stopped_by_fault(self, index: int) -> bool:
        """A node stopped because the student's code failed: the run ends here, and says so (not a timeout)."""
        for node in self.driver.status()["nodes"]:
            fault = node.get("fault")
            if fault:
                self.verdict.fault = {"node": node["id"], "step": index + 1, "scenario": self.scenario.name, **fault}
                self.verdict.aborted = Reason(ev.AT_STEP, step=index + 1, error=Reason(
                    ev.NODE_STOPPED_BECAUSE, node=node["id"], why=Fault(**fault).sentence()))
                return True
        return False
    def _check_rules(self, index: int) -> None:
        """With `network manual`: the grader's rules after the step; the first broken one ends the run."""
        found = [v for v in self.driver.cluster.violations() if not self.scenario.rules
                 or v.check in (*self.scenario.rules, "student-fault", "node-exited")]
        if found:
            violation = self.verdict.violation = found[0]
            self.driver.note(RULE_BROKEN, check=violation.check, target=violation.node, index=violation.index,
                             detail=violation.detail, step=index)
            self.verdict.outcomes.append(Outcome(f"rule {violation.check}", False, violation.detail, index,
                                                 self.scenario.steps[index].commands[-1].line
                                                 if self.scenario.steps[index].commands else 0))
            self.verdict.aborted = f"step {index + 1}: rule broken: {violation.sentence()}"

    # -- commands --

    def _execute(self, command: Command, step: int) -> None:
        head, *args = command.words
        if self.scenario.network == "manual" and head in CHOICES:
            if self.driver.cluster.apply(command.words) is None:
                raise WaitTimeout(f"line {command.line}: {command} cannot be done in this state")
            if head == "kill":
                self.last_killed = args[0]
            return
        if head in CHOICES and head not in COMMANDS:
            raise ScenarioError(f"line {command.line}: {head!r} needs the header `network manual`")
        COMMANDS[head](self, command, step, args)

    def _nodes(self, spec: str) -> list[str]:
        if spec == "all":
            return [n["id"] for n in self.driver.status()["nodes"] if n["state"] != "killed"]
        if spec == "leader":
            return [self._leader_or_fail()]
        if spec == "last-killed":
            return [self.last_killed] if self.last_killed else []
        return spec.split(",")

    def _leader_or_fail(self) -> str:
        leader = self.driver.status().get("leader")
        if not leader:
            raise WaitTimeout(Reason(ev.NO_LEADER_FOR_STEP))
        return leader

    def _wait(self, what: str, predicate: Callable[[dict], bool], timeout: float | None = None) -> None:
        if not self.driver.wait_for(predicate, timeout or self.wait_timeout):
            stopped = [Reason(ev.NODE_STOPPED_BECAUSE, node=n["id"], why=n.get("exit_reason") or "see its log")
                       for n in self.driver.status()["nodes"] if n["state"] == "exited"]
            seconds = f"{timeout or self.wait_timeout:g}"
            raise WaitTimeout(Reason(ev.WAITED_BECAUSE, seconds=seconds, what=what, why=Reasons(stopped))
                              if stopped else Reason(ev.WAITED, seconds=seconds, what=what))

    def _record(self, step: int, command: Command, ok: bool, detail: str = "") -> None:
        outcome = Outcome(str(command), ok, detail, step, command.line)
        self.verdict.outcomes.append(outcome)
        self.driver.note(EXPECTATION, name=str(command), ok=ok, detail=detail)


class WaitTimeout(Exception):
    pass


def _node(status: dict, name: str) -> dict:
    for node in status["nodes"]:
        if node["id"] == name:
            return node
    raise ScenarioError(f"no node {name!r}")


def _seconds(word: str, rng: random.Random) -> float:
    if ".." in word:
        low, high = (float(w.rstrip("s")) for w in word.split(".."))
        return round(rng.uniform(low, high), 3)
    return float(word.rstrip("s"))


def _on(args: list[str]) -> tuple[list[str], str]:
    """Split `... on A,B` into (words before, node spec)."""
    if "on" in args:
        i = args.index("on")
        return args[:i], args[i + 1]
    return args, "all"


# Each command: fn(run, command, step, args). Expectations record an Outcome; actions raise on misuse.


def cmd_campaign(run: Run, command, step, args):
    run.driver.cluster.campaign(args[0])


def cmd_write(run: Run, command, step, args):
    words, target = list(args), None
    wait = "nowait" not in words
    words = [w for w in words if w != "nowait"]
    if "to" in words:
        i = words.index("to")
        target = run._nodes(words[i + 1])[0]
        words = words[:i] + words[i + 2:]
    for payload in words:
        answer = run.driver.write(payload, target, wait=wait)
        if wait and (answer is None or not answer.ok):
            raise WaitTimeout(Reason(ev.WRITE_NOT_ACKNOWLEDGED, payload=payload,
                                     error=answer.error if answer else "no answer"))


def cmd_kill(run: Run, command, step, args):
    for name in run._nodes(args[0]):
        run.driver.cluster.kill(name, lose_unsynced="lose-unsynced" in args)
        run.last_killed = name


def _each(action: str):
    def command(run: Run, command, step, args):
        for name in run._nodes(args[0]):
            getattr(run.driver.cluster, action)(name)
    return command


def cmd_cut(run: Run, command, step, args):
    for spec in args:
        if "<->" in spec:
            a, b = spec.split("<->")
            run.driver.cluster.cut(a, b, one_way=False)
        elif "->" in spec:
            a, b = spec.split("->")
            run.driver.cluster.cut(a, b, one_way=True)
        else:
            raise ScenarioError(f"line {command.line}: write a cut as A->B (one way) or A<->B (both ways)")


def cmd_heal(run: Run, command, step, args):
    run.driver.cluster.heal()


def cmd_stream(run: Run, command, step, args):
    run.driver.stream(args[0] == "on")


def cmd_wait(run: Run, command, step, args):
    what = args[0]
    if what[0].isdigit():
        seconds = _seconds(what, run.rng)
        run.driver.wait_for(lambda s: False, seconds)
    elif what == "leader":
        among = set(run._nodes(args[2])) if len(args) > 2 and args[1] in ("in", "among") else None
        if len(args) == 2:
            among = set(run._nodes(args[1]))
        run._wait(Reason(ev.A_LEADER_AMONG, nodes=",".join(sorted(among))) if among else Reason(ev.A_LEADER),
                  lambda s: s.get("leader") is not None and (among is None or s["leader"] in among))
    elif what in ("hwm", "log_end"):
        (_, value), spec = _on(args)
        target = int(value)
        names = run._nodes(spec)
        run._wait(Reason(ev.HWM_ON if what == "hwm" else ev.LOG_END_ON, count=target, nodes=",".join(names)),
                  lambda s: all(_node(s, n)[what] >= target for n in names))
    elif what == "converged":
        run._wait(Reason(ev.WHOLE_LOG), _converged)
    elif what == "stopped":
        names = run._nodes(args[1])
        run._wait(Reason(ev.TO_STOP, nodes=names),
                  lambda s: all(_node(s, n)["state"] == "exited" for n in names))
    else:
        raise ScenarioError(f"line {command.line}: unknown wait {what!r}")


def _converged(status: dict) -> bool:
    leader = status.get("leader")
    if not leader:
        return False
    end = _node(status, leader)["log_end"]
    live = [n for n in status["nodes"] if n["state"] == "running"]
    return all(n["log_end"] == end and n["hwm"] == end for n in live)


def cmd_expect(run: Run, command, step, args):
    what, rest = args[0], args[1:]
    status = run.driver.status()
    ok, detail = True, ""
    if what == "hwm":
        (value,), spec = _on(rest)
        got = {n: _node(status, n)["hwm"] for n in run._nodes(spec)}
        ok = all(v == int(value) for v in got.values())
        detail = ", ".join(f"{n}: {v}" for n, v in got.items())
    elif what == "log":
        payloads, spec = _on(rest)
        got = {n: [e[2] for e in _node(status, n)["log"]] for n in run._nodes(spec)}
        ok = all(v == payloads for v in got.values())
        detail = "; ".join(f"{n}: [{', '.join(v)}]" for n, v in got.items())
    elif what == "read":
        (index, *want), spec = _on(rest)
        details = []
        for name in run._nodes(spec):
            answer = run.driver.read(int(index), name)
            if want == ["refused"]:
                ok &= not answer.ok
                details.append(Reason(NODE_SAYS, node=name, answer=answer.error or Reason(SERVED,
                                                                                         payload=answer.payload)))
            else:
                ok &= answer.ok and answer.payload == want[-1]
                details.append(Reason(NODE_SAYS, node=name, answer=answer.payload if answer.ok else answer.error))
        detail = Reasons(details)
    elif what == "leader":
        among = run._nodes(rest[-1])
        ok = status.get("leader") in among
        detail = Reason(ev.LEADER_IS, leader=status.get("leader"))
    elif what == "generation":
        (op, value), spec = _on(rest)
        got = {n: _node(status, n)["generation"] for n in run._nodes(spec)}
        ok = all(v >= int(value) for v in got.values())
        detail = ", ".join(f"{n}: {v}" for n, v in got.items())
    elif what == TRUNCATED:
        (index,), spec = _on(rest)
        names = run._nodes(spec)
        hits = [e for e in run.driver.events() if e["type"] == TRUNCATED and e["node"] in names
                and e["from_index"] == int(index)]
        ok = len(hits) > 0
        detail = Reasons(Reason(ev.REMOVED_ENTRIES, node=e["node"], entries=Reasons(
            (Reason(ev.ENTRY_AT, index=i, generation=g) for i, g, _ in e["removed"]), ", "), reason=e["reason"])
            for e in hits) if hits else Reason(ev.NO_TRUNCATION)
    elif what == "not-truncated":
        names = run._nodes(_on(rest)[1])
        hits = [e for e in run.driver.events() if e["type"] == TRUNCATED and e["node"] in names]
        ok = not hits
        detail = Reasons(Reason(ev.REMOVED_FROM, node=e["node"], index=e["from_index"], reason=e["reason"])
                         for e in hits)
    elif what == "never-served":
        target = digest(rest[0])
        hits = [e for e in run.driver.events() if e["type"] == READ_SERVED and e["entry"][2] == target]
        ok = not hits
        detail = Reasons(Reason(ev.SERVED_AT, node=e["node"], index=e["index"]) for e in hits)
    elif what == "acked-survive":
        acked = {e["digest"]: e for e in run.driver.events() if e["type"] == WRITE_ACKED}
        missing = []
        for node in status["nodes"]:
            if node["state"] != "running":
                continue
            held = {digest(e[2]) for e in node["log"]}
            missing += [Reason(ev.LACKS_INDEX, node=node["id"], index=e["index"]) for d, e in acked.items()
                        if d not in held]
        ok = not missing
        detail = (Reason(ev.ACKED_WRITES_MISSING, count=len(acked), missing=Reasons(missing[:5])) if missing
                  else Reason(ev.ACKED_WRITES, count=len(acked)))
    elif what == "logs-agree":
        live = [n for n in status["nodes"] if n["state"] == "running"]
        logs = {n["id"]: [tuple(e) for e in n["log"]] for n in live}
        first = next(iter(logs.values()), [])
        ok = all(v == first for v in logs.values())
        if not ok:
            detail = "; ".join(f"{n}: {[e[2] for e in v]}" for n, v in logs.items())
    elif what == "stopped":  # expect stopped A "fsync failed": A stopped on its own, for that reason
        names, want = run._nodes(rest[0]), rest[1] if len(rest) > 1 else ""
        got = {n: (_node(status, n)["state"], _node(status, n).get("exit_reason") or "") for n in names}
        ok = all(state == "exited" and reason.startswith(want) for state, reason in got.values())
        detail = Reasons(Reason(ev.STOPPED_BECAUSE, node=n, why=reason) if state == "exited" and reason
                         else Reason(ev.NODE_IS, node=n, state=state) for n, (state, reason) in got.items())
    elif what == "not-acked":  # expect not-acked d2: no node acknowledged that write
        hits = [e for e in run.driver.events() if e["type"] == WRITE_ACKED and e["digest"] == digest(rest[0])]
        ok = not hits
        detail = Reasons(Reason(ev.ACKED_AT, node=e["node"], index=e["index"]) for e in hits)
    elif what == "safety":
        problems = safety_violations(run.driver.events(), status)
        ok = not problems
        detail = Reasons(problems[:5])
    elif what == "rules":  # the grader's rules over the trace so far (lab.core.monitor, as explore and chaos)
        problems = [v.sentence() for v in check_trace(run.driver.events(), len(run.driver.names))]
        ok = not problems
        detail = "; ".join(problems[:5])
    else:
        raise ScenarioError(f"line {command.line}: unknown expectation {what!r}")
    run._record(step, command, bool(ok), detail)


COMMANDS: dict[str, Callable] = {
    "campaign": cmd_campaign,
    "write": cmd_write,
    "kill": cmd_kill,
    "restart": _each("restart"),
    "pause": _each("pause"),
    "resume": _each("resume"),
    "flush": _each("flush"),
    "disk-full": _each(DISK_FULL),
    "disk-ok": _each(DISK_OK),
    "fsync-fail": _each(FSYNC_FAIL),
    "isolate": _each("isolate"),
    "cut": cmd_cut,
    "heal": cmd_heal,
    "stream": cmd_stream,
    "wait": cmd_wait,
    "expect": cmd_expect,
}


# The explorer's choices (lab.sim.world), run by the world itself under `network manual`.
CHOICES = frozenset({"deliver", "drop", "duplicate", "campaign", "heartbeat", "write", "read", "kill", "restart",
                     "pause", "resume", "cut", "heal"})


# ---- entry points -----------------------------------------------------------------------------------------


def simulate(name: str, *, seed: int = 0, nodes: int | None = None, truncation: str | None = None,
             impl: str = "solutions", out: str | Path | None = None, meta: dict | None = None,
             pre_vote: bool = PRE_VOTE, limit: float = DEFAULT_LIMIT, pace: str = "normal") -> Verdict:
    """Run a scenario on the simulator; with `out`, write the trace directory and verdict.json there. Under the
    classroom pace the trace's clock runs as a room would watch it (elections take seconds)."""
    scenario = load(name)
    timing = pace_timing(pace)
    strategy = truncation or scenario.truncation
    if scenario.network == "manual":
        from lab.harness.replay import replay

        return replay(scenario, impl=impl, out=out, truncation=strategy, nodes=nodes, meta=meta)
    cluster = SimCluster(nodes or scenario.nodes, seed=seed, truncation=strategy, fsync=_fsync(scenario),
                         impl=impl, trace_dir=out, segment_bytes=scenario.segment_bytes or SEGMENT_BYTES,
                         pre_vote=pre_vote, limit=limit, timing=timing,
                         meta={"run": f"{scenario.name}-{strategy}-seed{seed}", "scenario": scenario.name, "pace": pace,
                               "liveness_bound": scenario.liveness_bound, **(meta or {})})
    run = Run(replace(scenario, truncation=strategy), SimDriver(cluster), seed=seed, wait_timeout=wait_seconds(timing))
    verdict = run.run_all()
    cluster.close({"passed": verdict.passed})
    if out:
        write_verdict(out, verdict)
    return verdict


def _fsync(scenario: Scenario) -> dict[str, str]:
    return {n: scenario.fsync.get(n, "always") for n in node_names(scenario.nodes)}


def write_verdict(out: str | Path, verdict: Verdict) -> None:
    Path(out, "verdict.json").write_text(json.dumps(verdict.as_dict(), indent=2) + "\n", encoding="utf-8")
