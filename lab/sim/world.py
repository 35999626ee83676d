"""The explorer's world: the simulator's own cluster (real replicas, drivers and in-memory ports) whose network
holds every message until a choice delivers, drops or duplicates it, whose state can be copied and hashed, and
whose every step is checked against the grader's rules (lab.core.monitor).

A choice is a command of the scenario language (lab.harness.scenario, header `network manual`), as words:
`deliver A->B ReplicationRequest [K]`, `drop ...`, `duplicate ...`, `campaign A`, `heartbeat A`, `write v1 to A
nowait`, `read 2 at A`, `kill A [lose-unsynced]`, `restart A`, `pause A`, `resume A`, `cut A->B`, `heal A<->B`,
`sync A` (a leader's fsync completes: until then it holds its answers and promises, and has not counted itself).
"""

from __future__ import annotations

import itertools
import traceback
import weakref
from functools import partial

from lab.core.guard import DEFAULT_LIMIT, Fault, fault_of, guarded
from lab.core.messages import Event, event_fields
from lab.core.monitor import Monitor, Violation
from lab.sim.calls import Ear, judging
from lab.sim.reach import Reach
from lab.sim.choices import WALK_KINDS, Bounds, enumerate_choices
from lab.sim.copies import _copy, _copy_log, _copy_replica
from lab.sim.cluster import SimClock, SimCluster, SimTransport
from lab.core.reasons import STOPPED_BECAUSE, Reason
from lab.core.events import NODE_EXITED, STUDENT_CALL

# Small segments (about two entries each), so that a truncation crosses segment files (exercise 5).
SEGMENT_BYTES = 40

# The world's own findings beside the grader's rules: the student's code failed (raised, looped, returned a wrong
# type), one of its calls broke its exercise's rule, or a node stopped. A failure or a stop ends a run whatever rules
# were asked (nothing after it is the code's); a call that broke its rule ends it only when no rules were asked, or
# that one: a run shown for a rule of the cluster's state goes on past such a call, which it names.
STUDENT_FAULT, STUDENT_CALL_BROKEN, NODE_STOPPED = "student-fault", "student-call", "node-exited"
FINDINGS = (STUDENT_FAULT, STUDENT_CALL_BROKEN, NODE_STOPPED)
ALWAYS = (STUDENT_FAULT, NODE_STOPPED)


_MASK = (1 << 64) - 1


def _stirred(value: int) -> int:
    """A message's hash, stirred (splitmix64's finalizer) before it joins the sum of the messages in flight. Python's
    tuple hashes are close to linear in their parts, so their plain sum made two different sets of messages meet:
    A->B of generation 1 with A->C of generation 2 summed as A->B of 2 with A->C of 1, for one string hash seed in
    two, and the search took one state for the other."""
    x = value & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


class _NoRandom:
    """Election timeouts never decide anything here (timers fire as choices): no random state to copy."""

    @staticmethod
    def randrange(n: int) -> int:
        return 0


_NO_RANDOM = _NoRandom()


class _Sink:
    """A node's trace while searching: the events as small dicts in the world's list, read after each step."""

    __slots__ = ("world", "node")

    def __init__(self, world: "World", node: str):
        self.world, self.node = world, node

    def emit(self, events, *, time: float, boot: int) -> None:
        records, node = self.world.events, self.node
        for event in events:
            fields = event_fields(event)
            records.append({**fields, "type": event.type, "node": node, "boot": boot, "gen": fields.get("gen", 0)})

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class World(SimCluster):
    defer_sync = True  # a leader's fsync completes as a choice (`sync A`): the search meets its overlap

    def __init__(self, nodes=3, *, truncation="generation", impl="solutions", fsync="always", trace_dir=None,
                 segment_bytes: int = SEGMENT_BYTES, limit: float = DEFAULT_LIMIT, record_calls: bool = False,
                 fast: bool = False, meta: dict | None = None, reach: Reach | None = None, defer_sync: bool = True):
        """`fast`: while searching, events are small dicts read and dropped after each step (no trace kept).
        `reach`: where what the run reaches is gathered (a search hands each of its worlds the same).
        `defer_sync`: a leader's fsync completes as a choice of its own (a script's `sync manual`); else at once."""
        self.defer_sync = defer_sync
        self.inflight: list[tuple[str, str, object]] = []
        self._inflight_hash = 0  # the sum of the messages' hashes: the same for any order of the same messages
        self._node_keys: dict[str, int] = {}
        self._owned: set[str] | None = None  # None: this world owns every node (it is no clone)
        self._logs_moved = True  # a node may have changed since the rules over the logs were last checked
        self.fast = fast and trace_dir is None
        self.fault: tuple[str, Fault] | None = None
        self.exited: tuple[str, str] | None = None
        self.writes = self.kills = 0
        self.calls: list[dict] = []
        self.heard: list = []  # with record_calls: (node, step, lab.core.judges.Call) of each call, as it was made
        self.record = record_calls
        self.wrong = None  # (node, Call): the first call of a student's function that broke its exercise's rule
        self.called: set[str] = set()  # the student's functions called (shared with this world's clones)
        self.unwritten: set[str] = set()  # those that raised NotImplementedError: not written yet
        self.current = ""
        self.twice = False  # call each student's function a second time (lab.explore.twice)
        self.differed = None  # the first call whose two answers differed
        self.last_message = None
        self._seen = 0
        self.ear = Ear(self._view())
        super().__init__(nodes, seed=0, truncation=truncation, fsync=fsync, impl=impl, trace_dir=trace_dir,
                         segment_bytes=segment_bytes, limit=limit,
                         meta={"source": "sim", "explore": True, **(meta or {})})
        self.reach = reach if reach is not None else Reach()
        self.impl = judging(guarded(self.impl, limit), impl, self.ear, self.reach)
        for name in self.names:
            self.logs[name]._impl = self.impl
            if self.replicas[name] is not None:
                self.replicas[name].impl = self.impl
        self.monitor = Monitor(len(self.names), partial(World.holders, self._view()))
        self.violations()

    # ---- the simulator's hooks --------------------------------------------------------------------------------

    def _view(self):
        """This world as its ports, trace sinks and monitor hold it: a weak reference, so that they make no cycle
        with it and a world the search drops is freed at once by its reference count (the search runs with the
        collector off: a cycle per world made it collect every level, a third of its time)."""
        view = self.__dict__.get("_weak")
        if view is None:
            view = self._weak = weakref.proxy(self)
        return view

    def _trace(self, who: str):
        if not self.fast:
            return super()._trace(who)
        sink = self._traces.get(who)
        if sink is None:
            sink = self._traces[who] = _Sink(self._view(), who)
        return sink

    def _boot(self, name: str) -> None:
        super()._boot(name)
        if self.replicas[name] is not None:
            self.replicas[name].rng = _NO_RANDOM
            if hasattr(self, "monitor"):
                self.replicas[name].impl = self.impl

    def answered(self, answer, node) -> None:
        if self.fast:  # a search keeps no clients' history: the answer only
            self.answers[answer.request] = answer
            return
        super().answered(answer, node)

    def _send(self, src: str, dst: str, message) -> None:
        if (src, dst) not in self.cuts:
            self.inflight.append((src, dst, message))
            self._inflight_hash = (self._inflight_hash + _stirred(hash((src, dst, message)))) & _MASK

    def _step(self, name: str, step, *args) -> None:
        self.current, mark = name, len(self.calls)
        self.ear.world = self._view()  # the student's calls of this step are this world's
        try:
            self._apply_step(name, step, *args)
        finally:
            if len(self.calls) > mark and not self.fast:  # the student's calls of this step, for the replay
                replica = self.replicas[name]
                self.drivers[name].emit(*(Event(STUDENT_CALL, {"gen": replica.generation if replica else 0, **c})
                                          for c in self.calls[mark:]))

    def _apply_step(self, name: str, step, *args) -> None:
        ready = None
        try:
            ready = step(*args)
            self.drivers[name].apply([ready])
        except NotImplementedError:  # a function not written yet: nothing to search (the caller says so)
            raise
        except Exception as exc:  # a node process stops; here the search stops too
            if ready is not None and ready.events:  # what the node decided before its storage refused: the rules
                driver = self.drivers[name]         # judge the decision (e.g. an epoch cut at 0), not only the stop
                driver.trace.emit(ready.events, time=driver.clock.now(), boot=driver.boot)
            fault = fault_of(exc)
            reason = fault.sentence() if fault else traceback.format_exception_only(type(exc), exc)[-1].strip()
            if fault and self.fault is None:
                self.fault = (name, fault)
            elif self.exited is None:
                self.exited = (name, reason)
            self.replicas[name] = None
            self.states[name] = "exited"
            self.exit_reasons[name] = reason
            self._held[name].clear()
            self._cluster_event(NODE_EXITED, target=name, code=70, reason=reason)

    # ---- choices ----------------------------------------------------------------------------------------------

    def apply(self, words: tuple[str, ...]) -> tuple[str, ...] | None:
        """Do one choice; returns it as the script's words (a write gets its payload), None when it cannot be
        done in this state (a message no longer in flight, a node not running...)."""
        head = words[0]
        self.now += 1
        self.ear.world = self._view()  # the calls of this step are this world's (a restart's too, before its step)
        if head in ("deliver", "drop", "duplicate"):
            position = self._find(words)
            if position is None:
                return None
            src, dst, message = self.inflight[position]
            self.last_message = message
            if head == "deliver" and self.states[dst] != "running":
                return None
            if head == "duplicate":
                self.inflight.append((src, dst, message))
                self._inflight_hash = (self._inflight_hash + _stirred(hash((src, dst, message)))) & _MASK
            else:
                del self.inflight[position]
                self._inflight_hash = (self._inflight_hash - _stirred(hash((src, dst, message)))) & _MASK
                if head == "deliver" and (src, dst) not in self.cuts:
                    self._own(dst)
                    self._step(dst, self.replicas[dst].receive, src, message)
            return words
        if head == "write":
            node = words[-2] if words[-1] == "nowait" else words[-1]
            if self.states.get(node) != "running":
                return None
            payload = words[1] if len(words) > 3 else f"v{self.writes + 1}"
            self.writes += 1
            self._own(node)
            self.write(payload, node)
            return ("write", payload, "to", node, "nowait")
        if head == "read":
            if self.states.get(words[3]) != "running":
                return None
            self._own(words[3])
            self.ask_read(int(words[1]), words[3])  # (its answer may wait for a sync: the rules judge the traces)
            return words
        if head == "heal" and len(words) == 1:
            self.heal()
            return words
        if head in ("cut", "heal"):
            a, b = words[1].replace("<->", "->").split("->")
            both = "<->" in words[1]
            (self.cut if head == "cut" else self.heal)(a, b, one_way=not both)
            return words
        node = words[1]
        state = self.states.get(node)
        if state is not None:
            self._own(node)
        if head == "sync":
            return words if self._finish_sync(node) else None
        if head == "campaign" or head == "heartbeat":
            if state != "running":
                return None
            if head == "campaign":
                self.campaign(node)
            else:
                replica = self.replicas[node]
                if replica.role != "leader":
                    return None
                replica.heartbeat_elapsed = replica.heartbeat_ticks - 1
                self._step(node, replica.tick)
            return words
        if head == "kill" and state in ("running", "paused"):
            self.kills += 1
            self.kill(node, lose_unsynced="lose-unsynced" in words)
            return words
        if head == "restart" and state in ("killed", "exited"):
            self.restart(node)
            return words
        if head == "pause" and state == "running":
            self.pause(node)
            return words
        if head == "resume" and state == "paused":
            self.resume(node)
            return words
        return None

    def in_flight(self, words: tuple[str, ...]):
        """The message a move (deliver, drop, duplicate) would take in this state, or None."""
        position = self._find(words)
        return self.inflight[position][2] if position is not None else None

    def _finish_sync(self, node: str) -> bool:
        """A leader's pending fsync completes (the choice `sync A`); False when the node has none under way."""
        if self.states[node] != "running" or not self.drivers[node].sync_pending:
            return False
        self._step(node, self.drivers[node].finish_sync)
        return True

    def _find(self, words) -> int | None:
        if len(words) < 3 or "->" not in words[1]:
            return None
        src, dst = words[1].split("->")
        kind, k = words[2], int(words[3]) if len(words) > 3 else 0
        for position, (s, d, message) in enumerate(self.inflight):
            if s == src and d == dst and type(message).__name__ == kind:
                if k == 0:
                    return position
                k -= 1
        return None

    def choices(self, bounds: Bounds = Bounds()) -> list[tuple[str, ...]]:
        """Every choice in this state, in a fixed order (lab.sim.choices)."""
        return enumerate_choices(self, bounds)

    # ---- the rules --------------------------------------------------------------------------------------------

    def log_of(self, name: str) -> list:
        """A node's log entries as they are now: its replica's, or its WAL's while the node is down."""
        replica = self.replicas[name]
        return replica.log._entries if replica is not None else list(self.logs[name].entries())

    def holders(self, leader: str, k: int) -> list[str]:
        """The nodes that hold the leader's entries 1..k on their disks (the leader included): the lab's own count,
        from logs. A leader's entries still being synced do not count, nor a follower's: a mark over them would
        not survive a power cut. A node with fsync `never` is taken at its word (its lesson is its own: K2)."""
        mine = self.replicas[leader].log._entries[:k]
        return [name for name in self.names if self.durable_log(name)[:k] == mine]

    def durable_log(self, name: str) -> list:
        storage = self.logs[name]
        if storage.fsync == "never":
            return self.log_of(name)
        return list(itertools.islice(storage.entries(), self.durable_end(name)))

    def violations(self) -> list[Violation]:
        """The rules the events since the last call broke, then the rules over the logs as they are now."""
        events, feed, found = self.events, self.monitor.feed, []
        for position in range(self._seen, len(events)):
            found.extend(feed(events[position]))
        if self.fast:
            events.clear()
            self._seen = 0
        else:
            self._seen = len(events)
        if not found and self._logs_moved:  # no node touched (a message dropped, a link cut): the logs, marks and
            # committed entries are those already checked
            found = self.monitor.check_logs({n: (r.log._entries, r.high_water_mark)
                                             for n, r in self.replicas.items() if r is not None})
            self._logs_moved = bool(found)
        if self.fault is not None:
            node, fault = self.fault
            found.insert(0, Violation(STUDENT_FAULT, node, None, fault.sentence(), (("fault", fault),)))
        if self.wrong is not None:  # after the grader's rules the same step broke, if any: they come first
            node, call = self.wrong
            found.append(Violation(STUDENT_CALL_BROKEN, node, None, call.sentence(), (("call", call),)))
        if self.exited is not None:
            node, reason = self.exited
            found.append(Violation(NODE_STOPPED, node, None, Reason(STOPPED_BECAUSE, node=node, why=reason),
                                   (("reason", reason),)))
        return found

    # ---- copy and hash ----------------------------------------------------------------------------------------

    def key(self) -> int:
        """A hash of the state (not of its history): equal states, equal keys. Each node's part is kept until a
        step touches that node."""
        parts, cache = [], self._node_keys
        for name in self.names:
            part = cache.get(name)
            if part is None:
                part = cache[name] = self._node_key(name)
            parts.append(part)
        return hash((self.writes, self.kills, tuple(sorted(self.cuts)), self._inflight_hash,
                     tuple(sorted(self.monitor.acked.items())), *parts))

    def _node_key(self, name: str) -> int:
        r, disk = self.replicas[name], self.logs[name]
        driver = self.drivers.get(name)
        held = driver.held if driver is not None and r is not None else None
        head = (self.states[name], disk.synced, self.states_on_disk[name].load(), len(self._held[name]),
                None if held is None else tuple(held))
        if r is None:
            return hash((head, tuple(disk.entries())))
        return hash((head, r.role, r.generation, r.voted_for, r.leader, tuple(r.log._entries), r.high_water_mark,
                     r.confirmed_hwm, r.durable_end, tuple(sorted((n, p.match, p.next) for n, p in r.progress.items())),
                     tuple(sorted(r.votes)), r.awaiting_epoch_answer, tuple(r.pending_writes)))

    def clone(self) -> "World":
        """A copy whose steps do not touch this world (only while searching: no trace files). Copy on write:
        the nodes are shared until a step touches one (`_own`), so a step copies one node, not the cluster."""
        new = object.__new__(World)
        d = new.__dict__
        d.update(self.__dict__)
        new.inflight = list(self.inflight)
        new.replicas, new.logs = dict(self.replicas), dict(self.logs)
        new.states_on_disk, new.drivers = dict(self.states_on_disk), dict(self.drivers)
        new.states, new.exit_reasons, new.boots = dict(self.states), dict(self.exit_reasons), dict(self.boots)
        new._held, new._node_keys, new._owned = dict(self._held), dict(self._node_keys), set()
        new.cuts, new.answers, new.events, new._traces = set(self.cuts), {}, [], {}
        new._weak = weakref.proxy(new)
        new.monitor = self.monitor.copy()
        new.monitor.holders = partial(World.holders, new._weak)
        return new

    def _own(self, name: str) -> None:
        """Before a step touches `name`: this world's own copy of that node (its replica, disk and driver)."""
        self._node_keys.pop(name, None)
        self._logs_moved = True
        if self._owned is None or name in self._owned:
            return
        self._owned.add(name)
        self.replicas[name] = _copy_replica(self.replicas[name])
        log = self.logs[name] = _copy_log(self.logs[name])
        state = self.states_on_disk[name] = _copy(self.states_on_disk[name])
        self._held[name] = list(self._held[name])
        driver = self.drivers.get(name)
        if driver is not None:
            d = self.drivers[name] = _copy(driver)
            me = self._view()
            d.log, d.state, d.transport = log, state, SimTransport(me, name)
            d.replica, d.held = self.replicas[name], None if driver.held is None else list(driver.held)
            d.trace, d.clock = self._trace(name), SimClock(me)


def script_line(words: tuple[str, ...]) -> str:
    return " ".join(words)


__all__ = ["World", "Bounds", "WALK_KINDS", "SEGMENT_BYTES", "ALWAYS", "FINDINGS", "script_line"]
