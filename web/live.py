"""Live view of a running cluster: poll the control API, coalesce what changed into one frame per tick.

A frame is a snapshot (every node) or a delta (only the nodes that changed) plus the trace events that arrived
since the last frame. When thousands of events arrive between two frames, the rare ones (elections,
truncations, faults, refusals) are all kept, the newest routine ones fill the rest of the budget and the
remainder is only counted by type: the page never receives more than `event_cap` events per frame.

The feed also keeps the story of the run (its first and latest story events, and the latest acknowledged
writes) so that a page opened mid-class sees the elections, truncations and refusals so far, not only the
last few heartbeats.
"""

from __future__ import annotations

import time
from collections import Counter, deque

from lab.processes.client import ControlClient, ControlError
from web.fold import slim
from web.frames import election_clock, frame, shaped_nodes, shown_links
from web.narrate import Narrator
from lab.core.reasons import because
from lab.core.events import REPLICATION_RECEIVED, REPLICATION_SENT, WRITE_ACKED
from web.kinds import ROUTINE, STORY  # the kinds a crowded frame samples, and the run's story

LATEST_EVENTS = 4000  # the sequence view of a live cluster draws from these (heartbeats included)
RUN_EVENTS = 3000  # ... and its whole run from these (no heartbeats): a guided scenario's, from its first step
STORY_HEAD = 40  # the run's first story events (its first election) are never forgotten
STORY_TAIL = 300
ACKS_KEPT = 20


def heartbeat(event: dict) -> bool:
    """A leader's heartbeat or a follower's answer to one: a replication that carries no entry."""
    return event.get("type") in (REPLICATION_SENT, REPLICATION_RECEIVED) and \
        (event.get("first") or 0) > (event.get("last") or 0)


def select_events(events: list[dict], cap: int) -> tuple[list[dict], Counter]:
    """Keep at most `cap` events: every rare one first, then the newest routine ones; count what is left out."""
    if len(events) <= cap:
        return events, Counter()
    rare = [e for e in events if e["type"] not in ROUTINE]
    if len(rare) >= cap:
        kept = rare[-cap:]
    else:
        routine = [e for e in events if e["type"] in ROUTINE]
        kept = sorted(rare + routine[len(routine) - (cap - len(rare)):], key=lambda e: e["n"])
    kept_ids = {e["n"] for e in kept}
    skipped = Counter(e["type"] for e in events if e["n"] not in kept_ids)
    return kept, skipped


def for_watchers(frame: dict, cap: int) -> dict:
    """The frame a page that only watches is sent: at most `cap` of its events, chosen as select_events chooses,
    the rest counted by type with those the frame had already left out. Its nodes and sequence are the frame's,
    so that its deltas still apply one on another."""
    if len(frame["events"]) <= cap:
        return frame
    kept, skipped = select_events(frame["events"], cap)
    skipped.update(frame.get("skipped_by_type") or {})
    return {**frame, "events": kept, "skipped": sum(skipped.values()), "skipped_by_type": dict(skipped)}


def merged(first: dict, then: dict) -> dict:
    """Two frames in a row as one: what `then` says on top of `first` (a page that missed `first` applies this one
    where it would have applied `first`). A snapshot after anything is itself."""
    if then["kind"] == "snapshot":
        return then
    nodes = {n["id"]: n for n in first["nodes"]}
    nodes.update((n["id"], n) for n in then["nodes"])
    for name in then["gone"]:
        nodes.pop(name, None)
    gone = list(dict.fromkeys(n for n in (*first["gone"], *then["gone"]) if n not in nodes))
    skipped = Counter(first.get("skipped_by_type") or {})
    skipped.update(then.get("skipped_by_type") or {})
    return {**then, "kind": first["kind"], "base": first["base"], "nodes": list(nodes.values()), "gone": gone,
            "events": first["events"] + then["events"], "skipped": sum(skipped.values()),
            "skipped_by_type": dict(skipped)}


class LiveFeed:
    """The newest state of one cluster and the frames that bring a page up to date with it."""

    def __init__(self, client: ControlClient | None, *, event_cap: int = 200, log_window: int = 48,
                 recent: int = 60, clock=time.time):
        self.event_cap = event_cap
        self.log_window = log_window
        self.clock = clock
        self.recent: deque = deque(maxlen=recent)
        self.latest: deque = deque(maxlen=LATEST_EVENTS)  # every event of the last moments, for the sequence view
        self.run_events: deque = deque(maxlen=RUN_EVENTS)  # every event but heartbeats: the run's story to draw
        self.reset(client)

    def reset(self, client: ControlClient | None) -> None:
        """Follow another cluster (a new one was started): forget everything about the old one."""
        self.client = client
        self.seq = 0
        self.after = 0
        self.caught_up = False
        self.nodes: dict[str, dict] = {}
        self.cluster: dict = {"leader": None, "settings": {}, "links": [], "ids": [], "connected": False,
                              "control_url": client.url if client else None, "error": None}
        self.recent.clear()
        self.latest.clear()
        self.run_events.clear()
        self.story_head: list[dict] = []
        self.story_tail: deque = deque(maxlen=STORY_TAIL)
        self.acks: deque = deque(maxlen=ACKS_KEPT)
        self.counts: Counter = Counter()  # every event seen, by type (what a late page did not get is counted)
        self.clocks: dict[str, dict] = {}
        self.run_offset: float | None = None  # wall clock minus the run's clock (the trace's "time")
        self.narrator = Narrator()
        self.total = 0
        self._rate_window: deque = deque()

    # ---- polling ------------------------------------------------------------------------------------------

    def poll(self, state: dict | None = None, state_error: str | None = None) -> dict | None:
        """Read the new events (and the state, unless a fresher one is given); return a delta frame, or None
        when nothing changed."""
        if self.client is None:
            return None
        try:
            if state_error:
                raise ControlError(state_error)
            if state is None:
                state = self.client.state(log=self.log_window)
            events = self._new_events()
        except ControlError as exc:
            if self.cluster.get("connected") or self.cluster.get("error") != str(exc):
                self.cluster = {**self.cluster, "connected": False, "error": because(exc)}
                return self._frame({}, [], Counter())
            return None
        return self._update(state, events)

    def _new_events(self) -> list[dict]:
        fresh: list[dict] = []
        while True:  # the first poll may find a long history: read it all but keep only the tail
            answer = self.client.events(self.after, limit=5000)
            batch = answer.get("events") or []
            for i, event in enumerate(batch, start=self.after + 1):
                event["n"] = i
            self.after = int(answer.get("next", self.after + len(batch)))
            fresh.extend(batch)
            if not self.caught_up and len(fresh) > 5000:
                fresh = fresh[-self.event_cap:]
            if len(batch) < 5000:
                break
        self.caught_up = True
        return fresh

    def _update(self, state: dict, events: list[dict]) -> dict | None:
        ids = [n["id"] for n in state.get("nodes") or []]
        links = state.get("links") or []
        if state.get("time") is not None:  # a state read late overstates the offset: keep the smallest seen
            offset = self.clock() - float(state["time"])
            self.run_offset = offset if self.run_offset is None else min(self.run_offset, offset)
        clocks = {}
        for node in state.get("nodes") or []:
            clock = election_clock(node)
            if clock is not None:
                clocks[node["id"]] = clock
        changed = {shaped["id"]: shaped for shaped in shaped_nodes(state.get("nodes") or [], links, self.log_window)
                   if self.nodes.get(shaped["id"]) != shaped}
        gone = [n for n in self.nodes if n not in ids]
        for name in gone:
            del self.nodes[name]
        self.nodes.update(changed)
        settings = state.get("settings") or {}
        cluster = {"leader": state.get("leader"), "settings": settings,
                   "links": shown_links(links, settings.get("delay_ms")), "ids": ids, "connected": True,
                   "error": None, "control_url": self.client.url}
        clocks_changed = clocks != self.clocks
        self.clocks = clocks
        cluster_changed = cluster != self.cluster
        self.cluster = cluster
        kept, skipped = select_events(events, self.event_cap)
        if cluster["leader"]:
            self.narrator.cluster_leader = cluster["leader"]
        kept_ids = {e["n"] for e in kept}
        narrated = []
        for event in events:  # in order, so that the narrator knows who led whom at each event
            if event["n"] in kept_ids:
                shown = slim(event)
                shown["text"] = self.narrator.describe(event)
                if self.narrator.stale is not None:
                    shown["stale"] = True  # a stale read's answer: the feed marks it
                narrated.append(shown)
            else:
                self.narrator.observe(event)
        narrated.sort(key=lambda e: (e.get("time", 0), e["n"]))  # files are read one after another
        self.recent.extend(narrated)
        self.latest.extend(events)
        self.run_events.extend(e for e in events if not heartbeat(e))
        self._keep_story(narrated)
        self.counts.update(e["type"] for e in events)
        self._count(len(events))
        if not changed and not gone and not cluster_changed and not events and not clocks_changed:
            return None
        return self._frame(changed, narrated, skipped, gone)

    def _keep_story(self, narrated: list[dict]) -> None:
        for event in narrated:
            if event["type"] == WRITE_ACKED:
                self.acks.append(event)
            elif event["type"] in STORY:
                if len(self.story_head) < STORY_HEAD:
                    self.story_head.append(event)
                else:
                    self.story_tail.append(event)

    def _count(self, n: int) -> None:
        now = self.clock()
        self.total += n
        self._rate_window.append((now, self.total))
        while self._rate_window and now - self._rate_window[0][0] > 2.0:
            self._rate_window.popleft()

    @property
    def rate(self) -> float:
        if len(self._rate_window) < 2:
            return 0.0
        (t0, n0), (t1, n1) = self._rate_window[0], self._rate_window[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else 0.0

    # ---- frames -------------------------------------------------------------------------------------------

    def _run_clock(self, now: float) -> float | None:
        """The run's clock now (the `time` of an event happening now): pages time messages in flight by it."""
        return round(now - self.run_offset, 4) if self.run_offset is not None else None

    def _frame(self, nodes: dict, events: list[dict], skipped: Counter, gone: list[str] = ()) -> dict:
        self.seq += 1
        now = self.clock()
        return frame("delta", self.seq, sent=now, run_clock=self._run_clock(now), nodes=list(nodes.values()),
                     gone=gone, cluster=self.cluster, clocks=self.clocks, events=events, skipped=skipped,
                     events_next=self.after + 1, rate=round(self.rate, 1))

    def last_seconds(self, seconds: float | None, heartbeats: bool = True) -> list[dict]:
        """The events of the run's last `seconds` (None: the whole run, as far as the feed keeps it: longer without
        its heartbeats), in trace order."""
        kept = self.run_events if seconds is None and not heartbeats else self.latest
        events = sorted(kept, key=lambda e: (e.get("time", 0), e.get("node", ""), e.get("seq", 0)))
        if not events or seconds is None:
            return events
        since = events[-1].get("time", 0) - seconds
        return [e for e in events if e.get("time", 0) >= since]

    def story(self) -> list[dict]:
        """The events a page that joins now is shown: the story so far, the latest writes, the latest events."""
        by_number = {e["n"]: e for part in (self.story_head, self.story_tail, self.acks, self.recent) for e in part}
        return sorted(by_number.values(), key=lambda e: (e.get("time", 0), e["n"]))

    def snapshot(self) -> dict:
        """Everything a page needs to start drawing; the deltas that follow apply on top of it."""
        now = self.clock()
        events = self.story()
        return frame("snapshot", self.seq, sent=now, run_clock=self._run_clock(now),
                     nodes=[self.nodes[n] for n in sorted(self.nodes)], cluster=self.cluster, clocks=self.clocks,
                     events=events, skipped=self.counts - Counter(e["type"] for e in events),
                     events_next=self.after + 1, rate=round(self.rate, 1))
