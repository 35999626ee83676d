"""The clients' history of a run, read from its trace (docs/trace-format.md): every client operation with its
interval in time and the node that answered; each read judged against the writes acknowledged before it began; each
client session's read-your-writes and monotonic reads; and the whole history checked for linearizability, a register
per log index (lab.harness.linearizable). `check(events)` takes any run's events (simulated, real, a chaos run, a
submission's runs); `check_dir(DIR)` reads a trace directory.

The pattern's rule is that no node serves an entry above its own high-water mark. A follower learns the mark from
its leader's next message, so its mark lags: a read it refuses after the leader acknowledged a write of that index
to some client is allowed, but stale, and the history with it is not linearizable. A read served above its node's
mark is dirty: what a broken check_read does, and what the grader's rules forbid.

An operation's interval runs from its client's request (`client_write`, `client_read`) to the answer the client got
(`client_answer`); the order of two lines of the cluster's own file at the same instant is their `seq`. A trace
written before those lines existed is read from the nodes' lines (a write ends when its leader acknowledged it, a
read when its node answered), each interval widened to the whole instant, so that no tie is taken for an order.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from lab.core import events as ev
from lab.core.reasons import ABOVE_HWM, NO_SUCH_INDEX, READ_REFUSED
from lab.harness.linearizable import NEVER, READ, WRITE, Op, Verdict, check as search
from lab.ports.trace import CLUSTER, read_kinds, read_trace_meta

SERVED, REFUSED, STALE, DIRTY, UNANSWERED = "served", "refused", "stale", "dirty", "unanswered"
VERDICTS = (SERVED, REFUSED, STALE, DIRTY, UNANSWERED)  # a read's, in the order a report counts them
REFUSED_BY_MARK = (ABOVE_HWM, NO_SUCH_INDEX, READ_REFUSED)  # refusals that say "nothing committed there yet"
RYW, MONOTONIC = "read-your-writes", "monotonic-reads"  # the session guarantees checked
ONE_CLIENT = "client"  # the session of a trace that names none: the run's one client
EARLY, LATE = float("-inf"), float("inf")  # a node's line's place within its instant: unknown, so widened

_CALLS = (ev.CLIENT_WRITE, ev.CLIENT_READ)
_NODE_READS = (ev.READ_SERVED, ev.READ_REFUSED, ev.READ_FAILED)


@dataclass
class Operation:
    """One client operation. `start` and `end` are instants (seconds, order); `end` None: no answer came.
    `node`: who answered (`target`: who was asked); `digest`: what was written or served; a read's `hwm` is the mark
    its answer gave. A write some leader appended (`appended`) may take effect even without an answer."""

    request: str
    kind: str
    client: str
    start: tuple
    end: tuple | None = None
    target: str | None = None
    node: str | None = None
    index: int | None = None
    digest: str | None = None
    payload: str = ""
    ok: bool = False
    refusal: str = ""
    hwm: int | None = None
    linearizable: bool = False
    appended: bool = False
    verdict: str = ""  # a read's: one of VERDICTS
    acked_before: "Operation | None" = None  # a stale read's: the write of its index acknowledged before it began
    leader: str | None = None  # the leader when the read was answered, and its mark then
    leader_hwm: int | None = None

    @property
    def seconds(self) -> tuple[float, float | None]:
        return self.start[0], None if self.end is None else self.end[0]


@dataclass(frozen=True)
class SessionViolation:
    """A session saw the log go back: `later`, a read refused, after `earlier`, its own acknowledged write of that
    index (read-your-writes) or its read served at that index or after (monotonic reads)."""

    kind: str
    client: str
    earlier: Operation
    later: Operation


@dataclass
class History:
    operations: list[Operation]
    sessions: list[SessionViolation]
    parts: dict[int, Verdict]  # index -> the linearizability search of its operations
    from_answers: bool  # intervals end at the clients' answers (else at the nodes' lines)

    @property
    def reads(self) -> list[Operation]:
        return [op for op in self.operations if op.kind == READ]

    @property
    def writes(self) -> list[Operation]:
        return [op for op in self.operations if op.kind == WRITE]

    def of_verdict(self, verdict: str) -> list[Operation]:
        return [op for op in self.reads if op.verdict == verdict]

    def by_node(self) -> dict[str, Counter]:
        """Each node's reads, counted by verdict (a read nobody answered counts for the node it asked)."""
        counts: dict[str, Counter] = defaultdict(Counter)
        for op in self.reads:
            counts[op.node or op.target or "?"][op.verdict] += 1
        return dict(sorted(counts.items()))

    def sessions_of(self, kind: str) -> dict[str, int]:
        """Each session's violations of one guarantee (every session, those with none too)."""
        found = {op.client: 0 for op in self.operations}
        for v in self.sessions:
            if v.kind == kind:
                found[v.client] += 1
        return dict(sorted(found.items()))

    @property
    def linearizable(self) -> bool | None:
        """True: every index's operations have an order; False: one has none; None: a search ran out of budget."""
        verdicts = [v.ok for v in self.parts.values()]
        return False if False in verdicts else None if None in verdicts else True

    def not_linearizable(self) -> list[int]:
        return sorted(index for index, v in self.parts.items() if v.ok is False)

    def summary(self) -> dict:
        """The figures without the operations (a chaos run's `--json`): counts per node and per session."""
        return {"operations": len(self.operations), "reads_by_node": {n: dict(c) for n, c in self.by_node().items()},
                "stale": len(self.of_verdict(STALE)), "dirty": len(self.of_verdict(DIRTY)),
                "sessions": {"read_your_writes": self.sessions_of(RYW), "monotonic_reads": self.sessions_of(MONOTONIC)},
                "linearizable": self.linearizable, "not_linearizable": len(self.not_linearizable())}

    def as_dict(self, run: str) -> dict:
        """The figures as plain data (`--json`)."""
        def read(op: Operation) -> dict:
            return {"request": op.request, "client": op.client, "node": op.node or op.target, "index": op.index,
                    "start": op.start[0], "end": op.end[0] if op.end else None, "hwm": op.hwm, "leader": op.leader,
                    "leader_hwm": op.leader_hwm}
        return {"run": run, "operations": len(self.operations), "writes": len(self.writes), "reads": len(self.reads),
                "from_answers": self.from_answers, "reads_by_node": {n: dict(c) for n, c in self.by_node().items()},
                "stale": [read(op) for op in self.of_verdict(STALE)],
                "dirty": [read(op) for op in self.of_verdict(DIRTY)],
                "sessions": {"read_your_writes": self.sessions_of(RYW), "monotonic_reads": self.sessions_of(MONOTONIC)},
                "linearizable": self.linearizable, "not_linearizable": self.not_linearizable()}


# ---- reading the operations --------------------------------------------------------------------------------


class Marks:
    """Each node's high-water mark and who leads, as a run's events go by (in trace order)."""

    def __init__(self):
        self.marks: dict[str, int] = {}
        self.leaders: dict[str, int] = {}  # node -> the generation it leads

    def observe(self, e: dict) -> None:
        kind, node = e.get("type"), e.get("node")
        if node == CLUSTER:
            if kind in (ev.NODE_KILLED, ev.NODE_EXITED):
                self.leaders.pop(e.get("target"), None)
            return
        if kind == ev.BECAME_LEADER:
            self.leaders[node] = e.get("generation", 0)
        elif kind in (ev.BECAME_FOLLOWER, ev.NODE_STARTED, ev.ELECTION_STARTED, ev.NODE_STOPPED):
            self.leaders.pop(node, None)
        if kind in (ev.NODE_STARTED, ev.HWM_CHANGED, ev.TRUNCATED) and e.get("hwm") is not None:
            self.marks[node] = e["hwm"]

    def leader(self) -> tuple[str | None, int | None]:
        """The leader of the newest generation, and its mark."""
        if not self.leaders:
            return None, None
        leader = max(self.leaders, key=lambda n: (self.leaders[n], n))
        return leader, self.marks.get(leader)


class Stale(NamedTuple):
    """A stale read as StaleWatch sees it: the read's request, index and the node that refused it with its mark; the
    write acknowledged there before the read began and who acknowledged it; the leader then and its mark."""

    request: str
    index: int
    node: str | None
    hwm: int | None
    write: str
    acked_by: str | None
    leader: str | None
    leader_hwm: int | None


class StaleWatch:
    """The stale-read rule as a run goes, from the clients' lines of the cluster's trace (whose own order is the
    clients' real-time order): the dashboard's feed and sequence view mark with it what `check` judges. A read is
    stale when its node refused it by the mark although a write of its index had been acknowledged to a client
    before the read was asked."""

    KEPT = 100_000  # requests under way and indexes acknowledged remembered at most (a dashboard runs for hours)

    def __init__(self):
        self.marks = Marks()
        self.calls: dict[str, tuple[str, int | None]] = {}  # request -> (kind, index) under way
        self.acked: dict[int, tuple[str, str | None]] = {}  # index -> (the write's request, who acknowledged it)
        self.known: dict[str, tuple[str, str | None]] = {}  # a read's request -> what was acknowledged when asked

    def observe(self, e: dict) -> Stale | None:
        """Take one event; a stale read's answer is returned as a Stale."""
        self.marks.observe(e)
        kind, request = e.get("type"), e.get("request")
        if e.get("node") != CLUSTER or not request:
            return None
        for kept in (self.calls, self.acked, self.known):
            if len(kept) > self.KEPT:  # the oldest go first (a dict keeps its order)
                del kept[next(iter(kept))]
        if kind == ev.CLIENT_WRITE:
            self.calls[request] = (WRITE, None)
        elif kind == ev.CLIENT_READ:
            self.calls[request] = (READ, e.get("index"))
            if e.get("index") in self.acked:
                self.known[request] = self.acked[e["index"]]
        elif kind == ev.CLIENT_ANSWER:
            what, index = self.calls.pop(request, (None, None))
            known = self.known.pop(request, None)
            if what == WRITE and e.get("ok") and e.get("index") is not None:
                self.acked.setdefault(e["index"], (request, e.get("answered_by")))
            elif what == READ and known and not e.get("ok") and e.get("refusal") in REFUSED_BY_MARK:
                return Stale(request, index, e.get("answered_by"), e.get("hwm"), known[0], known[1],
                             *self.marks.leader())
        return None


class _Reader:
    """One pass over a run's events in trace order: the operations, and each node's mark and who leads as it goes."""

    def __init__(self):
        self.ops: dict[str, Operation] = {}
        self.answered: set[str] = set()
        self.acks: dict[str, tuple] = {}  # request -> (instant, node, index, digest) of its write_acked
        self.marks = Marks()
        self.committed: dict[int, str] = {}  # index -> digest of the entry first committed there
        self.order = 0

    def read(self, events: list[dict]) -> None:
        for e in sorted(events, key=lambda e: (e.get("time", 0.0), str(e.get("node")), e.get("seq", 0))):
            kind = e.get("type")
            self.marks.observe(e)
            if e.get("node") == CLUSTER:
                self._cluster(kind, e)
            else:
                self._node(kind, e)

    def _cluster(self, kind: str, e: dict) -> None:
        instant = (e.get("time", 0.0), e.get("seq", 0))
        request = e.get("request")
        if kind in _CALLS and request:
            # A node's line of the same instant sorts first (by name), and may have made the operation already.
            write = kind == ev.CLIENT_WRITE
            op = self.ops.setdefault(request, Operation(request, WRITE if write else READ, ONE_CLIENT, instant))
            op.start, op.client, op.target = instant, str(e.get("client") or ONE_CLIENT), e.get("target") or op.target
            op.linearizable = op.linearizable or bool(e.get("linearizable"))
            if write:
                op.digest, op.payload = op.digest or e.get("digest"), str(e.get("payload") or op.payload)
            elif op.index is None:
                op.index = e.get("index")
        elif kind == ev.CLIENT_ANSWER and request in self.ops:
            op = self.ops[request]
            self.answered.add(request)
            op.end, op.ok, op.node, op.refusal = instant, bool(e.get("ok")), e.get("answered_by"), e.get("refusal", "")
            op.hwm = e.get("hwm", op.hwm)
            if e.get("index") is not None and (op.ok or op.kind == READ):
                op.index = e["index"]
            if op.ok and op.kind == READ:
                op.digest = e.get("digest")
            if op.kind == READ and op.leader is None:  # no node's line said it: the leader when the answer came
                op.leader, op.leader_hwm = self.marks.leader()

    def _node(self, kind: str, e: dict) -> None:
        node, instant = e.get("node"), (e.get("time", 0.0), LATE)
        if kind == ev.HWM_CHANGED:
            for index, _, entry_digest in e.get("committed") or []:
                self.committed.setdefault(index, entry_digest)
        elif kind == ev.WRITE_REQUESTED:
            self._write_op(e)
        elif kind == ev.LEADER_APPEND:
            op = self._write_op(e)
            op.appended = True
            op.index, op.digest = e.get("index"), e.get("digest")
        elif kind == ev.WRITE_ACKED:
            self.acks[e.get("request")] = (instant, node, e.get("index"), e.get("digest"))
        elif kind in _NODE_READS:
            self._node_read(kind, e)

    def _write_op(self, e: dict) -> Operation:
        request = str(e.get("request"))
        if request not in self.ops:  # no client line: from the node that first heard of it
            self.ops[request] = Operation(request, WRITE, ONE_CLIENT, (e.get("time", 0.0), EARLY),
                                          target=e.get("node"), digest=e.get("digest"),
                                          payload=str(e.get("payload") or ""))
        return self.ops[request]

    def _node_read(self, kind: str, e: dict) -> None:
        node, request = e.get("node"), e.get("request")
        if not request:  # an older trace: the read is its node's line alone
            self.order += 1
            request = f"{node}:{e.get('seq', self.order)}"
        op = self.ops.get(request)
        if op is None:
            op = self.ops[request] = Operation(request, READ, ONE_CLIENT, (e.get("time", 0.0), EARLY), target=node,
                                               index=e.get("index"), linearizable=bool(e.get("linearizable")))
        if op.leader is None:
            op.leader, op.leader_hwm = self.marks.leader()
        if request in self.answered:
            return
        op.node, op.index, op.end = node, e.get("index"), (e.get("time", 0.0), LATE)
        op.ok = kind == ev.READ_SERVED
        op.hwm = e.get("hwm", op.hwm)
        op.refusal = "" if op.ok else ABOVE_HWM if kind == ev.READ_REFUSED else kind
        op.digest = (e.get("entry") or [None, None, None])[2] if op.ok else None

    def operations(self, from_answers: bool) -> list[Operation]:
        """The operations, ends settled: with the clients' answers, an operation with none has no end; without
        them, a write ends when its leader acknowledged it."""
        for request, op in self.ops.items():
            if op.kind != WRITE or request in self.answered:
                continue
            ack = self.acks.get(request)
            if ack is not None and not from_answers:
                op.end, op.node, op.index, op.digest, op.ok = ack[0], ack[1], ack[2], ack[3] or op.digest, True
            elif from_answers:
                op.end = None
        return sorted(self.ops.values(), key=lambda op: op.start)


# ---- judging --------------------------------------------------------------------------------------------------


def _judge_reads(ops: list[Operation], committed: dict[int, str]) -> None:
    """Each read's verdict: stale when refused by its node's mark although a write of its index had been
    acknowledged before it began; dirty when served above the mark, or served what the log never committed there."""
    acked: dict[int, list[Operation]] = defaultdict(list)
    for op in ops:
        if op.kind == WRITE and op.ok and op.end is not None and op.index is not None:
            acked[op.index].append(op)
    for op in ops:
        if op.kind != READ:
            continue
        if op.end is None or not op.ok and op.refusal not in REFUSED_BY_MARK:
            op.verdict = UNANSWERED
        elif op.ok:
            wrong = op.index in committed and op.digest is not None and committed[op.index] != op.digest
            op.verdict = DIRTY if (op.hwm is not None and op.index > op.hwm) or wrong else SERVED
        else:
            before = [w for w in acked.get(op.index, []) if w.end < op.start]
            op.acked_before = min(before, key=lambda w: w.end) if before else None
            op.verdict = STALE if before else REFUSED


def _sessions(ops: list[Operation]) -> list[SessionViolation]:
    """Per session, in its own order: a read refused by the mark after the session's own write of that index was
    acknowledged (read-your-writes), or after the session was served that index or a later one (monotonic reads).
    Each session's operations are taken in the order they began; those that ended before a read began are what the
    session knew then (a heap by end time, so a long run is read once)."""
    found: list[SessionViolation] = []
    by_client: dict[str, list[Operation]] = defaultdict(list)
    for op in ops:
        by_client[op.client].append(op)
    for client, own in by_client.items():
        ended = [(op.end, k, op) for k, op in enumerate(own) if op.ok and op.end is not None]
        heapq.heapify(ended)
        wrote: dict[int, Operation] = {}  # index -> the session's last write acknowledged there
        highest: Operation | None = None  # the session's read served at the highest index
        for later in sorted(own, key=lambda op: op.start):
            while ended and ended[0][0] < later.start:
                _, _, done = heapq.heappop(ended)
                if done.kind == WRITE and done.index is not None:
                    wrote[done.index] = done
                elif done.kind == READ and done.index is not None and (highest is None or done.index >= highest.index):
                    highest = done
            if later.kind != READ or later.verdict not in (REFUSED, STALE):
                continue
            if later.index in wrote:
                found.append(SessionViolation(RYW, client, wrote[later.index], later))
            if highest is not None and highest.index >= later.index:
                found.append(SessionViolation(MONOTONIC, client, highest, later))
    return found


def _parts(ops: list[Operation]) -> dict[int, list[Op]]:
    """One register per index: its acknowledged writes; a write appended there and never answered only when a
    read returned its value (unseen, it may never have taken effect); its reads that a mark decided."""
    parts: dict[int, list[Op]] = defaultdict(list)
    read_values = {(op.index, op.digest) for op in ops if op.kind == READ and op.verdict in (SERVED, DIRTY)}
    for op in ops:
        if op.index is None:
            continue
        if op.kind == WRITE and op.ok and op.end is not None:
            parts[op.index].append(Op(op.start, op.end, (WRITE, op.digest), None, op))
        elif op.kind == WRITE and op.appended and (op.index, op.digest) in read_values:
            parts[op.index].append(Op(op.start, NEVER, (WRITE, op.digest), None, op))
        elif op.kind == READ and op.verdict not in (UNANSWERED, ""):
            parts[op.index].append(Op(op.start, op.end, (READ, None), op.digest if op.ok else None, op))
    return dict(sorted(parts.items()))


def check(events: list[dict], budget: int = 1_000_000) -> History:
    """The clients' history of a run from its events (any order), judged."""
    reader = _Reader()
    reader.read(events)
    from_answers = bool(reader.answered)
    ops = reader.operations(from_answers)
    _judge_reads(ops, reader.committed)
    return History(ops, _sessions(ops), search(_parts(ops), budget=budget), from_answers)


# The kinds a history reads: a long run's trace is mostly heartbeats, which a quick look at each line leaves out.
KINDS_READ = (ev.CLIENT_WRITE, ev.CLIENT_READ, ev.CLIENT_ANSWER, ev.WRITE_REQUESTED, ev.LEADER_APPEND, ev.WRITE_ACKED,
              ev.READ_SERVED, ev.READ_REFUSED, ev.READ_FAILED, ev.HWM_CHANGED, ev.BECAME_LEADER, ev.BECAME_FOLLOWER,
              ev.NODE_STARTED, ev.ELECTION_STARTED, ev.NODE_STOPPED, ev.TRUNCATED, ev.NODE_KILLED, ev.NODE_EXITED)


def read_events(run_dir: str | Path) -> tuple[dict, list[dict]]:
    """A trace directory's metadata and the events a history reads (a torn or broken line is skipped, as the trace
    reader skips it)."""
    return read_trace_meta(run_dir), read_kinds(run_dir, KINDS_READ)


def check_dir(run_dir: str | Path, budget: int = 1_000_000) -> History:
    return check(read_events(run_dir)[1], budget)


def trace_dirs(root: str | Path, deepest: int = 4) -> list[Path]:
    """The trace directories at or under `root` (a run, a folder of runs, a submission's runs/), in name order."""
    root = Path(root)
    if (root / "trace.json").is_file():
        return [root]
    found: list[Path] = []
    if deepest > 0 and root.is_dir():
        for child in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
            found += trace_dirs(child, deepest - 1)
    return found
