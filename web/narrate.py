"""Trace events in words for the dashboard's event feed ("C truncated index 4 (generation 1): conflicts ...")."""

from __future__ import annotations

import re

from lab.core.config import TIMING

TICK_MS = TIMING.tick_ms  # a node's tick when nothing says otherwise
_TICKS = re.compile(r"within (\d+) ticks")
_ENTRIES = re.compile(r"\[(\[\d+, \d+, '[0-9a-f]{16}'\](?:, )?)+\]")
_ENTRY = re.compile(r"\[(\d+), (\d+), '[0-9a-f]{16}'\]")


def humane(text, tick_ms: float | None = None) -> str:
    """A message from the nodes or the scripts as a room reads it: seconds rather than ticks, entries by index
    and generation rather than by digest."""
    text = str(text)
    text = _TICKS.sub(lambda m: f"within {int(m.group(1)) * (tick_ms or TICK_MS) / 1000:g} s", text)
    return _ENTRIES.sub(lambda m: ", ".join(f"index {i} (generation {g})" for i, g in _ENTRY.findall(m.group(0))),
                        text)


def _entries(first: int, last: int) -> str:
    if first == last:
        return f"index {first}"
    return f"indexes {first}-{last}"


def _quote(payload) -> str:
    text = str(payload)
    return f"“{text if len(text) <= 24 else text[:23] + '…'}”"


def _generations(entries: list) -> str:
    gens = sorted({e[1] for e in entries if len(e) > 1})
    if not gens:
        return ""
    word = "generation" if len(gens) == 1 else "generations"
    return f" ({word} {', '.join(str(g) for g in gens)})"


class Narrator:
    """Turns events into sentences; remembers who each node follows, to say where a conflict came from."""

    def __init__(self):
        self.leader_of: dict[str, str | None] = {}
        self.cluster_leader: str | None = None  # the newest leader anyone announced (or the state says)
        self.tick_ms: dict[str, float] = {}  # each node's tick, when the cluster says (slow motion stretches it)
        self.refused_at: dict[tuple[str, str], int] = {}  # (leader, follower) -> where the follower's log differs

    def observe(self, event: dict) -> None:
        kind, node = event.get("type"), event.get("node")
        if kind == "became_follower":
            self.leader_of[node] = event.get("leader")
        elif kind == "replication_received":
            self.leader_of[node] = event.get("from")
        elif kind == "became_leader":
            self.leader_of[node] = node
            self.cluster_leader = node
        elif kind in ("node_started", "election_started"):
            self.leader_of[node] = None
        elif kind == "replication_rejected":
            self.refused_at[(event.get("from"), node)] = event.get("prev_index")

    def describe(self, event: dict) -> str:
        text = self._describe(event)
        self.observe(event)
        return text

    def _describe(self, e: dict) -> str:  # noqa: C901 (one branch per event type reads best as a table)
        kind, node = e.get("type", "?"), e.get("node", "?")
        g = e.get
        if kind == "truncated":
            removed = g("removed") or []
            first = g("from_index")
            last = removed[-1][0] if removed else first
            what = f"{node} truncated {_entries(first, last)}{_generations(removed)}"
            reason = g("reason")
            if reason == "conflict":
                source = self.leader_of.get(node) or (self.cluster_leader if self.cluster_leader != node else None)
                other = g("conflicting_generation")
                against = f"generation {other}" if other is not None else "the leader's log"
                return f"{what}: conflicts with {against}" + (f" from {source}" if source else "")
            if reason == "restart-hwm":
                return f"{what} on restart: above its own high-water mark {g('hwm')} (high-water-mark strategy)"
            if reason == "leader-epoch":
                return f"{what}: beyond where the leader's log ends for that generation (leader-epoch)"
            if reason == "lost-tail":
                return f"{what}: never flushed to disk, lost in the crash"
            return f"{what} ({reason})"
        if kind == "cluster_started":
            nodes = ", ".join(g("nodes") or [])
            return f"Cluster started: nodes {nodes}; truncation {g('truncation')}; fsync {_fsync(g('fsync'))}"
        if kind == "cluster_stopped":
            return "Cluster stopped"
        if kind == "node_killed":
            lost = g("lost_entries")
            return f"{g('target')} killed (SIGKILL)" + (f"; {lost} unflushed entries lost" if lost else "")
        if kind in ("node_restarted", "node_paused", "node_resumed"):
            return f"{g('target')} {kind.split('_')[1]}"
        if kind == "link_cut":
            return f"Link {g('src')} → {g('dst')} cut"
        if kind == "link_healed":
            return f"Link {g('src')} → {g('dst')} healed"
        if kind == "delay_set":
            ms = g("ms") or 0
            return f"Slow motion: every message delayed {ms:g} ms" if ms else "Slow motion off"
        if kind == "settings_changed":
            changes = {k: v for k, v in e.items() if k not in ("type", "node", "time", "seq", "v", "boot", "gen", "n")}
            return "Settings: " + ", ".join(f"{k} {_fsync(v) if k == 'fsync' else v}" for k, v in changes.items())
        if kind == "client_write":
            target = g("target")
            return f"Client writes {_quote(g('payload'))} " + (f"to {target}" if target else "(to the leader)")
        if kind == "client_write_failed":
            why = g("error") or g("reason")
            return "Client write failed" + (f": {humane(why)}" if why else "")
        if kind == "client_read":
            return f"Client reads index {g('index')} from {g('target')}"
        if kind == "step":
            return f"Step: {g('text')}"
        if kind == "expectation":
            mark = "✓" if g("ok") else "✗"
            detail, name = g("detail"), str(g("name"))
            name = name if name.startswith("expect ") else f"expect {name}"
            return f"{mark} {name}" + (f": {humane(detail)}" if detail else "")
        if kind == "clocks_held":
            return "Node clocks held: nothing happens by itself until the next command"
        if kind == "clocks_released":
            return "Node clocks running"
        if kind == "node_started":
            boot = g("boot")
            again = "restarted" if boot and boot > 1 else "started"
            return (f"{node} {again}: log ends at {g('log_end')} (generation {g('last_generation')}), "
                    f"high-water mark {g('hwm')}, truncation {g('truncation')}")
        if kind == "node_stopped":
            return f"{node} stopped: {g('reason')}"
        if kind == "election_started":
            return f"{node} starts an election for generation {g('generation')}"
        if kind == "prevote_started":
            return f"{node} hears no leader: it asks whether it could win generation {g('generation')} (pre-vote)"
        if kind == "prevote_granted":
            return f"{node} would vote for {g('candidate')} in generation {g('generation')} (pre-vote)"
        if kind == "prevote_denied":
            return f"{node} would not vote for {g('candidate')} in generation {g('generation')}: {g('reason')}"
        if kind == "truncation_refused":
            return (f"{node} refuses to truncate from index {g('from_index')}: at or below its high-water mark "
                    f"{g('hwm')}, a committed entry would change")
        if kind == "wal_recovered":
            if g("repaired"):
                return (f"{node}'s write-ahead log was damaged at index {g('first_bad_index')}: repaired, it keeps "
                        f"indexes 1 to {g('log_end')} and catches up to {g('catching_up_to')} before it votes again")
            return f"{node}'s write-ahead log lost a torn tail from index {g('first_bad_index')} ({g('reason')})"
        if kind == "wal_truncated":
            return (f"{node}'s write-ahead log drops index {g('from_index')} and after: segments left "
                    f"{g('segments')}, deleted {g('deleted')}; the log ends at {g('log_end')}")
        if kind == "epoch_truncation":
            cut = g("cut")
            return (f"{node}: the leader's generation ends at index {g('end_index')}, so "
                    + (f"it removes index {cut} and after" if cut is not None else "it keeps its whole log"))
        if kind == "caught_up":
            return f"{node} holds again everything up to index {g('index')}: it votes again"
        if kind == "vote_granted":
            return f"{node} votes for {g('candidate')} in generation {g('generation')}"
        if kind == "vote_denied":
            return f"{node} refuses {g('candidate')} its vote in generation {g('generation')}: {g('reason')}"
        if kind == "became_leader":
            return f"{node} is leader of generation {g('generation')} (votes {', '.join(g('votes') or [])})"
        if kind == "became_follower":
            leader = g("leader")
            return (f"{node} follows {leader} in generation {g('generation')}" if leader
                    else f"{node} is a follower in generation {g('generation')}")
        if kind == "generation_changed":
            return f"{node}: generation {g('from_generation')} → {g('generation')}"
        if kind == "leader_append":
            return f"{node} (leader) appends {_quote(g('payload'))} at index {g('index')} (generation {g('generation')})"
        if kind == "follower_append":
            return f"{node} appends {_quote(g('payload'))} at index {g('index')} (generation {g('generation')})"
        if kind == "replication_sent":
            first, last = g("first"), g("last")
            body = "heartbeat" if first > last else f"entries {first}-{last}" if last > first else f"entry {first}"
            return f"{node} → {g('to')}: {body}, high-water mark {g('hwm')}"
        if kind == "replication_received":
            first, last = g("first"), g("last")
            body = "heartbeat" if first > last else f"entries {first}-{last}" if last > first else f"entry {first}"
            return f"{node} ← {g('from')}: {body}, high-water mark {g('hwm')}"
        if kind == "replication_rejected":
            return f"{node} rejects {g('from')}'s entries after index {g('prev_index')}: {g('reason')}"
        if kind == "match_index_updated":
            return f"{node}: {g('follower')} matches up to index {g('match_index')} (next {g('next_index')})"
        if kind == "next_index_backed_up":
            follower, differs = g("follower"), self.refused_at.get((node, g("follower")))
            where = f" at index {differs}" if differs else ""
            return (f"{node}: {follower}'s log differs{where}; {node} sends again from index {g('next_index')} "
                    f"({follower} keeps what matches and replaces what conflicts)")
        if kind == "hwm_changed":
            hwm = g("hwm")
            return (f"{node}'s high-water mark {g('from_hwm')} → {hwm}"
                    + (f": index {hwm} committed" if g("role") == "leader" else ""))
        if kind == "epoch_query":
            return f"{node} asks the leader where generation {g('generation')} ends"
        if kind == "epoch_answer":
            return f"{node}: generation {g('generation')} ends at index {g('end_index')}"
        if kind == "write_requested":
            return f"{node} receives the write {_quote(g('payload'))}"
        if kind == "write_acked":
            return f"{node} acknowledges the write at index {g('index')} (generation {g('generation')})"
        if kind == "write_failed":
            return f"{node}: write failed: {humane(g('reason'), self.tick_ms.get(node))}"
        if kind == "read_served":
            return f"{node} serves index {g('index')} ({_quote(g('payload'))}), high-water mark {g('hwm')}"
        if kind == "read_refused":
            return f"{node} refuses to read index {g('index')}: {g('reason')}"
        if kind == "log_snapshot":
            return f"{node}'s final log: {g('log_end')} entries, high-water mark {g('hwm')}"
        return f"{node}: {kind}"


def _fsync(value) -> str:
    if isinstance(value, dict):
        kinds = set(value.values())
        if len(kinds) == 1:
            return kinds.pop()
        return ", ".join(f"{n} {p}" for n, p in sorted(value.items()))
    return str(value)
