"""Running a scenario: the teaching scenarios, parsed by lab.harness.script, run step by step on a ScenarioDriver
(the simulator's SimDriver below, the explorer's world's ManualDriver for a counterexample, lab.harness.realdriver's
RealDriver for processes) into a Verdict."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol

from lab.ports.fault_vocabulary import Cluster
from lab.core.config import PRE_VOTE, node_names, pace_timing, wait_seconds
from lab.core import reasons
from lab.core.events import EXPECTATION, RULE_BROKEN, STEP
from lab.core.reasons import Reason, Reasons
from lab.core.guard import DEFAULT_LIMIT, Fault
from lab.core.messages import TIMEOUT, Answer
from lab.harness.commands import COMMANDS, ScenarioError, WaitTimeout
from lab.sim.choices import WALK_KINDS  # the explorer's, run by the world itself under `network manual`
from lab.sim.steps import step_record
from lab.harness.script import Command, Scenario, load
from lab.ports.segments import SEGMENT_BYTES
from lab.sim.cluster import SimCluster
from lab.sim.world import ALWAYS, SEGMENT_BYTES as WORLD_SEGMENT_BYTES, World


# ---- drivers ----------------------------------------------------------------------------------------------


class ScenarioDriver(Protocol):
    """What a scenario runs on: a cluster for the faults (lab.ports.fault_vocabulary), plus clients and the passing
    of time."""

    names: list[str]
    cluster: Cluster

    def write(self, payload: str, node: str | None = None, wait: bool = True, timeout: float = 5.0) -> Answer | None: ...
    def read(self, index: int, node: str, linearizable: bool = False) -> Answer: ...
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
                                                           error=self._no_answer(timeout))

    def _no_answer(self, timeout: float) -> Reason:
        """Why a write got no answer: a node stopped by an exercise not written yet, else the time ran out."""
        unwritten = getattr(self.cluster, "stopped_unwritten", {})
        if unwritten:
            node, function = next(iter(unwritten.items()))
            return Reason(reasons.NOT_WRITTEN_YET, node=node, function=function)
        return Reason(reasons.NO_ANSWER_WITHIN, seconds=f"{timeout:g}")

    def read(self, index, node, linearizable=False):
        """A read of `node`; a linearizable one waits for its round of messages (refused by a node that does not
        lead, the cluster asks the leader it named, as the supervisor does)."""
        if not linearizable:
            return self.cluster.read(index, node)
        request = self.cluster.ask_read(index, node, linearizable=True)
        self._run_until(lambda: request in self.cluster.answers, wait_seconds(self.cluster.timing))
        return self.cluster.answers.pop(request, None) or Answer(
            request=request, ok=False, index=index, refusal=TIMEOUT, error=self._no_answer(wait_seconds(
                self.cluster.timing)))

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


class ManualDriver(SimDriver):
    """Runs a counterexample (a script with the header `network manual`) on the explorer's world: time does not pass
    by itself, every change is a command of the script."""

    def write(self, payload, node=None, wait=True, timeout=5.0):
        self.cluster.apply(("write", payload, "to", node or self.cluster.leader() or self.names[0], "nowait"))
        return None

    def wait_for(self, predicate, timeout):
        return predicate(self.cluster.status())


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
    # with `judge` (simulate): the calls of the student's functions that broke their exercise's rule, as (node, step,
    # lab.core.judges.Call), and the functions not written yet that a node reached
    wrong_calls: list = field(default_factory=list)
    unwritten: set = field(default_factory=set)
    # with `network manual`: the commands that could not be done in their state, skipped as the explorer's shrinker
    # skips them (a step left out of a counterexample may leave a later message never sent): (step from 1, line,
    # command)
    skipped: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.aborted and all(o.ok for o in self.outcomes)

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def as_dict(self) -> dict:
        return {"scenario": self.scenario, "truncation": self.truncation, "passed": self.passed,
                "aborted": self.aborted, "expectations": [{**o.__dict__, "step": o.step + 1} for o in self.outcomes],
                "fault": self.fault,
                "skipped": [{"step": step, "line": line, "command": command} for step, line, command in self.skipped]}

    def summary(self) -> str:
        """The verdict in English (lab.i18n.verdicts says it in any language)."""
        lines = [f"{self.scenario} ({self.truncation}): {'PASS' if self.passed else 'FAIL'}"]
        for o in self.outcomes:
            lines.append(f"  [{'ok' if o.ok else 'FAIL'}] step {o.step + 1}, line {o.line}: {o.name}"
                         + (f" -- {o.detail}" if o.detail else ""))
        for step, line, command in self.skipped:
            lines.append(f"  [skipped] step {step}, line {line}: {command} cannot be done in this state")
        if self.aborted:
            lines.append(f"  aborted: {self.aborted}")
        return "\n".join(lines)


class Run:
    """Executes a scenario on a driver, one step at a time (the dashboard calls run_step for next/back)."""

    def __init__(self, scenario: Scenario, driver: ScenarioDriver, *, seed: int = 0, wait_timeout: float = 10.0):
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
        said = self._said(step)
        self.driver.note(STEP, text=step.text, index=index, **({"said": said} if said else {}))
        before = len(self.verdict.outcomes)
        for command in step.commands:
            try:
                self._execute(command, index)
            except WaitTimeout as exc:
                self.record(index, command, False, exc.args[0])
                self.verdict.aborted = Reason(reasons.AT_STEP, step=index + 1, error=exc.args[0])
            if self._stopped_by_fault(index) or self.verdict.aborted:
                break
        if self.scenario.network == "manual":
            self._check_rules(index)
        self.next_step = index + 1
        return self.verdict.outcomes[before:]

    def _said(self, step) -> dict | None:
        """A step with no words of its own (a counterexample's: one choice of the explorer's world) as data, taken
        from the world before it: whoever shows the trace says it in the reader's language (lab.i18n.steps)."""
        if step.text or self.scenario.network != "manual" or len(step.commands) != 1:
            return None
        words = step.commands[0].words
        if words[0] not in WALK_KINDS:
            return None
        return step_record(words, self.driver.cluster)

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
                self.verdict.aborted = Reason(reasons.AT_STEP, step=index + 1, error=Reason(
                    reasons.NODE_STOPPED_BECAUSE, node=node["id"], why=Fault(**fault).sentence()))
                return True
        return False

    def _check_rules(self, index: int) -> None:
        """With `network manual`: the grader's rules after the step; the first broken one ends the run."""
        found = [v for v in self.driver.cluster.violations() if not self.scenario.rules
                 or v.check in (*self.scenario.rules, *ALWAYS)]
        if found:
            violation = self.verdict.violation = found[0]
            self.driver.note(RULE_BROKEN, check=violation.check, target=violation.node, index=violation.index,
                             detail=violation.detail, step=index + 1)
            self.verdict.outcomes.append(Outcome(f"rule {violation.check}", False, violation.detail, index,
                                                 self.scenario.steps[index].commands[-1].line
                                                 if self.scenario.steps[index].commands else 0))
            self.verdict.aborted = Reason(reasons.RULE_BROKEN_AT, step=index + 1, rule=violation.check,
                                          detail=violation.detail)

    # -- commands --

    def _execute(self, command: Command, step: int) -> None:
        head, *args = command.words
        if self.scenario.network == "manual" and head in WALK_KINDS:
            if self.driver.cluster.apply(command.words) is None:  # skipped, and said (Verdict.skipped)
                self.verdict.skipped.append((step + 1, command.line, str(command)))
                return
            if head == "kill":
                self.last_killed = args[0]
            return
        if head in WALK_KINDS and head not in COMMANDS:
            raise ScenarioError(Reason(reasons.LINE_NEEDS_MANUAL, line=command.line, command=repr(head)))
        COMMANDS[head](self, command, step, args)

    def nodes(self, spec: str) -> list[str]:
        if spec == "all":
            return [n["id"] for n in self.driver.status()["nodes"] if n["state"] != "killed"]
        if spec == "leader":
            return [self._leader_or_fail()]
        if spec == "last-killed":
            return [self.last_killed] if self.last_killed else []
        names, ids = spec.split(","), [n["id"] for n in self.driver.status()["nodes"]]
        unknown = [name for name in names if name not in ids]
        if unknown:  # refused at once, rather than a wait of the whole timeout or a traceback
            raise ValueError(Reason(reasons.NO_NODE_IN_CLUSTER, node=repr(unknown[0]), nodes=ids))
        return names

    def _leader_or_fail(self) -> str:
        leader = self.driver.status().get("leader")
        if not leader:
            raise WaitTimeout(Reason(reasons.NO_LEADER_FOR_STEP))
        return leader

    def wait(self, what: Callable[..., Reason], predicate: Callable[[dict], bool],
             timeout: float | None = None) -> None:
        """Wait until `predicate` holds; else fail with the whole sentence `what(seconds=...)` makes (a waited_*
        reason), and say why each node that stopped on its own stopped."""
        if not self.driver.wait_for(predicate, timeout or self.wait_timeout):
            stopped = [Reason(reasons.NODE_STOPPED_BECAUSE, node=n["id"], why=n["exit_reason"]) if n.get("exit_reason")
                       else Reason(reasons.NODE_STOPPED_SEE_LOG, node=n["id"]) for n in self.driver.status()["nodes"] if n["state"] == "exited"]
            waited = what(seconds=timeout or self.wait_timeout)
            raise WaitTimeout(Reasons([waited, *stopped]) if stopped else waited)

    def record(self, step: int, command: Command, ok: bool, detail: str = "") -> None:
        outcome = Outcome(str(command), ok, detail, step, command.line)
        self.verdict.outcomes.append(outcome)
        self.driver.note(EXPECTATION, name=str(command), ok=ok, detail=detail)


# ---- entry points -----------------------------------------------------------------------------------------


def simulate(name: str, *, seed: int = 0, nodes: int | None = None, truncation: str | None = None,
             impl: str | None = None, out: str | Path | None = None, meta: dict | None = None,
             pre_vote: bool = PRE_VOTE, limit: float = DEFAULT_LIMIT, pace: str = "normal",
             judge: bool = False, file: bool = False) -> Verdict:
    """Run a scenario on the simulator; with `out`, write the trace directory and verdict.json there. Under the
    classroom pace the trace's clock runs as a room would watch it (elections take seconds). `impl`: the code the
    nodes run (default: the one the script names, else the reference answers). `judge`: each call of the student's
    functions is judged by its exercise's rule (lab.core.judges), into the verdict's wrong_calls. `file`: `name` is
    a script's path, never a scenario's name."""
    scenario = load(name, file=file)
    impl = impl or scenario.impl or "solutions"
    timing = pace_timing(pace)
    strategy = truncation or scenario.truncation
    if scenario.network == "manual":
        return replay(scenario, impl=impl, out=out, truncation=strategy, nodes=nodes, meta=meta)
    cluster = SimCluster(nodes or scenario.nodes, seed=seed, truncation=strategy, fsync=_fsync(scenario),
                         impl=impl, trace_dir=out, segment_bytes=scenario.segment_bytes or SEGMENT_BYTES,
                         pre_vote=pre_vote, limit=limit, timing=timing, judge=judge,
                         meta={"run": f"{scenario.name}-{strategy}-seed{seed}", "scenario": scenario.name, "pace": pace,
                               "liveness_bound": scenario.liveness_bound, **(meta or {})})
    run = Run(replace(scenario, truncation=strategy), SimDriver(cluster), seed=seed, wait_timeout=wait_seconds(timing))
    verdict = run.run_all()
    verdict.wrong_calls, verdict.unwritten = cluster.wrong_calls, cluster.unwritten
    cluster.close({"passed": verdict.passed})
    if out:
        write_verdict(out, verdict)
    return verdict


def replay(scenario: Scenario, *, impl: str = "solutions", out: str | Path | None = None,
           truncation: str | None = None, nodes: int | None = None, meta: dict | None = None) -> Verdict:
    """Replay a counterexample on the explorer's world: the same steps, the student's calls in the trace, and the
    grader's rules after every step, so `hwm-lab simulate --script FILE` ends on the very violation the search
    found."""
    strategy = truncation or scenario.truncation
    world = World(nodes or scenario.nodes, truncation=strategy, impl=impl, fsync=_fsync(scenario), trace_dir=out,
                  defer_sync=scenario.sync == "manual",
                  segment_bytes=scenario.segment_bytes or WORLD_SEGMENT_BYTES, record_calls=True,
                  meta={"run": f"{scenario.name}-{strategy}", "scenario": scenario.name, **(meta or {})})
    verdict = Run(scenario, ManualDriver(world)).run_all()
    verdict.truncation = strategy
    world.close({"passed": verdict.passed})
    if out:
        write_verdict(out, verdict)
    return verdict


def _fsync(scenario: Scenario) -> dict[str, str]:
    return {n: scenario.fsync.get(n, "always") for n in node_names(scenario.nodes)}


def write_verdict(out: str | Path, verdict: Verdict) -> None:
    Path(out, "verdict.json").write_text(json.dumps(verdict.as_dict(), indent=2) + "\n", encoding="utf-8")
