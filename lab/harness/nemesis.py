"""The nemesis: a seeded run of random faults against a cluster of real node processes under concurrent writes and
reads, then a check of what the clients were told against the nodes' final logs and the trace.

Faults, from the vocabulary of lab/ports/cluster.py and sent through the control API (ControlClient) of a supervisor
this module starts: SIGKILL (leaders often), restart, pause and resume, two-way and one-way cuts, isolation,
heal, delays and drops; with --storage also a full disk and a failed fsync (disk-full, fsync-fail: the node
stops, and is restarted after disk-ok). The checker below is written from the trace format and the clients' own
records, not from the replica's code (lab/core/invariants.py is deliberately not used): a bug there must not hide a bug here.

Run: hwm-lab chaos --nodes 5 --duration 300 [--impl exercises] (or .venv/bin/python bench/chaos.py ...).
It prints acknowledged and lost writes, violations, elections started and won, and the time to a new leader after
a leader is killed, and exits 1 when a target is missed. The seed fixes the nemesis's choices; the cluster's own
timing is real, so two runs with one seed differ in detail. Maelstrom's nemesis is the model.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lab.core.messages import digest
from lab.core.monitor import check_trace
from lab.ports.trace import parse_line
from lab.processes.client import ApiError, ClusterUnavailable, ControlClient
from lab.core.events import (
    BECAME_LEADER, DISK_FULL, ELECTION_STARTED, EPOCH_ANSWER, EPOCH_TRUNCATION, FSYNC_FAIL, HWM_CHANGED,
    MATCH_INDEX_UPDATED, NODE_EXITED, NODE_KILLED, NODE_STARTED, PREVOTE_STARTED, READ_REFUSED, READ_SERVED,
    SERVED_ABOVE_HWM, TRUNCATED, TWO_LEADERS, WAL_TRUNCATED, WRITE_ACKED, Reason)

ELECTION_RATIO = 3  # target: elections started < 3 x elections won


# ---- what the clients saw ----------------------------------------------------------------------------------


@dataclass
class WriteRecord:
    client: str
    payload: str
    ok: bool
    index: int = 0
    generation: int = 0
    node: str | None = None
    refusal: str = ""


@dataclass
class ReadRecord:
    client: str
    node: str
    index: int
    ok: bool
    generation: int = 0
    payload: str = ""
    hwm: int = 0
    refusal: str = ""


@dataclass
class Fault:
    time: float  # seconds since the run started, taken just before the request
    op: str
    target: str = ""
    detail: str = ""
    leader: str | None = None  # the leader as the nemesis saw it just before
    leader_generation: int = 0
    refused: str = ""


# ---- the checker: independent of the replica --------------------------------------------------------------


@dataclass
class Verdict:
    acknowledged: int  # writes the clients were told are committed
    acked_by_nodes: int  # distinct entries the nodes traced as write_acked
    reads_served: int  # reads the clients were served
    reads_traced: int  # read_served events in the trace (the same reads, seen by the nodes)
    lost: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def check(writes: list[WriteRecord], reads: list[ReadRecord], events: list[dict], final: dict[str, dict],
          size: int | None = None) -> Verdict:
    """What went wrong, in words.

    `final` maps each live node to its final `{"log": [[index, generation, payload], ...], "hwm": N}`; `events` are
    the trace's events (any order). Checked: every acknowledged write (to a client, or traced as write_acked) is at
    its index, same generation and payload, in every live node's final log; the final logs agree below their
    high-water marks, with each other and with every entry the trace says was committed; a committed index never
    changes; one leader per generation; every read served was at or below the serving node's high-water mark and
    returned the committed entry. With `size` (the number of nodes), also the grader's rules over the trace
    (lab.core.monitor: among them, no leader raises its mark above what a majority acknowledged).
    """
    lost: list[str] = []
    violations: list[str] = []
    events = sorted(events, key=lambda e: (e.get("time", 0.0), str(e.get("node")), e.get("seq", 0)))

    committed: dict[int, tuple[int, str, str]] = {}  # index -> (generation, digest, who committed it first)
    leaders: dict[int, str] = {}
    for event in events:
        kind = event.get("type")
        if kind == HWM_CHANGED:
            for index, generation, entry_digest in event.get("committed", []):
                first = committed.setdefault(index, (generation, entry_digest, event["node"]))
                if first[:2] != (generation, entry_digest):
                    violations.append(f"index {index} was committed as generation {first[0]} ({first[1]}) on "
                                      f"{first[2]}, then as generation {generation} ({entry_digest}) on "
                                      f"{event['node']}")
        elif kind == BECAME_LEADER:
            first_leader = leaders.setdefault(event["generation"], event["node"])
            if first_leader != event["node"]:
                violations.append(Reason(TWO_LEADERS, generation=event["generation"], other=first_leader,
                                         node=event["node"]))

    if not final:
        violations.append("no live node at the end: nothing to check the acknowledged writes against")
    # The final logs, below each node's high-water mark: one history, the one the trace committed.
    history: dict[int, tuple[int, str, str]] = {}  # index -> (generation, payload, node)
    for node in sorted(final):
        log, hwm = final[node]["log"], final[node]["hwm"]
        if hwm > len(log):
            violations.append(f"{node}'s high-water mark {hwm} is beyond its log end {len(log)}")
        for position, (index, generation, payload) in enumerate(log[:hwm], 1):
            if index != position:
                violations.append(f"{node}'s log has index {index} at position {position}")
                break
            known = history.setdefault(index, (generation, payload, node))
            if known[:2] != (generation, payload):
                violations.append(f"{node} and {known[2]} disagree at index {index}, below both high-water marks: "
                                  f"generation {generation} {payload!r} against generation {known[0]} {known[1]!r}")
                break
            trace = committed.get(index)
            if trace is not None and trace[:2] != (generation, digest(payload)):
                violations.append(f"{node} holds generation {generation} at index {index}, below its high-water "
                                  f"mark; the trace committed generation {trace[0]} there ({trace[2]})")
                break

    acknowledged: dict[tuple[int, int, str], str] = {}
    for w in writes:
        if w.ok:
            acknowledged[(w.index, w.generation, digest(w.payload))] = \
                f"write {w.payload!r} acknowledged to {w.client} at index {w.index} (generation {w.generation})"
    client_acks = len(acknowledged)
    traced_acks = set()
    for event in events:
        if event.get("type") == WRITE_ACKED:
            key = (event["index"], event["generation"], event["digest"])
            traced_acks.add(key)
            acknowledged.setdefault(key, f"request {event['request']} acknowledged by {event['node']} at index "
                                         f"{event['index']} (generation {event['generation']})")
    for (index, generation, entry_digest), what in sorted(acknowledged.items()):
        missing = []
        for node in sorted(final):
            log = final[node]["log"]
            if index > len(log):
                missing.append(f"{node} (log ends at {len(log)})")
            elif (log[index - 1][1], digest(log[index - 1][2])) != (generation, entry_digest):
                missing.append(f"{node} (holds generation {log[index - 1][1]} {log[index - 1][2]!r})")
        if missing:
            lost.append(f"{what}: not in the final log of {', '.join(missing)}")

    served = traced = 0
    for r in reads:
        if r.ok:
            served += 1
            violations.extend(_read_problems(r.node, r.index, r.hwm, r.generation, digest(r.payload), history,
                                             committed))
    for event in events:
        if event.get("type") == READ_SERVED:
            traced += 1
            index, generation, entry_digest = event["entry"]
            violations.extend(_read_problems(event["node"], event["index"], event["hwm"], generation, entry_digest,
                                             history, committed))
    if size:
        violations.extend(v.sentence() for v in check_trace(events, size))
    return Verdict(acknowledged=client_acks, acked_by_nodes=len(traced_acks), reads_served=served,
                   reads_traced=traced, lost=lost, violations=list(dict.fromkeys(violations)))


def _read_problems(node, index, hwm, generation, entry_digest, history, committed) -> list[str]:
    """A served read's problems. The same wording from the client's record and from the trace, so that one read
    seen both ways counts once."""
    problems = []
    if index > hwm:
        problems.append(Reason(SERVED_ABOVE_HWM, node=node, index=index, hwm=hwm))
    final = history.get(index)
    if final is not None:
        expected = (final[0], digest(final[1]))
    elif index in committed:
        expected = committed[index][:2]
    else:
        return problems + [f"{node} served index {index}, which no live node holds below its final high-water mark"]
    if (generation, entry_digest) != expected:
        problems.append(f"{node} served generation {generation} ({entry_digest}) at index {index}; the committed "
                        f"entry is generation {expected[0]} ({expected[1]})")
    return problems


# ---- the trace -----------------------------------------------------------------------------------------------

_WANTED = re.compile('"type":"(' + "|".join((
    HWM_CHANGED, BECAME_LEADER, ELECTION_STARTED, PREVOTE_STARTED, WRITE_ACKED, READ_SERVED, NODE_KILLED,
    NODE_EXITED, NODE_STARTED, MATCH_INDEX_UPDATED, READ_REFUSED, TRUNCATED, WAL_TRUNCATED, EPOCH_ANSWER,
    EPOCH_TRUNCATION)) + ')"')  # a quick look at a line's kind, before it is parsed


def read_trace(run_dir: Path) -> list[dict]:
    """The events the checker and the figures need, from every events-*.jsonl (a torn last line is skipped)."""
    events = []
    for path in sorted(run_dir.glob("events-*.jsonl")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if _WANTED.search(line):
                    try:
                        events.append(parse_line(line))
                    except ValueError:
                        pass
    return events


def leader_gaps(faults: list[Fault], events: list[dict]) -> tuple[list[tuple[float, float]], int]:
    """For each kill of the leader: (when its node_killed event was written, seconds from then to the first
    became_leader of a later generation); and how many such kills saw no new leader before the end."""
    kills = sorted((e["time"], e["target"]) for e in events if e.get("type") == NODE_KILLED)
    wins = sorted((e["time"], e["generation"]) for e in events if e.get("type") == BECAME_LEADER)
    gaps, none = [], 0
    for fault in faults:
        if fault.op not in ("kill", "restart") or fault.refused or fault.target != fault.leader:
            continue
        killed_at = next((t for t, target in kills if target == fault.target and t >= fault.time), None)
        if killed_at is None:
            continue
        won_at = next((t for t, generation in wins if t >= killed_at and generation > fault.leader_generation), None)
        if won_at is None:
            none += 1
        else:
            gaps.append((killed_at, won_at - killed_at))
    return gaps, none


# ---- the run ---------------------------------------------------------------------------------------------------


class Nemesis:
    """Chooses and applies one fault at a time, from what the cluster looks like now. At most `max_down` nodes
    are killed or paused at once (a majority stays, so the cluster can go on committing); cuts, delays and drops
    are not budgeted."""

    def __init__(self, api: ControlClient, names: list[str], rng: random.Random, start_time: float,
                 max_down: int, leader_bias: float = 0.5, storage: bool = False):
        self.api, self.names, self.rng = api, names, rng
        self.storage = storage
        self.disk_faulted: set[str] = set()  # disk-full or fsync-fail asked, disk-ok not yet
        self.start_time = start_time
        self.max_down = max_down
        self.leader_bias = leader_bias
        self.cuts: set[tuple[str, str]] = set()
        self.slowed = False  # a delay or a drop is set somewhere
        self.faults: list[Fault] = []

    def step(self) -> Fault:
        try:
            state = self.api.state(log=0)
        except ApiError as exc:  # a slow answer under load: note it and try again next time
            fault = Fault(time=time.time() - self.start_time, op="observe", refused=str(exc))
            self.faults.append(fault)
            return fault
        nodes = {n["id"]: n for n in state["nodes"]}
        running = [n for n in self.names if nodes[n]["state"] == "running"]
        paused = [n for n in self.names if nodes[n]["state"] == "paused"]
        dead = [n for n in self.names if nodes[n]["state"] in ("killed", "exited")]
        doomed = [n for n in self.disk_faulted if n in running]  # they stop at their next write or fsync
        leader = state["leader"]
        options = [(1.0, "cut"), (1.0, "cut_one_way"), (0.4, "isolate"), (0.8, "delay"), (0.4, "drop")] \
            if len(self.names) > 1 else []
        healthy = [n for n in running if n not in self.disk_faulted]
        if running and len(paused) + len(dead) + len(doomed) < self.max_down:
            options += [(2.0, "kill"), (1.2, "pause"), (0.4, "restart_running")]
            if self.storage and healthy:
                options += [(1.0, DISK_FULL), (1.0, FSYNC_FAIL)]
        if dead:
            options.append((3.0, "restart"))
        if paused:
            options.append((3.0, "resume"))
        if self.cuts:
            options.append((1.5, "heal"))
        if self.slowed:
            options.append((1.2, "calm"))
        if not options:
            options = [(1.0, "wait")]  # a single node that cannot be taken down: nothing to do this time
        op = self.rng.choices([name for _, name in options], weights=[w for w, _ in options])[0]
        rng = self.rng

        def victim(pool: list[str]) -> str:
            if leader in pool and rng.random() < self.leader_bias:
                return leader
            return rng.choice(pool)

        pair = rng.sample(self.names, 2) if len(self.names) > 1 else []
        fault = Fault(time=time.time() - self.start_time, op=op, leader=leader,
                      leader_generation=nodes[leader]["generation"] if leader else 0)
        if op == "wait":
            return fault
        try:
            if op == "kill":
                fault.target = victim(running)
                self.api.kill(fault.target, lose_unsynced=True)  # SIGKILL, no flush asked first
            elif op == "restart_running":
                fault.op, fault.target = "restart", victim(running)
                self.api.restart(fault.target)
            elif op == "restart":
                fault.target = rng.choice(dead)
                if fault.target in self.disk_faulted:
                    fault.detail = "after disk-ok"
                    self.api.disk_ok(fault.target)
                    self.disk_faulted.discard(fault.target)
                self.api.restart(fault.target)
            elif op in (DISK_FULL, FSYNC_FAIL):
                fault.target = victim(healthy)
                getattr(self.api, op)(fault.target)
                self.disk_faulted.add(fault.target)
            elif op == "pause":
                fault.target = victim(running)
                self.api.pause(fault.target)
            elif op == "resume":
                fault.target = rng.choice(paused)
                self.api.resume(fault.target)
            elif op in ("cut", "cut_one_way"):
                fault.target = f"{pair[0]}>{pair[1]}"
                self.api.cut(pair[0], pair[1], one_way=op == "cut_one_way")
                self.cuts.update([tuple(pair)] if op == "cut_one_way" else [tuple(pair), tuple(pair[::-1])])
            elif op == "isolate":
                fault.target = victim(self.names)
                self.api.isolate(fault.target)
                self.cuts.update((a, b) for a in self.names for b in self.names
                                 if a != b and fault.target in (a, b))
            elif op == "heal":
                if rng.random() < 0.5:
                    self.api.heal()
                    self.cuts.clear()
                else:
                    src, dst = rng.choice(sorted(self.cuts))
                    fault.target = f"{src}>{dst}"
                    self.api.heal(src, dst, one_way=True)
                    self.cuts.discard((src, dst))
            elif op == "delay":
                ms = round(rng.uniform(5, 150))
                fault.detail = f"{ms} ms"
                if rng.random() < 0.3:
                    self.api.delay(ms)
                else:
                    fault.target = f"{pair[0]}>{pair[1]}"
                    self.api.delay(ms, pair[0], pair[1])
                self.slowed = True
            elif op == "drop":
                rate = round(rng.uniform(0.05, 0.3), 2)
                fault.detail = f"rate {rate}"
                if rng.random() < 0.3:
                    self.api.drop(rate)
                else:
                    fault.target = f"{pair[0]}>{pair[1]}"
                    self.api.drop(rate, pair[0], pair[1])
                self.slowed = True
            elif op == "calm":
                self.api.delay(0)
                self.api.drop(0)
                self.slowed = False
        except ApiError as exc:  # e.g. the node exited on its own meanwhile: note it and go on
            fault.refused = str(exc)
        self.faults.append(fault)
        return fault

    def recover(self) -> None:
        """Undo every fault: heal, no delay or drop, resume the paused, restart the dead."""
        self.api.heal()
        self.api.delay(0)
        self.api.drop(0)
        self.cuts.clear()
        self.slowed = False
        for name in sorted(self.disk_faulted):
            self.api.disk_ok(name)
        self.disk_faulted.clear()
        for node in self.api.state(log=0)["nodes"]:
            try:
                if node["state"] == "paused":
                    self.api.resume(node["id"])
                elif node["state"] in ("killed", "exited"):
                    self.api.restart(node["id"])
            except ApiError as exc:
                self.faults.append(Fault(time=time.time() - self.start_time, op="recover", target=node["id"],
                                         refused=str(exc)))


class Clients:
    """Writers and readers on their own threads, each recording what it was told."""

    def __init__(self, api: ControlClient, names: list[str], seed: int, writers: int, readers: int,
                 write_timeout: float):
        self.url, self.token, self.names, self.seed = api.url, api.token, names, seed
        self.write_timeout = write_timeout
        self.writes: list[WriteRecord] = []
        self.reads: list[ReadRecord] = []
        self.acked_indexes: list[int] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._writer, args=(f"w{i}",), daemon=True) for i in range(writers)]
        self.threads += [threading.Thread(target=self._reader, args=(f"r{i}", random.Random(f"{seed}-r{i}")),
                                          daemon=True) for i in range(readers)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self, timeout: float) -> None:
        self.stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def write(self, api: ControlClient, client: str, payload: str) -> WriteRecord:
        try:
            answer = api.write(payload, timeout=self.write_timeout)
        except (ApiError, ClusterUnavailable) as exc:
            answer = {"ok": False, "refusal": f"api: {exc}"}
        record = WriteRecord(client=client, payload=payload, ok=bool(answer.get("ok")), index=answer.get("index", 0),
                             generation=answer.get("generation", 0), node=answer.get("node"),
                             refusal=answer.get("refusal", "") if not answer.get("ok") else "")
        self.writes.append(record)
        if record.ok:
            self.acked_indexes.append(record.index)
        return record

    def _writer(self, client: str) -> None:
        api = ControlClient(self.url, timeout=self.write_timeout + 10, token=self.token)
        count = 0
        while not self.stopping.is_set():
            count += 1
            record = self.write(api, client, f"{self.seed}.{client}.{count}")
            if not record.ok and record.refusal.startswith("api:"):
                time.sleep(0.05)

    def _reader(self, client: str, rng: random.Random) -> None:
        api = ControlClient(self.url, timeout=10.0, token=self.token)
        while not self.stopping.is_set():
            known = self.acked_indexes[-2000:]
            top = max(known) if known else 0
            index = rng.choice(known) if known and rng.random() < 0.8 else top + rng.randint(0, 3)
            node = rng.choice(self.names)
            try:
                answer = api.read(max(1, index), node)
            except (ApiError, ClusterUnavailable) as exc:
                answer = {"ok": False, "refusal": f"api: {exc}"}
            self.reads.append(ReadRecord(client=client, node=node, index=answer.get("index", index),
                                         ok=bool(answer.get("ok")), generation=answer.get("generation", 0),
                                         payload=answer.get("payload", ""), hwm=answer.get("high_water_mark", 0),
                                         refusal=answer.get("refusal", "") if not answer.get("ok") else ""))
            time.sleep(0.01)


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
