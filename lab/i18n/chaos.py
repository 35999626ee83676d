"""The nemesis's words (lab.harness.chaos) in the reader's language: its progress while it runs, then its report,
one whole sentence per line, each figure written as the reader's locale writes numbers."""

from __future__ import annotations

import statistics
from collections import Counter

from lab.harness.chaos import ELECTION_RATIO, Report
from lab.i18n import Joined, Text, say, word

PASS, FAIL = word("verdict", "PASS"), word("verdict", "FAIL")


def progress(kind: str, **values) -> Text:
    """What the run says while it runs (lab.harness.chaos.run's `out`)."""
    if kind == "started":
        if values.pop("storage"):
            return say("nemesis: {nodes} nodes, impl {impl}, fsync {fsync}, seed {seed}: {duration} s of faults "
                       "every ~{interval} s, {writers} writers, {readers} readers; storage faults too; run "
                       "directory {dir}", **values)
        return say("nemesis: {nodes} nodes, impl {impl}, fsync {fsync}, seed {seed}: {duration} s of faults every "
                   "~{interval} s, {writers} writers, {readers} readers; run directory {dir}", **values)
    return say("  {seconds} s: {faults} faults, {acked} writes acknowledged", **values)


def _counts(counter: Counter):
    if not counter:
        return say("none")
    return ", ".join(f"{kind or '?'} {n}" for kind, n in counter.most_common())


def _seconds(value: float) -> float:
    return round(value, 2)


def report(r: Report) -> Joined:
    """The report: the faults, the clients' writes and reads, the elections, the time to a new leader, the nodes'
    exits, the end state, the check, and each target met or missed."""
    faults = [f for f in r.faults if not f.refused]
    kinds = Counter(f.op for f in faults)
    lines = [say("faults    {kinds} ({leader_kills} of the kills and restarts hit the leader; {refused} refused by "
                 "the supervisor)", kinds=", ".join(f"{op} {n}" for op, n in sorted(kinds.items())),
                 leader_kills=sum(f.op in ("kill", "restart") and f.target == f.leader for f in faults),
                 refused=len(r.faults) - len(faults))]
    lines.append(say("writes    {ok} acknowledged, {not_ok} not ({why})", ok=sum(w.ok for w in r.writes),
                     not_ok=sum(not w.ok for w in r.writes), why=_counts(Counter(w.refusal for w in r.writes
                                                                                 if not w.ok))))
    lines.append(say("reads     {ok} served, {not_ok} refused ({why})", ok=sum(x.ok for x in r.reads),
                     not_ok=sum(not x.ok for x in r.reads),
                     why=_counts(Counter(x.refusal for x in r.reads if not x.ok))))
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
    if r.prevotes_started:
        return say("elections {started} started, {won} won ({ratio} started per win); {prevotes} pre-votes asked "
                   "first", prevotes=r.prevotes_started, **values)
    return say("elections {started} started, {won} won ({ratio} started per win)", **values)


def _leaders(r: Report) -> list[Text]:
    gaps = [gap for _, gap in r.leader_gaps]
    if not gaps:
        return [say("leader    no leader kill with a successor to time ({without} without)",
                    without=r.leader_kills_without_successor)]
    killed_at, gap = max(r.leader_gaps, key=lambda pair: pair[1])
    meanwhile = [" ".join(filter(None, (f.op, f.target, f.detail))) for f in r.faults
                 if killed_at - 1.0 <= f.time <= killed_at + gap and not f.refused]
    return [say("leader    killed {kills} times: time to a new leader median {median} s, max {max} s ({without} "
                "without a new leader before the end)", kills=len(gaps) + r.leader_kills_without_successor,
                median=_seconds(statistics.median(gaps)), max=_seconds(max(gaps)),
                without=r.leader_kills_without_successor),
            say("          the slowest: killed at {at} s; faults from 1 s before to the new leader: {faults}",
                at=round(killed_at, 1), faults=", ".join(meanwhile) if meanwhile else say("none"))]


def _exits(r: Report) -> Text:
    if not r.node_exits:
        return say("exits     {count} node exits on their own", count=0)
    codes = Counter(e.get("code") for e in r.node_exits)
    why = Counter(str(e.get("reason") or "?").split(":")[0] for e in r.node_exits)
    return say("exits     {count} node exits on their own (codes {codes}; {why})", count=len(r.node_exits),
               codes=dict(codes), why=_counts(why))


def _final(r: Report) -> Text:
    values = dict(seconds=round(r.settle_seconds, 1), hwms={node: f["hwm"] for node, f in sorted(r.final.items())})
    if r.not_live:
        values["not_live"] = ", ".join(r.not_live)
        return (say("final     converged {seconds} s after the faults stopped; high-water marks {hwms}; not live: "
                    "{not_live}", **values) if r.converged else
                say("final     NOT converged {seconds} s after the faults stopped; high-water marks {hwms}; not "
                    "live: {not_live}", **values))
    return (say("final     converged {seconds} s after the faults stopped; high-water marks {hwms}", **values)
            if r.converged else
            say("final     NOT converged {seconds} s after the faults stopped; high-water marks {hwms}", **values))


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
    v, (lost, violations, ratio, converged) = r.verdict, r.targets
    return [
        (say("acknowledged writes lost"), len(v.lost), 0, lost[3]),
        (say("violations"), len(v.violations), 0, violations[3]),
        (say("elections started < 3 x won"), say("{started} started, {won} won", started=r.elections_started,
                                                 won=r.elections_won),
         f"< {ELECTION_RATIO * r.elections_won}", ratio[3]),
        (say("converged after the faults"), say("yes ({seconds} s)", seconds=round(r.settle_seconds, 1))
         if r.converged else say("no ({seconds} s)", seconds=round(r.settle_seconds, 1)), say("yes"), converged[3]),
    ]
