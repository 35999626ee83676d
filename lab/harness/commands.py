"""The scenario language's commands: each a small function `cmd_x(run, command, step, args)`, in the table COMMANDS
that lab.harness.scenario.Run dispatches on; expectations record an Outcome, actions raise on misuse."""

from __future__ import annotations

import random
from functools import partial
from typing import Any, Callable, Protocol

from lab.core import reasons
from lab.core.events import READ_SERVED, TRUNCATED, WRITE_ACKED
from lab.core.reasons import NODE_SAYS, Reason, Reasons, SERVED
from lab.core.invariants import safety_violations
from lab.core.monitor import check_trace
from lab.core.messages import digest
from lab.harness import history
from lab.ports.fault_vocabulary import FAULTS, FaultWord


class Run(Protocol):
    """What a command may use of the run it is a step of: lab.harness.scenario.Run's public interface."""

    driver: Any  # the lab.harness.scenario.ScenarioDriver it runs on
    rng: random.Random
    last_killed: str | None

    def nodes(self, spec: str) -> list[str]: ...
    def wait(self, what: Callable[..., Reason], predicate: Callable[[dict], bool]) -> None: ...
    def record(self, step: int, command, ok: bool, detail="") -> None: ...


class ScenarioError(Exception):
    """A script that cannot be parsed or a command that cannot run."""


class WaitTimeout(Exception):
    """What a step needed did not happen in time (a wait, a write, a leader): its outcome fails and the run ends."""


def _node(status: dict, name: str) -> dict:
    for node in status["nodes"]:
        if node["id"] == name:
            return node
    raise ScenarioError(Reason(reasons.NO_NODE_NAMED, node=repr(name)))


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


def _each(fault: FaultWord):
    """`WORD SPEC`: a word of the fault vocabulary on each node of the spec (`pause A,B`, `restart last-killed`)."""
    def command(run: Run, command, step, args):
        for name in run.nodes(args[0]):
            getattr(run.driver.cluster, fault.method)(name)
    return command


def cmd_kill(run: Run, command, step, args):
    for name in run.nodes(args[0]):
        run.driver.cluster.kill(name, lose_unsynced="lose-unsynced" in args)
        run.last_killed = name


def cmd_cut(run: Run, command, step, args):
    for spec in args:
        if "<->" in spec:
            a, b = spec.split("<->")
            run.driver.cluster.cut(a, b, one_way=False)
        elif "->" in spec:
            a, b = spec.split("->")
            run.driver.cluster.cut(a, b, one_way=True)
        else:
            raise ScenarioError(Reason(reasons.LINE_CUT_FORM, line=command.line))


def cmd_heal(run: Run, command, step, args):
    run.driver.cluster.heal()


def cmd_write(run: Run, command, step, args):
    words, target = list(args), None
    wait = "nowait" not in words
    words = [w for w in words if w != "nowait"]
    if "to" in words:
        i = words.index("to")
        target = run.nodes(words[i + 1])[0]
        words = words[:i] + words[i + 2:]
    for payload in words:
        answer = run.driver.write(payload, target, wait=wait)
        if wait and (answer is None or not answer.ok):
            raise WaitTimeout(Reason(reasons.WRITE_NOT_ACKNOWLEDGED, payload=payload,
                                     error=answer.error if answer else "no answer"))


def cmd_stream(run: Run, command, step, args):
    run.driver.stream(args[0] == "on")


def cmd_wait(run: Run, command, step, args):
    what = args[0]
    if what[0].isdigit():
        seconds = _seconds(what, run.rng)
        run.driver.wait_for(lambda s: False, seconds)
    elif what == "leader":
        among = set(run.nodes(args[2])) if len(args) > 2 and args[1] in ("in", "among") else None
        if len(args) == 2:
            among = set(run.nodes(args[1]))
        run.wait(partial(Reason, reasons.WAITED_LEADER_AMONG, nodes=sorted(among)) if among
                 else partial(Reason, reasons.WAITED_LEADER),
                 lambda s: s.get("leader") is not None and (among is None or s["leader"] in among))
    elif what in ("hwm", "log_end"):
        (_, value), spec = _on(args)
        target = int(value)
        names = run.nodes(spec)
        run.wait(partial(Reason, reasons.WAITED_HWM if what == "hwm" else reasons.WAITED_LOG_END, nodes=names,
                         count=target),
                 lambda s: all(_node(s, n)[what] >= target for n in names))
    elif what == "converged":
        run.wait(partial(Reason, reasons.WAITED_WHOLE_LOG), _converged)
    elif what == "stopped":
        names = run.nodes(args[1])
        run.wait(partial(Reason, reasons.WAITED_STOP, nodes=names),
                 lambda s: all(_node(s, n)["state"] == "exited" for n in names))
    else:
        raise ScenarioError(Reason(reasons.LINE_UNKNOWN_WAIT, line=command.line, what=repr(what)))


# ---- questions to the room -----------------------------------------------------------------------------------

QUESTION_KINDS = ("hwm", "entries", "read", "leader")  # what `ask` may ask a room about the step (web/questions.py)


def parse_ask(command) -> tuple[str, str | None, int | None]:
    """`ask hwm on A`, `ask entries on A`, `ask read 4 on A`, `ask leader`: (kind, node, index). A step's `ask`
    lines name the questions the dashboard may put to the room before the step runs; the runner does nothing."""
    words = list(command.words[1:])
    kind = words[0] if words else None
    shapes = {"hwm": 3, "entries": 3, "read": 4, "leader": 1}
    if kind not in shapes or len(words) != shapes[kind] or (kind != "leader" and words[-2] != "on"):
        raise ScenarioError(Reason(reasons.LINE_ASK_FORM, line=command.line))
    node = words[-1] if kind != "leader" else None
    if kind == "read" and not (words[1].isdigit() and int(words[1]) >= 1):
        raise ScenarioError(Reason(reasons.LINE_ASK_INDEX, line=command.line))
    return kind, node, int(words[1]) if kind == "read" else None


def cmd_ask(run: Run, command, step, args):
    parse_ask(command)  # asked by the dashboard before the step, not by the runner


def _converged(status: dict) -> bool:
    leader = status.get("leader")
    if not leader:
        return False
    end = _node(status, leader)["log_end"]
    live = [n for n in status["nodes"] if n["state"] == "running"]
    return all(n["log_end"] == end and n["hwm"] == end for n in live)


def cmd_expect(run: Run, command, step, args):
    """`expect WHAT ...`: the check of EXPECTATIONS for WHAT, on the cluster's status now; its outcome is recorded."""
    what, rest = args[0], args[1:]
    status = run.driver.status()
    if what not in EXPECTATIONS:
        raise ScenarioError(Reason(reasons.LINE_UNKNOWN_EXPECT, line=command.line, what=repr(what)))
    ok, detail = EXPECTATIONS[what](run, status, rest)
    run.record(step, command, bool(ok), detail)


# ---- expectations: each (run, status, words after `expect WHAT`) -> (held, detail) -----------------------------


def expect_hwm(run: Run, status: dict, rest: list[str]):
    (value,), spec = _on(rest)
    got = {n: _node(status, n)["hwm"] for n in run.nodes(spec)}
    return all(v == int(value) for v in got.values()), _each_says(got, ", ")


def _each_says(got: dict, sep: str) -> Reasons:
    """What each node holds, `A: 3, B: 3`, said in the reader's language (its separators, its colon)."""
    return Reasons((Reason(NODE_SAYS, node=n, answer=v) for n, v in got.items()), sep)


def expect_log(run: Run, status: dict, rest: list[str]):
    payloads, spec = _on(rest)
    got = {n: [e[2] for e in _node(status, n)["log"]] for n in run.nodes(spec)}
    return all(v == payloads for v in got.values()), _each_says({n: f"[{', '.join(v)}]" for n, v in got.items()}, "; ")


def expect_read(run: Run, status: dict, rest: list[str]):
    """`expect read 4 refused on C`, `expect read 4 = e4 on C` (`linearizable` at the end: the read asks the
    leader, which confirms it still leads; a node that does not lead names it, and the read goes there)."""
    linearizable = rest[-1] == "linearizable"
    (index, *want), spec = _on(rest[:-1] if linearizable else rest)
    ok, details = True, []
    for name in run.nodes(spec):
        answer = run.driver.read(int(index), name, linearizable) if linearizable else run.driver.read(int(index), name)
        said = answer.error or Reason(SERVED, payload=answer.payload) if want == ["refused"] else \
            answer.payload if answer.ok else answer.error
        ok &= not answer.ok if want == ["refused"] else answer.ok and answer.payload == want[-1]
        if linearizable and answer.leader and answer.leader != name:
            details.append(Reason(reasons.FORWARDED_SAYS, node=name, leader=answer.leader, answer=said))
        else:
            details.append(Reason(NODE_SAYS, node=name, answer=said))
    return ok, Reasons(details)


def expect_stale_reads(run: Run, status: dict, rest: list[str]):
    """`expect stale-reads 1`: the clients' history so far (lab.harness.history) holds that many stale reads."""
    stale = history.check(run.driver.events()).of_verdict(history.STALE)
    detail = Reasons(Reason(reasons.STALE_READ_OF, node=op.node or "?", index=op.index, hwm=op.hwm,
                            acked_by=op.acked_before.node or "?") for op in stale[:5]) if stale else \
        Reason(reasons.NO_STALE_READ)
    return len(stale) == int(rest[0]), detail


def expect_linearizable(run: Run, status: dict, rest: list[str]):
    """`expect linearizable yes` (or `no`): whether the clients' history so far is linearizable, a register per
    log index."""
    found = history.check(run.driver.events())
    broken = found.not_linearizable()
    detail = Reason(reasons.NOT_LINEARIZABLE_AT, indexes=", ".join(map(str, broken[:10])), count=len(broken)) \
        if broken else Reason(reasons.LINEARIZABLE_PARTS, count=len(found.parts))
    return found.linearizable is (rest[0] == "yes"), detail


def expect_leader(run: Run, status: dict, rest: list[str]):
    return status.get("leader") in run.nodes(rest[-1]), Reason(reasons.LEADER_IS, leader=status.get("leader"))


def expect_generation(run: Run, status: dict, rest: list[str]):
    (op, value), spec = _on(rest)
    got = {n: _node(status, n)["generation"] for n in run.nodes(spec)}
    return all(v >= int(value) for v in got.values()), _each_says(got, ", ")


def expect_truncated(run: Run, status: dict, rest: list[str]):
    (index,), spec = _on(rest)
    names = run.nodes(spec)
    hits = [e for e in run.driver.events() if e["type"] == TRUNCATED and e["node"] in names
            and e["from_index"] == int(index)]
    if not hits:
        return False, Reason(reasons.NO_TRUNCATION)
    return True, Reasons(Reason(reasons.REMOVED_ENTRIES, node=e["node"], entries=Reasons(
        (Reason(reasons.ENTRY_AT, index=i, generation=g) for i, g, _ in e["removed"]), ", ", listed=True),
        reason=e["reason"])
        for e in hits)


def expect_not_truncated(run: Run, status: dict, rest: list[str]):
    names = run.nodes(_on(rest)[1])
    hits = [e for e in run.driver.events() if e["type"] == TRUNCATED and e["node"] in names]
    return not hits, Reasons(Reason(reasons.REMOVED_FROM, node=e["node"], index=e["from_index"], reason=e["reason"])
                             for e in hits)


def expect_never_served(run: Run, status: dict, rest: list[str]):
    target = digest(rest[0])
    hits = [e for e in run.driver.events() if e["type"] == READ_SERVED and e["entry"][2] == target]
    return not hits, Reasons(Reason(reasons.SERVED_AT, node=e["node"], index=e["index"]) for e in hits)


def expect_acked_survive(run: Run, status: dict, rest: list[str]):
    acked = {e["digest"]: e for e in run.driver.events() if e["type"] == WRITE_ACKED}
    missing = []
    for node in status["nodes"]:
        if node["state"] != "running":
            continue
        held = {digest(e[2]) for e in node["log"]}
        missing += [Reason(reasons.LACKS_INDEX, node=node["id"], index=e["index"]) for d, e in acked.items()
                    if d not in held]
    if missing:
        return False, Reason(reasons.ACKED_WRITES_MISSING, count=len(acked), missing=Reasons(missing[:5]))
    return True, Reason(reasons.ACKED_WRITES, count=len(acked))


def expect_logs_agree(run: Run, status: dict, rest: list[str]):
    logs = {n["id"]: [tuple(e) for e in n["log"]] for n in status["nodes"] if n["state"] == "running"}
    first = next(iter(logs.values()), [])
    if all(v == first for v in logs.values()):
        return True, ""
    return False, _each_says({n: f"[{', '.join(e[2] for e in v)}]" for n, v in logs.items()}, "; ")


def expect_stopped(run: Run, status: dict, rest: list[str]):
    """`expect stopped A "fsync failed"`: A stopped on its own, for that reason."""
    names, want = run.nodes(rest[0]), rest[1] if len(rest) > 1 else ""
    got = {n: (_node(status, n)["state"], _node(status, n).get("exit_reason") or "") for n in names}
    return (all(state == "exited" and reason.startswith(want) for state, reason in got.values()),
            Reasons(Reason(reasons.STOPPED_BECAUSE, node=n, why=reason) if state == "exited" and reason
                    else Reason(reasons.NODE_IS, node=n, state=state) for n, (state, reason) in got.items()))


def expect_not_acked(run: Run, status: dict, rest: list[str]):
    """`expect not-acked d2`: no node acknowledged that write."""
    hits = [e for e in run.driver.events() if e["type"] == WRITE_ACKED and e["digest"] == digest(rest[0])]
    return not hits, Reasons(Reason(reasons.ACKED_AT, node=e["node"], index=e["index"]) for e in hits)


def expect_safety(run: Run, status: dict, rest: list[str]):
    problems = safety_violations(run.driver.events(), status)
    return not problems, Reasons(problems[:5])


def expect_rules(run: Run, status: dict, rest: list[str]):
    """The grader's rules over the trace so far (lab.core.monitor, as explore and chaos check them)."""
    problems = [v.sentence() for v in check_trace(run.driver.events(), len(run.driver.names))]
    return not problems, "; ".join(problems[:5])


EXPECTATIONS: dict[str, Callable] = {  # `expect WHAT ...` -> its check (docs/scenarios.md lists each)
    "hwm": expect_hwm,
    "log": expect_log,
    "read": expect_read,
    "leader": expect_leader,
    "generation": expect_generation,
    TRUNCATED: expect_truncated,
    "not-truncated": expect_not_truncated,
    "never-served": expect_never_served,
    "acked-survive": expect_acked_survive,
    "logs-agree": expect_logs_agree,
    "stopped": expect_stopped,
    "not-acked": expect_not_acked,
    "safety": expect_safety,
    "rules": expect_rules,
    "stale-reads": expect_stale_reads,
    "linearizable": expect_linearizable,
}

# The fault vocabulary's words with a spelling of their own in a script, and those a script does not take.
FAULT_COMMANDS = {"kill": cmd_kill, "cut": cmd_cut, "heal": cmd_heal}
NOT_IN_SCRIPTS = {
    "delay": "not a command yet: a script's messages keep the simulator's timing",
    "drop": "`drop` is the manual network's choice of one message in flight (docs/scenarios.md)",
}

COMMANDS: dict[str, Callable] = {
    **{word: FAULT_COMMANDS.get(word) or _each(fault) for word, fault in FAULTS.items() if word not in NOT_IN_SCRIPTS},
    "write": cmd_write,
    "stream": cmd_stream,
    "wait": cmd_wait,
    "expect": cmd_expect,
    "ask": cmd_ask,
}
