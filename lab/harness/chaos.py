"""The nemesis: a seeded run of random faults against a cluster of real node processes under concurrent writes and
reads, then a check of what the clients were told against the nodes' final logs and the trace."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lab.processes.client import ControlClient
from lab.core.events import BECAME_LEADER, ELECTION_STARTED, NODE_EXITED, PREVOTE_STARTED
from lab.harness.checker import Fault, ReadRecord, Verdict, WriteRecord, check, leader_gaps, read_trace
from lab.harness.history import STALE, History, check_dir as check_history
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
    not_live: list[tuple[str, str]]  # (node, its state) of each node not running at the end
    pids: list[int]
    run_dir: str
    history: History | None = None  # the clients' history (lab.harness.history), read from the trace

    @property
    def targets(self) -> list[tuple[str, str, str, bool]]:
        """(name, measured, target, met) for each acceptance figure; with linearizable reads, also no stale read
        and a linearizable history (plain reads may be stale: the pattern allows it)."""
        v = self.verdict
        ratio_ok = self.elections_started < ELECTION_RATIO * self.elections_won
        found = [
            ("acknowledged writes lost", str(len(v.lost)), "0", not v.lost),
            ("violations", str(len(v.violations)), "0", not v.violations),
            ("elections started < 3 x won", f"{self.elections_started} started, {self.elections_won} won",
             f"< {ELECTION_RATIO * self.elections_won}", ratio_ok),
            ("converged after the faults", f"{'yes' if self.converged else 'no'} ({self.settle_seconds:.1f} s)",
             "yes", self.converged),
        ]
        if self.options.get("linearizable") and self.history is not None:
            stale, linearizable = len(self.history.of_verdict(STALE)), self.history.linearizable
            found += [("stale reads", str(stale), "0", stale == 0),
                      ("linearizable", {True: "yes", False: "no", None: "not decided"}[linearizable], "yes",
                       linearizable is True)]
        return found


def run(options: argparse.Namespace | dict, *, out) -> Report:
    """One nemesis run; every process it starts is stopped before it returns, also on failure. `out(kind, **values)`
    hears how it goes ("started", then "progress" every 30 s; lab.i18n.chaos says them)."""
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
        clients = Clients(api, names, o["seed"], o["writers"], o["readers"], o["write_timeout"],
                          linearizable=bool(o["linearizable"]))
        clients.start()
        out("started", nodes=len(names), impl=o["impl"], fsync=o["fsync"], seed=o["seed"], duration=o["duration"],
            interval=o["interval"], writers=o["writers"], readers=o["readers"], storage=bool(o["storage"]),
            linearizable=bool(o["linearizable"]), dir=str(run_dir))
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
                out("progress", seconds=round(o["duration"] - (end - time.monotonic())), faults=len(nemesis.faults),
                    acked=acked)
        clients.stop(o["write_timeout"] + 15)
        nemesis.recover()
        pids.update(supervisor.pids())
        converged, settle_seconds = _settle(api, clients, o["settle"])
        state = api.state(log="all")
        final = {n["id"]: {"log": n["log"], "hwm": n["hwm"]} for n in state["nodes"] if n["state"] == "running"}
        not_live = [(n["id"], n["state"]) for n in state["nodes"] if n["state"] != "running"]
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
            run_dir=str(run_dir), history=check_history(run_dir))
        return report
    finally:
        if clients is not None:
            clients.stopping.set()
        pids.update(supervisor.pids())
        try:
            supervisor.stop()
        finally:
            supervisor.kill_leftovers()
            keep = report is None or not all(met for *_, met in report.targets[:2]) or \
                not all(met for *_, met in report.targets[4:])
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


DEFAULTS = {"nodes": 5, "duration": 60.0, "seed": 1, "impl": "solutions", "fsync": "always",
            "truncation": "generation", "interval": 1.0, "writers": 4, "readers": 2, "write_timeout": 3.0,
            "max_down": None, "settle": 60.0, "dir": None, "keep": False, "json": False, "storage": False,
            "linearizable": False}


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    p.add_argument("--nodes", type=int, default=d["nodes"], help="cluster size, 1 to 7 (default 5)")
    p.add_argument("--duration", type=float, default=d["duration"], help="seconds of faults (default 60)")
    p.add_argument("--seed", type=int, default=d["seed"], help="seed of the nemesis and the nodes (default 1)")
    p.add_argument("--impl", default=d["impl"], help="code under attack: solutions (default), exercises, or a "
                   "module name (the same as `hwm-lab up --impl`)")
    p.add_argument("--fsync", default=d["fsync"], help="fsync policy of the nodes (default always)")
    p.add_argument("--truncation", default=d["truncation"], help="restart truncation strategy (default `generation`)")
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
    p.add_argument("--linearizable", action="store_true", help="every read asks the leader, which confirms it still "
                   "leads before it serves (then no read may be stale, and the history must be linearizable)")
    p.add_argument("--dir", help="run directory, kept (default: a temporary one, removed unless the check fails)")
    p.add_argument("--keep", action="store_true", help="keep the temporary run directory")
    p.add_argument("--json", action="store_true", help="print the figures as JSON too")


def command(args: argparse.Namespace, *, out, show) -> int:
    """Run: hwm-lab chaos --nodes 5 --duration 300 [--impl exercises] (or .venv/bin/python bench/chaos.py ...).
    `show(report)` prints acknowledged and lost writes, violations, elections started and won, and the time to a new
    leader after a leader is killed (lab.i18n.chaos); it exits 1 when a target is missed. The seed fixes the
    nemesis's choices; the cluster's own timing is real, so two runs with one seed differ in detail."""
    report = run(args, out=out)
    show(report)
    if args.json:
        gaps = [gap for _, gap in report.leader_gaps]
        print(json.dumps({
            "acknowledged": report.verdict.acknowledged, "lost": len(report.verdict.lost),
            "violations": len(report.verdict.violations), "elections_started": report.elections_started,
            "elections_won": report.elections_won, "prevotes_started": report.prevotes_started,
            "new_leader_median_s": statistics.median(gaps) if gaps else None,
            "new_leader_max_s": max(gaps) if gaps else None, "converged": report.converged,
            "node_exits": len(report.node_exits), "load_average": os.getloadavg(),
            "history": report.history.summary() if report.history is not None else None,
            "passed": all(met for *_, met in report.targets)}))
    return 0 if all(met for *_, met in report.targets) else 1
