"""Rebuild the cluster's state from trace events, for replay: the same shape as the control API's /api/state.

`ClusterFold` applies events one at a time; `Replay` keeps checkpoints so that any point of a trace's timeline
can be shown at once when a student scrubs back and forth.
"""

from __future__ import annotations

import bisect
import copy
from pathlib import Path

from lab.i18n.scenarios import step_caption
from lab.ports.trace import CLUSTER, read_trace
from web.narrate import Narrator
from lab.core.events import (
    BECAME_FOLLOWER, BECAME_LEADER, CLOCKS_HELD, CLOCKS_RELEASED, CLUSTER_STARTED, DELAY_SET, ELECTION_STARTED,
    FOLLOWER_APPEND, GENERATION_CHANGED, HWM_CHANGED, LEADER_APPEND, LINK_CUT, LINK_HEALED, LOG_SNAPSHOT,
    MATCH_INDEX_UPDATED, NEXT_INDEX_BACKED_UP, NODE_EXITED, NODE_KILLED, NODE_PAUSED, NODE_RESTARTED, NODE_RESUMED,
    NODE_STARTED, NODE_STOPPED, REPLICATION_RECEIVED, REPLICATION_SENT, RULE_BROKEN, STEP, TRUNCATED)

CHECKPOINT_EVERY = 256
STEP_SECONDS = 0.4  # a simulated trace plays each tick in which something happens as one moment this long
IDLE_SECONDS = 1.0  # a quiet stretch (heartbeats only, or nothing) longer than this plays in this long


def is_quiet(event: dict) -> bool:
    """Nothing for the room to watch: heartbeats, held or released clocks, final snapshots."""
    kind = event.get("type")
    if kind in (REPLICATION_SENT, REPLICATION_RECEIVED):
        return (event.get("first") or 0) > (event.get("last") or 0)
    return kind in (CLOCKS_HELD, CLOCKS_RELEASED, LOG_SNAPSHOT)


def play_times(events: list[dict], stepped: bool) -> list[float]:
    """When each event shows in a replay at 1x, in seconds: the trace's own time (or, for a simulated trace,
    one STEP_SECONDS moment per tick), with every quiet stretch cut to at most IDLE_SECONDS."""
    gaps, previous = [], None
    for event in events:
        t = event.get("time", 0.0)
        if previous is None:
            gaps.append(0.0)
        elif stepped:
            gaps.append(STEP_SECONDS if t != previous else 0.0)
        else:
            gaps.append(max(0.0, t - previous))
        previous = t
    # A stretch runs from one event the room watches to the next; only quiet events lie between.
    start = 0
    for i in range(1, len(events) + 1):
        if i == len(events) or not is_quiet(events[i]):
            total = sum(gaps[start + 1:i + 1]) if i < len(events) else sum(gaps[start + 1:])
            if total > IDLE_SECONDS:
                scale = IDLE_SECONDS / total
                for j in range(start + 1, min(i + 1, len(events))):
                    gaps[j] *= scale
            start = i
    play, now = [], 0.0
    for gap in gaps:
        now += gap
        play.append(round(now, 4))
    return play


def _new_node(name: str) -> dict:
    """A node the trace names but has not yet heard from: starting (not killed: nothing happened to it yet)."""
    return {"id": name, "state": "starting", "role": None, "generation": 0, "leader": None, "hwm": 0,
            "log": [], "match_index": {}, "next_index": {}, "boot": 0}


class ClusterFold:
    """What every node holds after the events applied so far."""

    def __init__(self, nodes: list[str] = (), settings: dict | None = None):
        self.nodes: dict[str, dict] = {n: _new_node(n) for n in nodes}
        self.settings = {"delay_ms": 0, "fsync": "always", "truncation": "generation", **(settings or {})}
        self.cuts: set[tuple[str, str]] = set()
        self.restarts: dict[str, int] = {}
        self.time = 0.0

    def _node(self, name: str) -> dict:
        if name not in self.nodes:
            self.nodes[name] = _new_node(name)
        return self.nodes[name]

    def apply(self, e: dict) -> None:  # noqa: C901 (one branch per event type)
        kind, who = e.get("type"), e.get("node")
        self.time = e.get("time", self.time)
        if who == CLUSTER:
            self._apply_cluster(kind, e)
            return
        n = self._node(who)
        boot = e.get("boot") or 0
        if boot > n["boot"]:
            n["boot"] = boot
        if n["state"] in ("killed", "exited", "starting") and kind != NODE_STOPPED:
            n["state"] = "running"  # a node that emits is alive (its restart may sort after its first events)
        if e.get("gen"):
            n["generation"] = max(n["generation"], e["gen"]) if kind != NODE_STARTED else e["gen"]
        log = n["log"]
        if kind == NODE_STARTED:
            n.update(state="running", role="follower", leader=None, hwm=e.get("hwm", 0), match_index={},
                     next_index={})
            end = e.get("log_end", len(log))
            del log[end:]
            while len(log) < end:  # entries written before the trace began
                log.append([len(log) + 1, e.get("last_generation", 0), "?"])
        elif kind == GENERATION_CHANGED:
            n["generation"] = e["generation"]
        elif kind == ELECTION_STARTED:
            n.update(role="candidate", leader=None, generation=e.get("generation", n["generation"]))
        elif kind == BECAME_LEADER:
            n.update(role="leader", leader=who, generation=e.get("generation", n["generation"]))
            n["match_index"] = {m: 0 for m in self.nodes}
            n["match_index"][who] = len(log)
            n["next_index"] = {m: len(log) + 1 for m in self.nodes if m != who}
        elif kind == BECAME_FOLLOWER:
            n.update(role="follower", leader=e.get("leader"), match_index={}, next_index={})
        elif kind in (LEADER_APPEND, FOLLOWER_APPEND):
            index = e["index"]
            del log[index - 1:]
            while len(log) < index - 1:
                log.append([len(log) + 1, None, "?"])
            log.append([index, e.get("generation"), e.get("payload", e.get("digest", "?"))])
            if kind == LEADER_APPEND and n["role"] == "leader":
                n["match_index"][who] = index
        elif kind == TRUNCATED:
            del log[e["from_index"] - 1:]
            n["hwm"] = min(e.get("hwm", n["hwm"]), len(log))
        elif kind == HWM_CHANGED:
            n["hwm"] = e["hwm"]
        elif kind == REPLICATION_SENT:
            if n["role"] == "leader":
                n["next_index"][e["to"]] = e["last"] + 1
        elif kind == MATCH_INDEX_UPDATED:
            n["match_index"][e["follower"]] = e["match_index"]
            n["next_index"][e["follower"]] = e["next_index"]
        elif kind == NEXT_INDEX_BACKED_UP:
            n["next_index"][e["follower"]] = e["next_index"]
        elif kind == REPLICATION_RECEIVED:
            if n["leader"] is None:
                n["leader"] = e.get("from")
        elif kind == NODE_STOPPED:
            n.update(state="killed", role=None, leader=None, match_index={}, next_index={})

    def _apply_cluster(self, kind: str, e: dict) -> None:
        target = e.get("target")
        if kind == CLUSTER_STARTED:
            for name in e.get("nodes") or []:
                self._node(name)
            for key in ("truncation", "fsync", "impl"):
                if key in e:
                    self.settings[key] = e[key]
        elif kind == NODE_KILLED:
            n = self._node(target)
            # Equal trace times may sort a restarted node's first events before this kill: its boot tells.
            if n["boot"] <= self.restarts.get(target, 0) + 1:
                n.update(state="killed", role=None, leader=None, match_index={}, next_index={})
                lost = e.get("lost_entries") or 0
                if lost:
                    del n["log"][-lost:]
        elif kind == NODE_EXITED:  # it stopped by itself (a storage fault, the student's code): the lane says why
            n = self._node(target)
            if n["boot"] <= self.restarts.get(target, 0) + 1:
                n.update(state="exited", role=None, leader=None, match_index={}, next_index={},
                         exit_reason=e.get("reason") or f"exit code {e.get('code')}")
                if e.get("fault"):
                    n["fault"] = e["fault"]
        elif kind == NODE_RESTARTED:
            self.restarts[target] = self.restarts.get(target, 0) + 1
            self._node(target)["state"] = "running"
            self._node(target).pop("exit_reason", None)
            self._node(target).pop("fault", None)
        elif kind == NODE_PAUSED:
            self._node(target)["state"] = "paused"
        elif kind == NODE_RESUMED:
            self._node(target)["state"] = "running"
        elif kind == LINK_CUT:
            self.cuts.add((e["src"], e["dst"]))
        elif kind == LINK_HEALED:
            self.cuts.discard((e["src"], e["dst"]))
        elif kind == DELAY_SET:
            self.settings["delay_ms"] = e.get("ms", 0)

    def leader(self) -> str | None:
        leaders = [(n["generation"], name) for name, n in self.nodes.items()
                   if n["state"] == "running" and n["role"] == "leader"]
        return max(leaders)[1] if leaders else None

    def status(self, log_window: int | None = None) -> dict:
        nodes = []
        for name in sorted(self.nodes):
            n = self.nodes[name]
            log = n["log"][-log_window:] if log_window else n["log"]
            nodes.append({
                "id": name, "state": n["state"], "role": n["role"], "generation": n["generation"],
                "leader": n["leader"], "log_end": len(n["log"]), "hwm": n["hwm"],
                "match_index": dict(n["match_index"]), "next_index": dict(n["next_index"]),
                "log": [list(entry) for entry in log], "log_start": log[0][0] if log else len(n["log"]) + 1,
                "boot": n["boot"], **({"exit_reason": n["exit_reason"]} if n["state"] == "exited" else {}),
            })
        return {"leader": self.leader(), "time": self.time, "settings": dict(self.settings), "nodes": nodes,
                "links": [{"src": a, "dst": b, "cut": True} for a, b in sorted(self.cuts)]}

    def copy(self) -> "ClusterFold":
        return copy.deepcopy(self)


class Replay:
    """A trace directory opened for scrubbing: state at any position (number of events applied) in the run."""

    def __init__(self, run_dir: str | Path):
        trace = read_trace(run_dir)
        self.run_dir = str(run_dir)
        self._steps: list[dict] | None = None
        self.meta = trace.meta
        self.warnings = trace.warnings
        self.events = trace.events
        self.times = [e["time"] for e in self.events]
        self.stepped = self.meta.get("source") == "sim"
        self.play = play_times(self.events, self.stepped)
        narrator = Narrator()
        self.texts, self.stale_reads = [], set()  # each event's sentence; the numbers of stale reads' answers
        for n, e in enumerate(self.events, start=1):
            self.texts.append(narrator.describe(e))
            if narrator.stale is not None:
                self.stale_reads.add(n)
        nodes = list(self.meta.get("nodes") or [])
        settings = {k: self.meta[k] for k in ("truncation", "fsync", "impl") if k in self.meta}
        fold = ClusterFold(nodes, settings)
        self._checkpoints = [fold.copy()]
        for i, event in enumerate(self.events, start=1):
            fold.apply(event)
            if i % CHECKPOINT_EVERY == 0:
                self._checkpoints.append(fold.copy())
        self.final = fold

    def __len__(self) -> int:
        return len(self.events)

    @property
    def duration(self) -> float:
        """How long the replay plays at 1x (idle stretches cut, simulated ticks stretched)."""
        return self.play[-1] if self.play else 0.0

    @property
    def trace_duration(self) -> float:
        return self.times[-1] if self.times else 0.0

    def position_at_time(self, time: float) -> int:
        """How many events show at or before `time` on the replay's clock."""
        return bisect.bisect_right(self.play, time)

    def play_time(self, position: int) -> float:
        return self.play[position - 1] if position > 0 and self.play else 0.0

    def fold_at(self, position: int) -> ClusterFold:
        position = max(0, min(position, len(self.events)))
        checkpoint = position // CHECKPOINT_EVERY
        fold = self._checkpoints[checkpoint].copy()
        for event in self.events[checkpoint * CHECKPOINT_EVERY:position]:
            fold.apply(event)
        return fold

    def event(self, position: int) -> dict:
        """Event number `position` (1-based) as the page shows it: the record plus its sentence."""
        e = self.events[position - 1]
        return {**slim(e), "n": position, "text": self.texts[position - 1],
                **({"stale": True} if position in self.stale_reads else {})}

    def steps(self) -> list[dict]:
        """Each step of a scenario's trace: `start`, the position of its step line, and `n`, that of its last event
        (the one before the next step, or the trace's last): a step's tick shows the step done, a broken rule with
        it, and step ▶ goes from one done step to the next."""
        if self._steps is None:  # (a replay does not change once read: its steps are found once)
            starts = [i for i, e in enumerate(self.events) if e["type"] == STEP]
            ends = [following - 1 for following in starts[1:]] + ([len(self.events) - 1] if starts else [])
            self._steps = [{"n": end + 1, "start": start + 1, "time": self.events[end]["time"], "play": self.play[end],
                            "text": step_caption(self.events[start])} for start, end in zip(starts, ends)]
        return [dict(step) for step in self._steps]

    def info(self) -> dict:
        return {"run_dir": self.run_dir, "meta": self.meta, "events": len(self.events), "duration": self.duration,
                "trace_duration": self.trace_duration, "stepped": self.stepped,
                "step_seconds": STEP_SECONDS if self.stepped else None, "warnings": self.warnings[:20],
                "steps": self.steps(),
                # an explorer's counterexample: where the rule broke (its step is marked on the timeline)
                "broken": next(({"n": i + 1, "play": self.play[i], "step": e.get("step"), "text": self.texts[i]}
                                for i, e in enumerate(self.events) if e["type"] == RULE_BROKEN), None)}


HEAVY = {"committed": 8, "removed": 32, "entries": 0}


def slim(event: dict) -> dict:
    """An event small enough to send to a page: long lists are cut, their length kept."""
    out = {}
    for key, value in event.items():
        limit = HEAVY.get(key)
        if limit is not None and isinstance(value, list) and len(value) > limit:
            out[key] = value[:limit]
            out[key + "_count"] = len(value)
        elif key == "payload" and isinstance(value, str) and len(value) > 40:
            out[key] = value[:39] + "…"
        else:
            out[key] = value
    return out
