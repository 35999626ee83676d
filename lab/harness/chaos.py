"""The nemesis: a seeded run of random faults against a cluster of real node processes under concurrent writes and
reads, then a check of what the clients were told against the nodes' final logs and the trace."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from lab.processes.client import ControlClient
from lab.core.events import BECAME_LEADER, ELECTION_STARTED, NODE_EXITED, PREVOTE_STARTED
from lab.harness.checker import Fault, ReadRecord, Verdict, WriteRecord, check, leader_gaps, read_trace
from lab.harness.nemesis import Clients, Nemesis

ELECTION_RATIO = 3  # target: elections started < 3 x elections won


@dataclass
class Report:
    options: dict
    faults: list[Fault]
    writes: list[WriteRecord]
    reads: list[ReadRecord]
    verdict: Verdict
    elections_started: int
    elections_won: int
    prevotes_started: int  # pre-vote rounds (Raft thesis 9.6): asked before an election, which they may spare
    leader_gaps: list[tuple[float, float]]  # (time of the kill, seconds to a new leader)
    leader_kills_without_successor: int
    node_exits: list[dict]
    converged: bool
    settle_seconds: float
    final: dict[str, dict]
    not_live: list[str]
    pids: list[int]
    run_dir: str

    @property
    def targets(self) -> list[tuple[str, str, str, bool]]:
        """(name, measured, target, met) for each acceptance figure."""
        v = self.verdict
        ratio_ok = self.elections_started < ELECTION_RATIO * self.elections_won
        return [
            ("acknowledged writes lost", str(len(v.lost)), "0", not v.lost),
            ("violations", str(len(v.violations)), "0", not v.violations),
            ("elections started < 3 x won", f"{self.elections_started} started, {self.elections_won} won",
             f"< {ELECTION_RATIO * self.elections_won}", ratio_ok),
            ("converged after the faults", f"{'yes' if self.converged else 'no'} ({self.settle_seconds:.1f} s)",
             "yes", self.converged),
        ]


def run(options: argparse.Namespace | dict, *, out=print) -> Report:
    """One nemesis run; every process it starts is stopped before it returns, also on failure."""
    from lab.processes.supervisor import Supervisor  # here, so `hwm-lab` itself starts fast

    o = dict(vars(options) if isinstance(options, argparse.Namespace) else options)
    o = {**DEFAULTS, **{k: v for k, v in o.items() if k in DEFAULTS}}
    temporary = not o["dir"]
    run_dir = Path(o["dir"] or tempfile.mkdtemp(prefix="hwm-chaos-"))
    supervisor = Supervisor(run_dir, nodes=o["nodes"], impl=o["impl"], fsync=o["fsync"],
                            truncation=o["truncation"], seed=o["seed"], fresh=True, cluster_file=False,
                            meta={"run": f"chaos-seed{o['seed']}"})
    pids: set[int] = set()
    clients = None
    report = None
    try:
        supervisor.start()
        pids.update(supervisor.pids())
        names = supervisor.names
        api = ControlClient(supervisor.control_url, timeout=30.0, token=supervisor.api_token)
        if not supervisor.wait_for_leader(30.0):
            raise RuntimeError("no leader was elected within 30 s of the start")
        nemesis = Nemesis(api, names, random.Random(o["seed"]), supervisor.start_time,
                          max_down=o["max_down"] if o["max_down"] is not None else (len(names) - 1) // 2,
                          storage=bool(o["storage"]))
        clients = Clients(api, names, o["seed"], o["writers"], o["readers"], o["write_timeout"])
        clients.start()
        out(f"nemesis: {len(names)} nodes, impl {o['impl']}, fsync {o['fsync']}, seed {o['seed']}: "
            f"{o['duration']:g} s of faults every ~{o['interval']:g} s, {o['writers']} writers, {o['readers']} "
            f"readers{'; storage faults too' if o['storage'] else ''}; run directory {run_dir}")
        end = time.monotonic() + o["duration"]
        next_report = time.monotonic() + 30.0
        while time.monotonic() < end:
            time.sleep(min(max(0.0, end - time.monotonic()), nemesis.rng.uniform(0.2, 1.8) * o["interval"]))
            if time.monotonic() >= end:
                break
            nemesis.step()
            pids.update(supervisor.pids())
            if time.monotonic() >= next_report:
                next_report += 30.0
                acked = sum(w.ok for w in clients.writes)
                out(f"  {o['duration'] - (end - time.monotonic()):5.0f} s: {len(nemesis.faults)} faults, "
                    f"{acked} writes acknowledged")
        clients.stop(o["write_timeout"] + 15)
        nemesis.recover()
        pids.update(supervisor.pids())
        converged, settle_seconds = _settle(api, clients, o["settle"])
        state = api.state(log="all")
        final = {n["id"]: {"log": n["log"], "hwm": n["hwm"]} for n in state["nodes"] if n["state"] == "running"}
        not_live = [f"{n['id']} ({n['state']})" for n in state["nodes"] if n["state"] != "running"]
        pids.update(supervisor.pids())
        supervisor.stop()
        events = read_trace(run_dir)
        verdict = check(clients.writes, clients.reads, events, final, size=len(names))
        gaps, without = leader_gaps(nemesis.faults, events)
        report = Report(
            options=o, faults=nemesis.faults, writes=list(clients.writes), reads=list(clients.reads),
            verdict=verdict, elections_started=sum(e["type"] == ELECTION_STARTED for e in events),
            elections_won=sum(e["type"] == BECAME_LEADER for e in events),
            prevotes_started=sum(e["type"] == PREVOTE_STARTED for e in events), leader_gaps=gaps,
            leader_kills_without_successor=without,
            node_exits=[e for e in events if e["type"] == NODE_EXITED], converged=converged,
            settle_seconds=settle_seconds, final=final, not_live=not_live, pids=sorted(pids),
            run_dir=str(run_dir))
        return report
    finally:
        if clients is not None:
            clients.stopping.set()
        pids.update(supervisor.pids())
        try:
            supervisor.stop()
        finally:
            supervisor.kill_leftovers()
            keep = report is None or not all(met for *_, met in report.targets[:2])
            if temporary and not keep and not o["keep"]:
                shutil.rmtree(run_dir, ignore_errors=True)


def _settle(api: ControlClient, clients: Clients, timeout: float) -> tuple[bool, float]:
    """After the faults: wait until every node runs, a write of the last leader is committed, and every node holds
    the whole log, committed. Returns (converged, seconds it took)."""
    start = time.monotonic()
    last_write = None
    written_at = count = 0
    while time.monotonic() - start < timeout:
        state = api.state(log=0)
        nodes = state["nodes"]
        leader = state["leader"]
        if leader and all(n["state"] == "running" for n in nodes):
            end = next(n["log_end"] for n in nodes if n["id"] == leader)
            if last_write is not None and last_write.ok and all(n["log_end"] == end == n["hwm"] for n in nodes):
                return True, time.monotonic() - start
            if last_write is None or not last_write.ok or time.monotonic() - written_at > 2.0:
                count += 1
                last_write = clients.write(api, "settle", f"{clients.seed}.settle.{count}")
                written_at = time.monotonic()
        time.sleep(0.1)
    return False, time.monotonic() - start


def print_report(report: Report, out=print) -> None:
    v = report.verdict
    kinds = Counter(f.op for f in report.faults if not f.refused)
    leader_kills = sum(1 for f in report.faults if f.op in ("kill", "restart") and f.target == f.leader
                       and not f.refused)
    refused = sum(1 for f in report.faults if f.refused)
    out(f"faults    {', '.join(f'{op} {n}' for op, n in sorted(kinds.items()))} ({leader_kills} of the kills and "
        f"restarts hit the leader; {refused} refused by the supervisor)")
    writes, reads = report.writes, report.reads
    failed = Counter(w.refusal for w in writes if not w.ok)
    out(f"writes    {sum(w.ok for w in writes):,} acknowledged, {sum(not w.ok for w in writes):,} not "
        f"({_counts(failed)})")
    refusals = Counter(r.refusal for r in reads if not r.ok)
    out(f"reads     {sum(r.ok for r in reads):,} served, {sum(not r.ok for r in reads):,} refused "
        f"({_counts(refusals)})")
    ratio = report.elections_started / report.elections_won if report.elections_won else float("inf")
    out(f"elections {report.elections_started} started, {report.elections_won} won ({ratio:.1f} started per win)"
        + (f"; {report.prevotes_started} pre-votes asked first" if report.prevotes_started else ""))
    gaps = [gap for _, gap in report.leader_gaps]
    if gaps:
        out(f"leader    killed {len(gaps) + report.leader_kills_without_successor} times: time to a new leader "
            f"median {statistics.median(gaps):.2f} s, max {max(gaps):.2f} s "
            f"({report.leader_kills_without_successor} without a new leader before the end)")
        killed_at, gap = max(report.leader_gaps, key=lambda pair: pair[1])
        meanwhile = [" ".join(filter(None, (f.op, f.target, f.detail))) for f in report.faults
                     if killed_at - 1.0 <= f.time <= killed_at + gap and not f.refused]
        out(f"          the slowest: killed at {killed_at:.1f} s; faults from 1 s before to the new leader: "
            f"{', '.join(meanwhile) or 'none'}")
    else:
        out(f"leader    no leader kill with a successor to time ({report.leader_kills_without_successor} without)")
    exits = Counter(e.get("code") for e in report.node_exits)
    why = Counter(str(e.get("reason") or "?").split(":")[0] for e in report.node_exits)
    out(f"exits     {len(report.node_exits)} node exits on their own"
        + (f" (codes {dict(exits)}; {_counts(why)})" if exits else ""))
    hwms = {node: f["hwm"] for node, f in sorted(report.final.items())}
    out(f"final     {'converged' if report.converged else 'NOT converged'} {report.settle_seconds:.1f} s after the "
        f"faults stopped; high-water marks {hwms}" + (f"; not live: {', '.join(report.not_live)}"
                                                      if report.not_live else ""))
    out(f"check     acknowledged {v.acknowledged:,} (to clients; {v.acked_by_nodes:,} traced by the nodes), lost "
        f"{len(v.lost)}, violations {len(v.violations)}, reads checked {v.reads_served:,} (to clients; "
        f"{v.reads_traced:,} traced)")
    for line in (v.lost[:10] + v.violations[:10]):
        out(f"  {line}")
    if len(v.lost) > 10 or len(v.violations) > 10:
        out("  ...")
    if Path(report.run_dir).exists():
        out(f"trace     kept in {report.run_dir}")
    for name, measured, target, met in report.targets:
        out(f"{'PASS' if met else 'FAIL'}  {name}: {measured} (target {target})")


def _counts(counter: Counter) -> str:
    return ", ".join(f"{kind or '?'} {n}" for kind, n in counter.most_common()) or "none"


DEFAULTS = {"nodes": 5, "duration": 60.0, "seed": 1, "impl": "solutions", "fsync": "always",
            "truncation": "generation", "interval": 1.0, "writers": 4, "readers": 2, "write_timeout": 3.0,
            "max_down": None, "settle": 60.0, "dir": None, "keep": False, "json": False, "storage": False}


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    p.add_argument("--nodes", type=int, default=d["nodes"], help="cluster size, 1 to 7 (default 5)")
    p.add_argument("--duration", type=float, default=d["duration"], help="seconds of faults (default 60)")
    p.add_argument("--seed", type=int, default=d["seed"], help="seed of the nemesis and the nodes (default 1)")
    p.add_argument("--impl", default=d["impl"], help="code under attack: solutions (default), exercises, or a "
                   "module name (the same as `hwm-lab up --impl`)")
    p.add_argument("--fsync", default=d["fsync"], help="fsync policy of the nodes (default always)")
    p.add_argument("--truncation", default=d["truncation"], help="restart truncation strategy (default generation)")
    p.add_argument("--interval", type=float, default=d["interval"], help="mean seconds between faults (default 1)")
    p.add_argument("--writers", type=int, default=d["writers"], help="concurrent writers (default 4)")
    p.add_argument("--readers", type=int, default=d["readers"], help="concurrent readers (default 2)")
    p.add_argument("--write-timeout", type=float, default=d["write_timeout"], help="seconds per write (default 3)")
    p.add_argument("--max-down", type=int, default=d["max_down"],
                   help="most nodes killed or paused at once (default: a minority)")
    p.add_argument("--settle", type=float, default=d["settle"],
                   help="seconds the healed cluster has to converge before the check (default 60)")
    p.add_argument("--storage", action="store_true", help="storage faults too: disk-full and fsync-fail (the node "
                   "stops with the reason, and is restarted after disk-ok)")
    p.add_argument("--dir", help="run directory, kept (default: a temporary one, removed unless the check fails)")
    p.add_argument("--keep", action="store_true", help="keep the temporary run directory")
    p.add_argument("--json", action="store_true", help="print the figures as JSON too")


def command(args: argparse.Namespace) -> int:
    """Run: hwm-lab chaos --nodes 5 --duration 300 [--impl exercises] (or .venv/bin/python bench/chaos.py ...).
    It prints acknowledged and lost writes, violations, elections started and won, and the time to a new leader
    after a leader is killed, and exits 1 when a target is missed. The seed fixes the nemesis's choices; the
    cluster's own timing is real, so two runs with one seed differ in detail."""
    report = run(args)
    print_report(report)
    if args.json:
        gaps = [gap for _, gap in report.leader_gaps]
        print(json.dumps({
            "acknowledged": report.verdict.acknowledged, "lost": len(report.verdict.lost),
            "violations": len(report.verdict.violations), "elections_started": report.elections_started,
            "elections_won": report.elections_won, "prevotes_started": report.prevotes_started,
            "new_leader_median_s": statistics.median(gaps) if gaps else None,
            "new_leader_max_s": max(gaps) if gaps else None, "converged": report.converged,
            "node_exits": len(report.node_exits), "load_average": os.getloadavg(),
            "passed": all(met for *_, met in report.targets)}))
    return 0 if all(met for *_, met in report.targets) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
