"""The nemesis's words (lab.harness.chaos) in the reader's language: its progress while it runs, then its report,
one whole sentence per line (a count of one with a sentence of its own), each figure written as the reader's locale
writes numbers and each list as it writes lists."""

from __future__ import annotations

import statistics
from collections import Counter

from lab.core.reasons import WORDS
from lab.harness.chaos import ELECTION_RATIO, Report
from lab.i18n import Joined, Listed, Text, say, word
from lab.i18n.history import chaos_lines

PASS, FAIL = word("verdict", "PASS"), word("verdict", "FAIL")

FAULTS = {  # a fault by the nemesis's op (lab.harness.nemesis.MOVES, and its own observe and recover)
    "cut": word("fault", "cut"), "cut_one_way": word("fault", "one-way cut"), "isolate": word("fault", "isolate"),
    "delay": word("fault", "delay"), "drop": word("fault", "drop"), "kill": word("fault", "kill"),
    "pause": word("fault", "pause"), "restart_running": word("fault", "restart of a running node"),
    "disk_full": word("fault", "disk full"), "fsync_fail": word("fault", "fsync fail"),
    "restart": word("fault", "restart"), "resume": word("fault", "resume"), "heal": word("fault", "heal"),
    "calm": word("fault", "calm"), "wait": word("fault", "wait"), "observe": word("fault", "observe"),
    "recover": word("fault", "recover"),
}
REFUSALS = {  # a client's refusal by its kind (lab.core.reasons.REFUSALS)
    "timeout": word("refusal", "timeout"), "not_leader": word("refusal", "not the leader"),
    "above_hwm": word("refusal", "above the high-water mark"), "no_such_index": word("refusal", "no such index"),
    "read_refused": word("refusal", "read refused"), "leadership_lost": word("refusal", "leadership lost"),
    "node_down": word("refusal", "node down"), "unreachable": word("refusal", "unreachable"),
    "generation_uncommitted": word("refusal", "no entry of the leader's generation committed yet"),
}
LINEARIZABLE = {"yes": say("yes"), "no": say("no"), "not decided": say("not decided")}  # Report.targets' answer
EXITS = {"disk full": word("exit", "disk full"), "fsync failed": word("exit", "fsync failed")}  # a node's exit
# by the first words of its reason (lab.ports.disk_faults)


def progress(kind: str, **values) -> Text:
    """What the run says while it runs (lab.harness.chaos.run's `out`); its counts are figures after their names,
    so no word follows a count (1 node, 2 nodes)."""
    if kind == "started":
        if values.pop("linearizable", False):
            values["readers"] = say("{readers} (linearizable reads)", readers=values["readers"])
        if values.pop("storage"):
            return say("nemesis: nodes {nodes}, impl {impl}, fsync {fsync}, seed {seed}; faults for {duration} s, "
                       "one every ~{interval} s, storage faults too; writers {writers}, readers {readers}; run "
                       "directory {dir}", **values)
        return say("nemesis: nodes {nodes}, impl {impl}, fsync {fsync}, seed {seed}; faults for {duration} s, one "
                   "every ~{interval} s; writers {writers}, readers {readers}; run directory {dir}", **values)
    return say("  {seconds} s: faults {faults}, writes acknowledged {acked}", **values)


def _counted(name, count: int) -> Text:
    """One item of a list of counts: "kill 2" (in Chinese "杀死 2 次")."""
    return say("{name} {count}", name=name, count=count)


def _counts(counter: Counter, names: dict):
    if not counter:
        return say("none")
    return Listed(_counted(names.get(kind, kind or "?"), n) for kind, n in counter.most_common())


def _seconds(value: float) -> float:
    return round(value, 2)


def report(r: Report) -> Joined:
    """The report: the faults, the clients' writes and reads, the elections, the time to a new leader, the nodes'
    exits, the end state, the check, and each target met or missed."""
    faults = [f for f in r.faults if not f.refused]
    kinds = Counter(f.op for f in faults)
    lines = [say("faults    {kinds} ({leader_kills} of the kills and restarts hit the leader; {refused} refused by "
                 "the supervisor)", kinds=Listed(_counted(FAULTS.get(op, op), n) for op, n in sorted(kinds.items()))
                 if kinds else say("none"),
                 leader_kills=sum(f.op in ("kill", "restart") and f.target == f.leader for f in faults),
                 refused=len(r.faults) - len(faults))]
    lines.append(say("writes    {ok} acknowledged, {not_ok} not ({why})", ok=sum(w.ok for w in r.writes),
                     not_ok=sum(not w.ok for w in r.writes), why=_counts(Counter(w.refusal for w in r.writes
                                                                                 if not w.ok), REFUSALS)))
    lines.append(say("reads     {ok} served, {not_ok} refused ({why})", ok=sum(x.ok for x in r.reads),
                     not_ok=sum(not x.ok for x in r.reads),
                     why=_counts(Counter(x.refusal for x in r.reads if not x.ok), REFUSALS)))
    if r.history is not None:
        lines += chaos_lines(r.history)
    lines.append(_elections(r))
    lines += _leaders(r)
    lines.append(_exits(r))
    lines.append(_final(r))
    lines += _check(r)
    for name, measured, target, met in _targets(r):
        lines.append(say("{mark}  {name}: {measured} (target {target})", mark=PASS if met else FAIL, name=name,
                         measured=measured, target=target))
    return Joined(lines, "\n")


def _elections(r: Report) -> Text:
    values = dict(started=r.elections_started, won=r.elections_won,
                  ratio=round(r.elections_started / r.elections_won, 1) if r.elections_won else "∞")
    if r.prevotes_started == 1:
        return say("elections {started} started, {won} won ({ratio} started per win); 1 pre-vote asked first",
                   **values)
    if r.prevotes_started:
        return say("elections {started} started, {won} won ({ratio} started per win); {prevotes} pre-votes asked "
                   "first", prevotes=r.prevotes_started, **values)
    return say("elections {started} started, {won} won ({ratio} started per win)", **values)


def _leaders(r: Report) -> list[Text]:
    gaps = [gap for _, gap in r.leader_gaps]
    if not gaps:
        if not r.leader_kills_without_successor:
            return [say("leader    no leader was killed, so there is no time to a new leader to measure")]
        return [say("leader    no new leader before the end after a leader was killed ({without} times), so there "
                    "is no time to a new leader to measure", without=r.leader_kills_without_successor)]
    killed_at, gap = max(r.leader_gaps, key=lambda pair: pair[1])
    meanwhile = [_fault(f) for f in r.faults if killed_at - 1.0 <= f.time <= killed_at + gap and not f.refused]
    kills, values = len(gaps) + r.leader_kills_without_successor, dict(
        median=_seconds(statistics.median(gaps)), max=_seconds(max(gaps)), without=r.leader_kills_without_successor)
    return [say("leader    killed once: time to a new leader {max} s ({without} without a new leader before the end)",
                **values) if kills == 1 else
            say("leader    killed {kills} times: time to a new leader median {median} s, max {max} s ({without} "
                "without a new leader before the end)", kills=kills, **values),
            say("          the slowest: killed at {at} s; faults from 1 s before to the new leader: {faults}",
                at=round(killed_at, 1), faults=Listed(meanwhile) if meanwhile else say("none"))]


def _fault(f) -> Text:
    """A fault as the report lists it: its name, its target and what it set ("delay A->B 30 ms")."""
    name, target = FAULTS.get(f.op, f.op), f.target
    detail = (say("{delay} ms", delay=f.delay_ms) if f.delay_ms is not None else
              say("loss rate {rate}", rate=f.drop_rate) if f.drop_rate is not None else
              say("after disk ok") if f.after_disk_ok else "")
    if target == "*":  # every link
        return say("{fault} on every link ({detail})", fault=name, detail=detail) if detail else \
            say("{fault} on every link", fault=name)
    if target and detail:
        return say("{fault} {target} {detail}", fault=name, target=target, detail=detail)
    if target or detail:
        return say("{fault} {target}", fault=name, target=target or detail)
    return name


def _exits(r: Report) -> Text:
    if not r.node_exits:
        return say("exits     no node exited on its own")
    codes = Counter(e.get("code") for e in r.node_exits)
    why = _counts(Counter(str(e.get("reason") or "?").split(":")[0] for e in r.node_exits), EXITS)
    codes = Listed(f"{code} ×{n}" for code, n in sorted(codes.items(), key=lambda pair: str(pair[0])))
    if len(r.node_exits) == 1:
        return say("exits     1 node exited on its own (code {codes}; {why})", codes=codes, why=why)
    return say("exits     {count} node exits on their own (codes {codes}; {why})", count=len(r.node_exits),
               codes=codes, why=why)


def _final(r: Report) -> Text:
    values = dict(seconds=round(r.settle_seconds, 1), hwms=Listed(say("{node} at {hwm}", node=node, hwm=f["hwm"])
                                                                  for node, f in sorted(r.final.items())))
    if r.not_live:
        values["not_live"] = Listed(_not_live(item) for item in r.not_live)
        return (say("final     converged {seconds} s after the faults stopped; high-water marks {hwms}; not live: "
                    "{not_live}", **values) if r.converged else
                say("final     NOT converged {seconds} s after the faults stopped; high-water marks {hwms}; not "
                    "live: {not_live}", **values))
    return (say("final     converged {seconds} s after the faults stopped; high-water marks {hwms}", **values)
            if r.converged else
            say("final     NOT converged {seconds} s after the faults stopped; high-water marks {hwms}", **values))


def _not_live(item: tuple[str, str]):
    """A node not running at the end, "B (killed)", with its state said as the lanes say it."""
    node, state = item
    return say("{node} ({state})", node=node, state=word("state", state) if state in WORDS["state"] else state)


def _check(r: Report) -> list:
    v = r.verdict
    lines: list = [say("check     acknowledged {acked} (to clients; {traced} traced by the nodes), lost {lost}, "
                       "violations {violations}, reads checked {reads} (to clients; {reads_traced} traced)",
                       acked=v.acknowledged, traced=v.acked_by_nodes, lost=len(v.lost),
                       violations=len(v.violations), reads=v.reads_served, reads_traced=v.reads_traced)]
    lines += [Joined(["  ", line], "") for line in v.lost[:10] + v.violations[:10]]
    if len(v.lost) > 10 or len(v.violations) > 10:
        lines.append("  ...")
    from pathlib import Path

    if Path(r.run_dir).exists():
        lines.append(say("trace     kept in {dir}", dir=r.run_dir))
    return lines


def _targets(r: Report) -> list[tuple]:
    """Report.targets, each said: its name, what was measured and the target."""
    v, (lost, violations, ratio, converged, *history) = r.verdict, r.targets
    said = [(say("stale reads"), int(history[0][1]), 0, history[0][3]),
            (say("linearizable"), LINEARIZABLE[history[1][1]], say("yes"), history[1][3])] if history else []
    return [
        (say("acknowledged writes lost"), len(v.lost), 0, lost[3]),
        (say("violations"), len(v.violations), 0, violations[3]),
        (say("elections started < 3 x won"), say("{started} started, {won} won", started=r.elections_started,
                                                 won=r.elections_won),
         f"< {ELECTION_RATIO * r.elections_won}", ratio[3]),
        (say("converged after the faults"), say("yes ({seconds} s)", seconds=round(r.settle_seconds, 1))
         if r.converged else say("no ({seconds} s)", seconds=round(r.settle_seconds, 1)), say("yes"), converged[3]),
    ] + said
