"""Synthetic traces and classes for the grader's tests and benchmark: a small scripted cluster that writes trace
directories (docs/trace-format.md) and submissions (docs/submission-format.md), with bugs that can be planted.

It is not the simulator (lab.sim.cluster): it follows a script, not a network, so a test knows exactly which rule a
planted bug breaks. No Spark here.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

BUGS = (
    "majority",  # the leader commits its own log end without waiting for a majority
    "read",  # reads are served one index above the HWM
    "hwm-back",  # a follower's HWM steps back by one (and forward again)
    "stall",  # followers stop learning the HWM after the last fault
    "truncate-committed",  # a restarted node drops its last entry even when it is committed
    "expect",  # the scenario's expectation fails
    "diverge",  # two followers end with a different entry each at index 1: final logs disagree under the HWM
    "short-log",  # the last node's final log lacks its last entry while its HWM stays: the HWM is beyond its log
    "read-strict",  # reads of the HWM itself are refused (the read gate one too strict)
    "wal-keeps",  # a truncation leaves a later WAL segment in place: the log still ends where it ended
)


def digest(payload: str) -> str:
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def _dumps(record: dict) -> str:
    return json.dumps(record, separators=(",", ":"))


@dataclass
class ScriptedCluster:
    """A leader-based replicated log with an HWM, driven step by step; every step emits its trace events."""

    run: str
    nodes: tuple[str, ...] = ("A", "B", "C")
    scenario: str | None = None
    liveness_bound: float | None = 5.0
    bugs: frozenset[str] = frozenset()
    tick: int = 0
    lines: dict[str, list[str]] = field(default_factory=dict)
    events: int = 0

    def __post_init__(self):
        unknown = set(self.bugs) - set(BUGS)
        if unknown:
            raise ValueError(f"unknown bugs {sorted(unknown)}; choose from {BUGS}")
        self.lines = {n: [] for n in (*self.nodes, "cluster")}
        self.seq = {n: 0 for n in self.lines}
        self.boot = {n: 1 for n in self.nodes}
        self.gen = {n: 0 for n in self.nodes}
        self.log: dict[str, list[tuple[int, str, str]]] = {n: [] for n in self.nodes}  # (generation, digest, payload)
        self.hwm = {n: 0 for n in self.nodes}
        self.alive = {n: True for n in self.nodes}
        self.cuts: set[tuple[str, str]] = set()
        self.leader: str | None = None
        self.match: dict[str, int] = {}
        self.pending: dict[int, str] = {}  # index -> request awaiting its acknowledgement
        self.requests = 0
        self.faults_over = False
        self.emit("cluster", "cluster_started", nodes=list(self.nodes), truncation="generation", fsync="always",
                  impl="solutions")
        for n in self.nodes:
            self.emit(n, "node_started", log_end=0, last_generation=0, hwm=0, truncation="generation")

    # ---- trace ----------------------------------------------------------------------------------------------

    def emit(self, node: str, type: str, **fields) -> None:
        self.seq[node] += 1
        cluster = node == "cluster"
        record = {"v": 1, "seq": self.seq[node], "time": round(self.tick * 0.01, 6), "node": node,
                  "boot": 0 if cluster else self.boot[node], "gen": 0 if cluster else self.gen[node],
                  "type": type, **fields}
        self.lines[node].append(_dumps(record))
        self.events += 1

    def step(self, ticks: int = 1) -> None:
        self.tick += ticks

    def entry(self, node: str, index: int) -> list:
        g, d, _ = self.log[node][index - 1]
        return [index, g, d]

    def reachable(self, src: str, dst: str) -> bool:
        return self.alive[src] and self.alive[dst] and (src, dst) not in self.cuts

    # ---- faults ---------------------------------------------------------------------------------------------

    def kill(self, node: str) -> None:
        self.emit("cluster", "node_killed", target=node)
        self.alive[node] = False
        if self.leader == node:
            self.leader = None
        self.step()

    def restart(self, node: str) -> None:
        self.emit("cluster", "node_restarted", target=node)
        self.boot[node] += 1
        self.alive[node] = True
        log = self.log[node]
        self.emit(node, "node_started", log_end=len(log), last_generation=log[-1][0] if log else 0,
                  hwm=self.hwm[node], truncation="generation")
        if "truncate-committed" in self.bugs and log:
            self.truncate(node, len(log), "restart-hwm", None)
        self.emit(node, "became_follower", generation=self.gen[node], leader=None)
        self.step()

    def cut(self, src: str, dst: str) -> None:
        self.emit("cluster", "link_cut", src=src, dst=dst)
        self.cuts.add((src, dst))
        self.step()

    def heal(self, src: str, dst: str) -> None:
        self.emit("cluster", "link_healed", src=src, dst=dst)
        self.cuts.discard((src, dst))
        self.step()

    # ---- protocol -------------------------------------------------------------------------------------------

    def elect(self, candidate: str) -> None:
        generation = max(self.gen.values()) + 1
        self.emit(candidate, "election_started", generation=generation)
        self.emit(candidate, "generation_changed", from_generation=self.gen[candidate], generation=generation)
        self.gen[candidate] = generation
        votes = [candidate]
        for n in self.nodes:
            if n != candidate and self.reachable(candidate, n) and self.reachable(n, candidate):
                self.emit(n, "generation_changed", from_generation=self.gen[n], generation=generation)
                self.gen[n] = generation
                self.emit(n, "vote_granted", candidate=candidate, generation=generation)
                votes.append(n)
        self.step()
        self.emit(candidate, "became_leader", generation=generation, votes=votes)
        for n in votes[1:]:
            self.emit(n, "became_follower", generation=generation, leader=candidate)
        self.leader = candidate
        self.match = {n: 0 for n in self.nodes if n != candidate}
        self.step()
        for n in self.match:
            self.replicate(n)
        self.commit()
        self.propagate()

    def write(self, payload: str, *, replicate: bool = True, probe: str | None = None) -> int:
        """Client write to the leader. `probe`: read the new index from that node before it learns the new HWM
        (a correct node refuses)."""
        leader = self.leader
        assert leader is not None, "no leader"
        self.requests += 1
        request = f"w{self.requests}"
        d = digest(payload)
        self.emit("cluster", "client_write", payload=payload, digest=d, target=leader)
        self.emit(leader, "write_requested", request=request, digest=d, payload=payload)
        self.log[leader].append((self.gen[leader], d, payload))
        index = len(self.log[leader])
        self.emit(leader, "leader_append", index=index, generation=self.gen[leader], digest=d, payload=payload,
                  request=request)
        self.pending[index] = request
        self.step()
        if replicate:
            for n in self.match:
                self.replicate(n)
        self.commit()
        self.step()
        if probe is not None and self.alive[probe]:
            self.read(probe, index)
        self.propagate()
        return index

    def replicate(self, follower: str) -> None:
        leader = self.leader
        if leader is None or not self.reachable(leader, follower):
            return
        llog, flog = self.log[leader], self.log[follower]
        prev = self.match.get(follower, 0)
        prev_gen = llog[prev - 1][0] if prev else 0
        self.emit(leader, "replication_sent", to=follower, prev_index=prev, prev_generation=prev_gen,
                  first=prev + 1, last=len(llog), hwm=self.hwm[leader])
        if self.gen[follower] < self.gen[leader]:
            self.emit(follower, "generation_changed", from_generation=self.gen[follower],
                      generation=self.gen[leader])
            self.gen[follower] = self.gen[leader]
        self.emit(follower, "replication_received", **{"from": leader}, prev_index=prev, prev_generation=prev_gen,
                  first=prev + 1, last=len(llog), hwm=self.hwm[leader])
        conflict = next((i for i in range(1, min(len(llog), len(flog)) + 1)
                         if llog[i - 1][:2] != flog[i - 1][:2]), None)
        if conflict is not None:
            self.truncate(follower, conflict, "conflict", llog[conflict - 1][0])
        for i in range(len(flog) + 1, len(llog) + 1):
            flog.append(llog[i - 1])
            g, d, p = llog[i - 1]
            self.emit(follower, "follower_append", index=i, generation=g, digest=d, payload=p)
        if self.reachable(follower, leader):
            self.match[follower] = len(llog)
            self.emit(leader, "match_index_updated", follower=follower, match_index=len(llog),
                      next_index=len(llog) + 1)

    def commit(self) -> None:
        leader = self.leader
        if leader is None:
            return
        log = self.log[leader]
        if "majority" in self.bugs:
            new = len(log)
        else:
            held = sorted([len(log), *self.match.values()], reverse=True)
            new = held[len(self.nodes) // 2]
            while new > self.hwm[leader] and log[new - 1][0] != self.gen[leader]:
                new -= 1
        old = self.hwm[leader]
        if new <= old:
            return
        self.hwm[leader] = new
        self.emit(leader, "hwm_changed", from_hwm=old, hwm=new, role="leader", entry_generation=log[new - 1][0],
                  committed=[self.entry(leader, i) for i in range(old + 1, new + 1)])
        for index in sorted(i for i in self.pending if i <= new):
            g, d, _ = log[index - 1]
            self.emit(leader, "write_acked", request=self.pending.pop(index), index=index, generation=g, digest=d)

    def propagate(self) -> None:
        """A heartbeat to every reachable follower, carrying the leader's HWM."""
        leader = self.leader
        if leader is None or ("stall" in self.bugs and self.faults_over):
            return
        for n in self.match:
            if not self.reachable(leader, n):
                continue
            end = len(self.log[leader])
            self.emit(leader, "replication_sent", to=n, prev_index=end, prev_generation=self.gen[leader],
                      first=end + 1, last=end, hwm=self.hwm[leader])
            self.emit(n, "replication_received", **{"from": leader}, prev_index=end,
                      prev_generation=self.gen[leader], first=end + 1, last=end, hwm=self.hwm[leader])
            new = min(self.hwm[leader], len(self.log[n]))
            old = self.hwm[n]
            if new > old:
                self.hwm[n] = new
                self.emit(n, "hwm_changed", from_hwm=old, hwm=new, role="follower",
                          entry_generation=self.log[n][new - 1][0],
                          committed=[self.entry(n, i) for i in range(old + 1, new + 1)])
                if "hwm-back" in self.bugs and new >= 2:
                    self.emit(n, "hwm_changed", from_hwm=new, hwm=new - 1, role="follower",
                              entry_generation=self.log[n][new - 2][0], committed=[])
                    self.emit(n, "hwm_changed", from_hwm=new - 1, hwm=new, role="follower",
                              entry_generation=self.log[n][new - 1][0], committed=[])
        self.step()

    def truncate(self, node: str, index: int, reason: str, conflicting_generation: int | None) -> None:
        """Remove entries from `index` on; the log storage then reports what it kept (one segment per 4 entries)."""
        log = self.log[node]
        end = len(log)
        removed = [self.entry(node, i) for i in range(index, end + 1)]
        del log[index - 1:]
        self.emit(node, "truncated", from_index=index, removed=removed, reason=reason,
                  conflicting_generation=conflicting_generation, hwm=self.hwm[node])
        firsts = list(range(1, end + 1, 4))
        kept = [f for f in firsts if f < index]
        if "wal-keeps" in self.bugs:  # the records from the cut on stay, in a segment of their own
            self.emit(node, "wal_truncated", from_index=index, log_end=end, segments=[*kept, index], deleted=[])
        else:
            self.emit(node, "wal_truncated", from_index=index, log_end=index - 1, segments=kept,
                      deleted=[f for f in firsts if f > index])

    def read(self, node: str, index: int) -> None:
        self.emit("cluster", "client_read", index=index, target=node)
        limit = self.hwm[node] + (1 if "read" in self.bugs else 0) - (1 if "read-strict" in self.bugs else 0)
        if index <= min(limit, len(self.log[node])):
            g, d, p = self.log[node][index - 1]
            self.emit(node, "read_served", index=index, hwm=self.hwm[node], entry=[index, g, d], payload=p)
        else:
            self.emit(node, "read_refused", index=index, hwm=self.hwm[node],
                      reason=f"not available: index {index} is above the high-water mark {self.hwm[node]}")
        self.step()

    def narrate(self, text: str) -> None:
        self.emit("cluster", "step", text=text)

    def finish(self, expectations: dict[str, bool] | None = None) -> None:
        self.step(2)
        for n in self.nodes:
            if self.alive[n]:
                entries = [self.entry(n, i) for i in range(1, len(self.log[n]) + 1)]
                if "diverge" in self.bugs and n in self.nodes[1:3] and entries:
                    entries[0] = [1, entries[0][1], digest(f"diverged-{n}")]
                if "short-log" in self.bugs and n == self.nodes[-1] and entries:
                    entries = entries[:-1]
                self.emit(n, "log_snapshot", hwm=self.hwm[n], log_end=len(entries), entries=entries)
        for name, ok in (expectations or {}).items():
            if "expect" in self.bugs:
                ok = False
            self.emit("cluster", "expectation", name=name, ok=ok, detail=None if ok else f"{name} did not hold")
        self.emit("cluster", "cluster_stopped")

    # ---- output ---------------------------------------------------------------------------------------------

    def meta(self) -> dict:
        return {"format": "hwm-lab-trace", "version": 1, "run": self.run, "source": "sim", "scenario": self.scenario,
                "seed": 0, "nodes": list(self.nodes), "truncation": "generation", "fsync": "always",
                "impl": "synth", "liveness_bound": self.liveness_bound, "started": "2026-11-22T10:00:00Z"}

    def files(self) -> dict[str, bytes]:
        out = {"trace.json": (json.dumps(self.meta(), indent=2) + "\n").encode()}
        for node, lines in self.lines.items():
            if lines:
                out[f"events-{node}.jsonl"] = ("\n".join(lines) + "\n").encode()
        return out


# ---- scripts ------------------------------------------------------------------------------------------------

def s1_run(run: str, bugs=frozenset()) -> ScriptedCluster:
    """Scenario S1 (shared/SCENARIOS.md): the leader fails after a local-only append."""
    c = ScriptedCluster(run, scenario="s1", bugs=frozenset(bugs))
    c.narrate("A is leader in generation 1; the client writes e1, e2, e3")
    c.elect("A")
    for p in ("e1", "e2", "e3"):
        c.write(p)
    c.narrate("cut A -> B and A -> C; e4 reaches A only")
    c.cut("A", "B")
    c.cut("A", "C")
    c.write("e4", replicate=False)
    c.read("A", 4)
    c.narrate("kill A, heal the cut; B is elected in generation 2")
    c.kill("A")
    c.heal("A", "B")
    c.heal("A", "C")
    c.elect("B")
    c.write("e5")
    c.narrate("restart A: it truncates e4 and takes e5")
    c.faults_over = True
    c.restart("A")
    c.replicate("A")
    c.propagate()
    c.read("B", 4)
    c.finish({"e4 never served": True, "final logs [e1, e2, e3, e5]": True, "hwm 4 everywhere": True})
    return c


def l1_run(run: str, writes: int = 20, bugs=frozenset(), nodes=("A", "B", "C"), events: int | None = None,
           reads_every: int = 5) -> ScriptedCluster:
    """Scenario L1: a client writing continuously; the leader is killed mid-stream and restarted later.
    With `events`, writes go on until the run holds about that many events."""
    c = ScriptedCluster(run, nodes=tuple(nodes), scenario="l1", bugs=frozenset(bugs))
    first, second = nodes[0], nodes[1]
    c.elect(first)
    target = events or 0
    half = writes // 2 if events is None else None
    i = 0

    def more(phase_end) -> bool:
        return (i < phase_end) if events is None else (c.events < phase_end)

    while more(half if events is None else target * 0.45):
        i += 1
        c.write(f"w{i}", probe=second if i % reads_every == 0 else None)
        if i % reads_every == 0:
            c.read(nodes[i % len(nodes)], max(1, c.hwm[nodes[i % len(nodes)]]))
    c.kill(first)
    c.elect(second)
    while more(writes * 3 // 4 if events is None else target * 0.7):
        i += 1
        c.write(f"w{i}")
        if i % reads_every == 0:
            c.read(second, max(1, c.hwm[second]))
    c.restart(first)
    c.faults_over = True
    c.replicate(first)
    c.propagate()
    while more(writes if events is None else target - 12 - len(nodes)):
        i += 1
        c.write(f"w{i}")
        if i % reads_every == 0:
            c.read(nodes[i % len(nodes)], max(1, c.hwm[nodes[i % len(nodes)]]))
    c.finish({"acknowledged writes on every live node": True})
    return c


# ---- writing ------------------------------------------------------------------------------------------------

def write_run(run_dir: str | os.PathLike, cluster: ScriptedCluster) -> Path:
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, data in cluster.files().items():
        (run_dir / name).write_bytes(data)
    return run_dir


# The student's file of each exercise, as version 2 submissions carry them (files/exercises/<name>.py).
MODULES = {1: "exercises/high_water_mark.py", 2: "exercises/leader.py", 3: "exercises/follower.py",
           4: "exercises/reads.py", 5: "exercises/wal_truncation.py", 6: "exercises/leader_epoch.py"}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest(student: str, runs: list[tuple[ScriptedCluster, int]], *, version: int = 1,
             files: dict[str, bytes] | None = None, rules: dict[int, list[bool]] | None = None,
             made_from: dict[str, dict[str, str]] | None = None) -> dict:
    """The manifest `hwm-lab submit` writes. Version 2: `files` are the exercise files in the zip, `rules` the
    rule results per exercise (every rule ok by default), `made_from` what a run records it was made from
    (by default the current file of its exercise)."""
    m = {"format": "hwm-lab-submission", "version": version, "student": student, "lab_version": "0.1.0",
         "created": "2026-11-22T10:00:00Z", "files_sha256": {},
         "exercises": sorted({e for _, e in runs}),
         "runs": [{"run": c.run, "exercise": e, "scenario": c.scenario, "seed": 0, "source": "sim",
                   "dir": f"runs/{c.run}"} for c, e in runs]}
    if version >= 2:
        files = files if files is not None else exercise_files()
        hashes = {module: sha256(data) for module, data in files.items()}
        m["files_sha256"] = hashes
        rules = rules or {e: [True, True, True] for e in m["exercises"]}
        m["checks"] = [{"exercise": e, "verdict": "passing" if all(oks) else "failing",
                        "rules": [{"rule": f"rule {i + 1}", "function": "f", "ok": ok} for i, ok in enumerate(oks)],
                        "left_out": []} for e, oks in sorted(rules.items())]
        for record, (c, e) in zip(m["runs"], runs):
            record.update({"truncation": "generation", "passed": True,
                           "files_sha256": (made_from or {}).get(c.run, {MODULES[e]: hashes.get(MODULES[e], "")})})
    return m


def exercise_files(version: str = "v1") -> dict[str, bytes]:
    return {module: f"# {module}, {version}\n".encode() for module in MODULES.values()}


def write_submission(out: str | os.PathLike, student: str, runs: list[tuple[ScriptedCluster, int]], *,
                     as_zip: bool = True, version: int = 1, **v2) -> Path:
    """A submission as `hwm-lab submit` packs it: OUT/<student>.zip, or an unpacked folder OUT/<student>/.
    Version 2 takes manifest()'s keywords, and holds the exercise files."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    m = manifest(student, runs, version=version, **v2)
    files = {"manifest.json": (json.dumps(m, indent=2) + "\n").encode()}
    if version >= 2:
        for module, data in (v2.get("files") if v2.get("files") is not None else exercise_files()).items():
            files[f"files/{module}"] = data
    for cluster, _ in runs:
        for name, data in cluster.files().items():
            files[f"runs/{cluster.run}/{name}"] = data
    if as_zip:
        path = out / f"{student}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in files.items():
                z.writestr(name, data)
        return path
    folder = out / student
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder
