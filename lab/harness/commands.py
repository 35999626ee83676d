"""The scenario language's commands: each a small function `cmd_x(run, command, step, args)`, in the table COMMANDS
that lab.harness.scenario.Run dispatches on; expectations record an Outcome, actions raise on misuse."""

from __future__ import annotations

import random
from typing import Any, Callable, Protocol

from lab.core import reasons
from lab.core.events import DISK_FULL, DISK_OK, FSYNC_FAIL, READ_SERVED, TRUNCATED, WRITE_ACKED
from lab.core.reasons import NODE_SAYS, Reason, Reasons, SERVED
from lab.core.invariants import safety_violations
from lab.core.monitor import check_trace
from lab.core.messages import digest


class Run(Protocol):
    """What a command may use of the run it is a step of: lab.harness.scenario.Run's public interface."""

    driver: Any  # the lab.harness.scenario.ScenarioDriver it runs on
    rng: random.Random
    last_killed: str | None

    def nodes(self, spec: str) -> list[str]: ...
    def wait(self, what, predicate: Callable[[dict], bool]) -> None: ...
    def record(self, step: int, command, ok: bool, detail="") -> None: ...


class ScenarioError(Exception):
    """A script that cannot be parsed or a command that cannot run."""


class WaitTimeout(Exception):
    """What a step needed did not happen in time (a wait, a write, a leader): its outcome fails and the run ends."""


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
        target = run.nodes(words[i + 1])[0]
        words = words[:i] + words[i + 2:]
    for payload in words:
        answer = run.driver.write(payload, target, wait=wait)
        if wait and (answer is None or not answer.ok):
            raise WaitTimeout(Reason(reasons.WRITE_NOT_ACKNOWLEDGED, payload=payload,
                                     error=answer.error if answer else "no answer"))


def cmd_kill(run: Run, command, step, args):
    for name in run.nodes(args[0]):
        run.driver.cluster.kill(name, lose_unsynced="lose-unsynced" in args)
        run.last_killed = name


def _each(action: str):
    def command(run: Run, command, step, args):
        for name in run.nodes(args[0]):
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
        among = set(run.nodes(args[2])) if len(args) > 2 and args[1] in ("in", "among") else None
        if len(args) == 2:
            among = set(run.nodes(args[1]))
        run.wait(Reason(reasons.A_LEADER_AMONG, nodes=",".join(sorted(among))) if among else Reason(reasons.A_LEADER),
                  lambda s: s.get("leader") is not None and (among is None or s["leader"] in among))
    elif what in ("hwm", "log_end"):
        (_, value), spec = _on(args)
        target = int(value)
        names = run.nodes(spec)
        run.wait(Reason(reasons.HWM_ON if what == "hwm" else reasons.LOG_END_ON, count=target, nodes=",".join(names)),
                  lambda s: all(_node(s, n)[what] >= target for n in names))
    elif what == "converged":
        run.wait(Reason(reasons.WHOLE_LOG), _converged)
    elif what == "stopped":
        names = run.nodes(args[1])
        run.wait(Reason(reasons.TO_STOP, nodes=names),
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
        got = {n: _node(status, n)["hwm"] for n in run.nodes(spec)}
        ok = all(v == int(value) for v in got.values())
        detail = ", ".join(f"{n}: {v}" for n, v in got.items())
    elif what == "log":
        payloads, spec = _on(rest)
        got = {n: [e[2] for e in _node(status, n)["log"]] for n in run.nodes(spec)}
        ok = all(v == payloads for v in got.values())
        detail = "; ".join(f"{n}: [{', '.join(v)}]" for n, v in got.items())
    elif what == "read":
        (index, *want), spec = _on(rest)
        details = []
        for name in run.nodes(spec):
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
        among = run.nodes(rest[-1])
        ok = status.get("leader") in among
        detail = Reason(reasons.LEADER_IS, leader=status.get("leader"))
    elif what == "generation":
        (op, value), spec = _on(rest)
        got = {n: _node(status, n)["generation"] for n in run.nodes(spec)}
        ok = all(v >= int(value) for v in got.values())
        detail = ", ".join(f"{n}: {v}" for n, v in got.items())
    elif what == TRUNCATED:
        (index,), spec = _on(rest)
        names = run.nodes(spec)
        hits = [e for e in run.driver.events() if e["type"] == TRUNCATED and e["node"] in names
                and e["from_index"] == int(index)]
        ok = len(hits) > 0
        detail = Reasons(Reason(reasons.REMOVED_ENTRIES, node=e["node"], entries=Reasons(
            (Reason(reasons.ENTRY_AT, index=i, generation=g) for i, g, _ in e["removed"]), ", "), reason=e["reason"])
            for e in hits) if hits else Reason(reasons.NO_TRUNCATION)
    elif what == "not-truncated":
        names = run.nodes(_on(rest)[1])
        hits = [e for e in run.driver.events() if e["type"] == TRUNCATED and e["node"] in names]
        ok = not hits
        detail = Reasons(Reason(reasons.REMOVED_FROM, node=e["node"], index=e["from_index"], reason=e["reason"])
                         for e in hits)
    elif what == "never-served":
        target = digest(rest[0])
        hits = [e for e in run.driver.events() if e["type"] == READ_SERVED and e["entry"][2] == target]
        ok = not hits
        detail = Reasons(Reason(reasons.SERVED_AT, node=e["node"], index=e["index"]) for e in hits)
    elif what == "acked-survive":
        acked = {e["digest"]: e for e in run.driver.events() if e["type"] == WRITE_ACKED}
        missing = []
        for node in status["nodes"]:
            if node["state"] != "running":
                continue
            held = {digest(e[2]) for e in node["log"]}
            missing += [Reason(reasons.LACKS_INDEX, node=node["id"], index=e["index"]) for d, e in acked.items()
                        if d not in held]
        ok = not missing
        detail = (Reason(reasons.ACKED_WRITES_MISSING, count=len(acked), missing=Reasons(missing[:5])) if missing
                  else Reason(reasons.ACKED_WRITES, count=len(acked)))
    elif what == "logs-agree":
        live = [n for n in status["nodes"] if n["state"] == "running"]
        logs = {n["id"]: [tuple(e) for e in n["log"]] for n in live}
        first = next(iter(logs.values()), [])
        ok = all(v == first for v in logs.values())
        if not ok:
            detail = "; ".join(f"{n}: {[e[2] for e in v]}" for n, v in logs.items())
    elif what == "stopped":  # expect stopped A "fsync failed": A stopped on its own, for that reason
        names, want = run.nodes(rest[0]), rest[1] if len(rest) > 1 else ""
        got = {n: (_node(status, n)["state"], _node(status, n).get("exit_reason") or "") for n in names}
        ok = all(state == "exited" and reason.startswith(want) for state, reason in got.values())
        detail = Reasons(Reason(reasons.STOPPED_BECAUSE, node=n, why=reason) if state == "exited" and reason
                         else Reason(reasons.NODE_IS, node=n, state=state) for n, (state, reason) in got.items())
    elif what == "not-acked":  # expect not-acked d2: no node acknowledged that write
        hits = [e for e in run.driver.events() if e["type"] == WRITE_ACKED and e["digest"] == digest(rest[0])]
        ok = not hits
        detail = Reasons(Reason(reasons.ACKED_AT, node=e["node"], index=e["index"]) for e in hits)
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
    run.record(step, command, bool(ok), detail)


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
