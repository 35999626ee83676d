"""The replica: one node of the replicated log as a state machine with no I/O.

Every input (a tick, a message, a client request) returns a `Ready` (lab.messages) that says what to persist,
what to send, what to answer and what happened. The simulator and the node process drive it the same way.
The pieces students write are called through `self.impl` (lab.interface).
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from lab.impl import Impl
from lab.interface import AppendResult
from lab.messages import (
    Answer,
    ClientRead,
    ClientWrite,
    Entry,
    Envelope,
    EpochAnswer,
    EpochQuery,
    Event,
    HardState,
    Ready,
    ReplicationRequest,
    ReplicationResponse,
    VoteRequest,
    VoteResponse,
    digest,
)

TRUNCATION_STRATEGIES = ("generation", "high-water-mark", "leader-epoch")
FOLLOWER, CANDIDATE, LEADER = "follower", "candidate", "leader"


class Log:
    """The replica's in-memory copy of its log (the driver keeps the durable one in step). Implements LogView."""

    def __init__(self, entries: Sequence[Entry] = ()):
        self._entries = list(entries)
        for position, entry in enumerate(self._entries, start=1):
            if entry.index != position:
                raise ValueError(f"log entries must be contiguous from 1; found index {entry.index} at {position}")

    @property
    def log_end(self) -> int:
        return len(self._entries)

    def generation_at(self, index: int) -> int:
        if index == 0:
            return 0
        if not 1 <= index <= len(self._entries):
            raise IndexError(f"no entry at index {index} (log end {len(self._entries)})")
        return self._entries[index - 1].generation

    def entry_at(self, index: int) -> Entry:
        if not 1 <= index <= len(self._entries):
            raise IndexError(f"no entry at index {index} (log end {len(self._entries)})")
        return self._entries[index - 1]

    def slice(self, first: int, last: int) -> tuple[Entry, ...]:
        return tuple(self._entries[first - 1 : last])

    @property
    def last_generation(self) -> int:
        return self._entries[-1].generation if self._entries else 0

    def truncate_from(self, index: int) -> tuple[Entry, ...]:
        removed = tuple(self._entries[index - 1 :])
        del self._entries[index - 1 :]
        return removed

    def append(self, entry: Entry) -> None:
        if entry.index != len(self._entries) + 1:
            raise ValueError(f"append at index {entry.index} but the log ends at {len(self._entries)}")
        self._entries.append(entry)

    def __iter__(self):
        return iter(self._entries)


class _Out:
    """Collects one step's output; `ready()` freezes it."""

    def __init__(self):
        self.truncate_from: int | None = None
        self.append: list[Entry] = []
        self.hard_state: HardState | None = None
        self.high_water_mark: int | None = None
        self.messages: list[Envelope] = []
        self.answers: list[Answer] = []
        self.events: list[Event] = []

    def truncate(self, index: int) -> None:
        # A truncation after appends in the same step drops those pending appends first.
        self.append = [e for e in self.append if e.index < index]
        if self.truncate_from is None or index < self.truncate_from:
            self.truncate_from = index

    def ready(self) -> Ready:
        return Ready(
            truncate_from=self.truncate_from,
            append=tuple(self.append),
            hard_state=self.hard_state,
            high_water_mark=self.high_water_mark,
            messages=tuple(self.messages),
            answers=tuple(self.answers),
            events=tuple(self.events),
        )


class Replica:
    """One node. Construct it from durable state, call `start()`, then feed it inputs."""

    def __init__(
        self,
        *,
        node_id: str,
        nodes: Sequence[str],
        impl: Impl,
        rng: random.Random,
        hard_state: HardState = HardState(generation=0, voted_for=None),
        log: Sequence[Entry] = (),
        high_water_mark: int = 0,
        truncation: str = "generation",
        election_ticks: int = 10,
        heartbeat_ticks: int = 2,
        max_batch: int = 256,
        write_timeout_ticks: int = 100,
    ):
        if node_id not in nodes:
            raise ValueError(f"node {node_id!r} is not one of the cluster's nodes {list(nodes)}")
        if truncation not in TRUNCATION_STRATEGIES:
            raise ValueError(f"unknown truncation strategy {truncation!r}; choose one of {TRUNCATION_STRATEGIES}")
        self.node_id = node_id
        self.nodes = tuple(nodes)
        self.peers = tuple(n for n in nodes if n != node_id)
        self.impl = impl
        self.rng = rng
        self.truncation = truncation
        self.election_ticks = election_ticks
        self.heartbeat_ticks = heartbeat_ticks
        self.max_batch = max_batch
        self.write_timeout_ticks = write_timeout_ticks

        self.generation = hard_state.generation
        self.voted_for = hard_state.voted_for
        self.log = Log(log)
        # The checkpoint is a hint written lazily: never trust it beyond what the log holds.
        self.high_water_mark = min(high_water_mark, self.log.log_end)

        self.role = FOLLOWER
        self.leader: str | None = None
        self.votes: set[str] = set()
        self.match_index: dict[str, int] = {}
        self.next_index: dict[str, int] = {}
        self.pending_writes: dict[int, tuple[str, int]] = {}  # index -> (request, deadline tick)
        self.ticks = 0
        self.election_elapsed = 0
        self.leader_contact = election_ticks  # ticks since we last heard from a live leader
        self.heartbeat_elapsed = 0
        self.election_timeout = self._new_election_timeout()
        self.awaiting_epoch_answer = False

    # ---- inputs --------------------------------------------------------------------------------------------

    def step(self, item: Any, src: str | None = None) -> Ready:
        """Dispatch one input: "tick", "start", "campaign", a ClientWrite or ClientRead, or a message from src."""
        if item == "tick":
            return self.tick()
        if item == "start":
            return self.start()
        if item == "campaign":
            return self.campaign()
        if isinstance(item, ClientWrite):
            return self.propose([item])
        if isinstance(item, ClientRead):
            return self.read(item)
        return self.receive(src, item)

    def start(self) -> Ready:
        """First step after construction: report the recovered state, apply the restart truncation strategy."""
        out = _Out()
        self._event(out, "node_started", log_end=self.log.log_end, last_generation=self.log.last_generation,
                    hwm=self.high_water_mark, truncation=self.truncation)
        if self.truncation == "high-water-mark" and self.log.log_end > self.high_water_mark:
            # Kafka before 0.11: whatever lies above our own high-water mark is thrown away and fetched again.
            self._truncate(out, self.high_water_mark + 1, reason="restart-hwm", conflicting_generation=None)
        elif self.truncation == "leader-epoch" and self.log.log_end > self.high_water_mark:
            # KIP-101: before fetching, ask the leader where its log ends for our last generation.
            self.awaiting_epoch_answer = True
        if len(self.nodes) == 1:
            self._become_candidate(out, force=True)
        return out.ready()

    def tick(self) -> Ready:
        out = _Out()
        self.ticks += 1
        self.leader_contact += 1
        if self.role == LEADER:
            self.leader_contact = 0
            self.heartbeat_elapsed += 1
            if self.heartbeat_elapsed >= self.heartbeat_ticks:
                self.heartbeat_elapsed = 0
                for peer in self.peers:
                    self._send_replication(out, peer)
            self._expire_writes(out)
        else:
            self.election_elapsed += 1
            if self.election_elapsed >= self.election_timeout:
                self._become_candidate(out, force=False)
        return out.ready()

    def campaign(self) -> Ready:
        """Start an election now (scenario scripts and the dashboard use it to pick a leader)."""
        out = _Out()
        self._become_candidate(out, force=True)
        return out.ready()

    def propose(self, writes: Sequence[ClientWrite]) -> Ready:
        """Client writes: the leader appends them all, then sends one replication request per follower."""
        out = _Out()
        generation, events = self.generation, out.events
        # The per-entry events are built here directly rather than through _event: this is a busy leader's
        # hot path, and so are write_acked and follower_append.
        for write in writes:
            events.append(Event(type="write_requested", fields={
                "gen": generation, "request": write.request, "digest": digest(write.payload),
                "payload": write.payload}))
        if self.role != LEADER:
            where = f"the leader is {self.leader}" if self.leader else "no leader is known yet"
            for write in writes:
                error = f"not the leader: {where}"
                out.answers.append(Answer(request=write.request, ok=False, leader=self.leader, error=error))
                self._event(out, "write_failed", request=write.request, reason=error)
            return out.ready()
        deadline = self.ticks + self.write_timeout_ticks
        for write in writes:
            entry = Entry(index=self.log.log_end + 1, generation=generation, payload=write.payload)
            self.log.append(entry)
            out.append.append(entry)
            self.pending_writes[entry.index] = (write.request, deadline)
            events.append(Event(type="leader_append", fields={
                "gen": generation, "index": entry.index, "generation": generation, "digest": digest(entry.payload),
                "payload": entry.payload, "request": write.request}))
        self._acknowledge(out, self.node_id, self.log.log_end)
        for peer in self.peers:
            self._send_replication(out, peer)
        return out.ready()

    def read(self, request: ClientRead) -> Ready:
        """Serve an entry only if it lies at or below this node's high-water mark."""
        out = _Out()
        refusal = self.impl.check_read(request.index, self.high_water_mark)
        if refusal is None and request.index > self.log.log_end:
            refusal = f"not available: index {request.index} is beyond this node's log end {self.log.log_end}"
        if refusal is not None:
            out.answers.append(Answer(request=request.request, ok=False, index=request.index,
                                      high_water_mark=self.high_water_mark, error=refusal))
            self._event(out, "read_refused", index=request.index, hwm=self.high_water_mark, reason=refusal)
        else:
            entry = self.log.entry_at(request.index)
            out.answers.append(Answer(request=request.request, ok=True, index=entry.index,
                                      generation=entry.generation, payload=entry.payload,
                                      high_water_mark=self.high_water_mark))
            self._event(out, "read_served", index=entry.index, hwm=self.high_water_mark, entry=entry.as_trace(),
                        payload=entry.payload)
        return out.ready()

    def receive(self, src: str | None, message: Any) -> Ready:
        out = _Out()
        handler = _HANDLERS.get(type(message))
        if handler is None:
            raise TypeError(f"replica {self.node_id} cannot handle {type(message).__name__}")
        if message.generation > self.generation and not (
            isinstance(message, VoteRequest) and self._leader_is_alive(message)
        ):
            self._become_follower(out, message.generation, None)
        handler(self, out, src, message)
        return out.ready()

    # ---- message handlers, named after the message they handle -------------------------------------------

    def on_vote_request(self, out: _Out, src: str, req: VoteRequest) -> None:
        up_to_date = (req.last_generation, req.last_index) >= (self.log.last_generation, self.log.log_end)
        if req.generation < self.generation:
            reason = f"candidate's generation {req.generation} is older than {self.generation}"
        elif self._leader_is_alive(req):
            reason = f"a leader ({self.leader}) is alive in generation {self.generation}"
        elif self.voted_for not in (None, req.candidate):
            reason = f"already voted for {self.voted_for} in generation {self.generation}"
        elif not up_to_date:
            reason = (f"candidate's log (last generation {req.last_generation}, index {req.last_index}) is behind "
                      f"this node's (last generation {self.log.last_generation}, index {self.log.log_end})")
        else:
            reason = ""
        if reason:
            self._event(out, "vote_denied", candidate=req.candidate, generation=req.generation, reason=reason)
            out.messages.append(Envelope(src=self.node_id, dst=src, message=VoteResponse(
                generation=self.generation, voter=self.node_id, granted=False)))
            return
        self.voted_for = req.candidate
        out.hard_state = HardState(generation=self.generation, voted_for=self.voted_for)
        self.election_elapsed = 0
        self._event(out, "vote_granted", candidate=req.candidate, generation=req.generation)
        out.messages.append(Envelope(src=self.node_id, dst=src, message=VoteResponse(
            generation=self.generation, voter=self.node_id, granted=True)))

    def on_vote_response(self, out: _Out, src: str, resp: VoteResponse) -> None:
        if self.role != CANDIDATE or resp.generation != self.generation or not resp.granted:
            return
        self.votes.add(resp.voter)
        if len(self.votes) >= self._majority():
            self._become_leader(out)

    def on_replication_request(self, out: _Out, src: str, req: ReplicationRequest) -> None:
        if req.generation < self.generation:
            out.messages.append(Envelope(src=self.node_id, dst=src, message=ReplicationResponse(
                generation=self.generation, follower=self.node_id, success=False, log_end=self.log.log_end,
                prev_index=req.prev_index)))
            return
        if self.role != FOLLOWER or self.leader != req.leader:
            self._become_follower(out, req.generation, req.leader)
        self.election_elapsed = 0
        self.leader_contact = 0
        first, last = req.prev_index + 1, req.prev_index + len(req.entries)
        self._event(out, "replication_received", **{"from": src}, prev_index=req.prev_index,
                    prev_generation=req.prev_generation, first=first, last=last, hwm=req.high_water_mark)
        if self.awaiting_epoch_answer:
            self._event(out, "epoch_query", generation=self.log.last_generation, end_index=None)
            out.messages.append(Envelope(src=self.node_id, dst=src, message=EpochQuery(
                generation=self.generation, follower=self.node_id, of_generation=self.log.last_generation)))
            return

        if self.truncation == "high-water-mark":
            result = self._append_without_generation_check(req)
        else:
            result = self.impl.follower_append(self.log, req.prev_index, req.prev_generation, req.entries)
        if not result.success:
            self._event(out, "replication_rejected", **{"from": src}, prev_index=req.prev_index,
                        reason=self._rejection_reason(req), conflict_index=result.conflict_index)
            out.messages.append(Envelope(src=self.node_id, dst=src, message=ReplicationResponse(
                generation=self.generation, follower=self.node_id, success=False, log_end=self.log.log_end,
                conflict_index=result.conflict_index, prev_index=req.prev_index)))
            return
        if result.truncate_from is not None and result.truncate_from <= self.log.log_end:
            leaders = {e.index: e.generation for e in req.entries}
            self._truncate(out, result.truncate_from, reason="conflict",
                           conflicting_generation=leaders.get(result.truncate_from))
        generation = self.generation
        for entry in result.append:
            self.log.append(entry)
            out.append.append(entry)
            out.events.append(Event(type="follower_append", fields={
                "gen": generation, "index": entry.index, "generation": entry.generation,
                "digest": digest(entry.payload), "payload": entry.payload}))
        # A follower's mark: what the leader says is committed, but never beyond what it knows matches the leader.
        self._set_high_water_mark(out, min(req.high_water_mark, result.match_index))
        out.messages.append(Envelope(src=self.node_id, dst=src, message=ReplicationResponse(
            generation=self.generation, follower=self.node_id, success=True, match_index=result.match_index,
            log_end=self.log.log_end, prev_index=req.prev_index)))

    def on_replication_response(self, out: _Out, src: str, resp: ReplicationResponse) -> None:
        if self.role != LEADER or resp.generation != self.generation:
            return
        follower = resp.follower
        if resp.success:
            before = self.match_index.get(follower, 0)
            new_hwm = self._count_acknowledgement(follower, resp.match_index)
            self.next_index[follower] = max(self.next_index.get(follower, 1), self.match_index[follower] + 1)
            # The trace shows the cause (a follower's match index) before its effect (the mark moving).
            if self.match_index[follower] != before:
                self._event(out, "match_index_updated", follower=follower, match_index=self.match_index[follower],
                            next_index=self.next_index[follower])
            self._set_high_water_mark(out, new_hwm)
            if self.next_index[follower] <= self.log.log_end and resp.match_index >= self.next_index[follower] - 1:
                self._send_replication(out, follower)
            return
        retry_from = max(1, min(resp.conflict_index or resp.prev_index, resp.prev_index))
        if retry_from < self.next_index.get(follower, 1):
            self.next_index[follower] = retry_from
            self._event(out, "next_index_backed_up", follower=follower, next_index=retry_from)
            self._send_replication(out, follower)

    def on_epoch_query(self, out: _Out, src: str, query: EpochQuery) -> None:
        if self.role != LEADER or query.generation != self.generation:
            return
        end = self.impl.leader_epoch_end(self.log, query.of_generation)
        self._event(out, "epoch_answer", generation=query.of_generation, end_index=end)
        out.messages.append(Envelope(src=self.node_id, dst=src, message=EpochAnswer(
            generation=self.generation, leader=self.node_id, of_generation=query.of_generation, end_index=end)))

    def on_epoch_answer(self, out: _Out, src: str, answer: EpochAnswer) -> None:
        if not self.awaiting_epoch_answer or answer.generation != self.generation:
            return
        self.awaiting_epoch_answer = False
        cut = self.impl.epoch_truncation_point(self.log, answer.end_index)
        if cut is not None and cut <= self.log.log_end:
            self._truncate(out, cut, reason="leader-epoch", conflicting_generation=None)

    # ---- roles ---------------------------------------------------------------------------------------------

    def _become_follower(self, out: _Out, generation: int, leader: str | None) -> None:
        if generation != self.generation:
            self._event(out, "generation_changed", from_generation=self.generation, generation=generation)
            self.generation = generation
            self.voted_for = None
            out.hard_state = HardState(generation=generation, voted_for=None)
        was = self.role
        self.role = FOLLOWER
        self.leader = leader
        self.election_elapsed = 0
        self.election_timeout = self._new_election_timeout()
        if was == LEADER:
            self._fail_pending(out, "leadership lost before the entry was committed; it may or may not survive")
        self._event(out, "became_follower", generation=generation, leader=leader)

    def _become_candidate(self, out: _Out, *, force: bool) -> None:
        if self.role == LEADER:
            self._fail_pending(out, "leadership given up for a new election; the entry may or may not survive")
        self._event(out, "generation_changed", from_generation=self.generation, generation=self.generation + 1)
        self.generation += 1
        self.role = CANDIDATE
        self.leader = None
        self.voted_for = self.node_id
        self.votes = {self.node_id}
        out.hard_state = HardState(generation=self.generation, voted_for=self.node_id)
        self.election_elapsed = 0
        self.election_timeout = self._new_election_timeout()
        self._event(out, "election_started", generation=self.generation)
        if len(self.votes) >= self._majority():
            self._become_leader(out)
            return
        request = VoteRequest(generation=self.generation, candidate=self.node_id, last_index=self.log.log_end,
                              last_generation=self.log.last_generation, force=force)
        for peer in self.peers:
            out.messages.append(Envelope(src=self.node_id, dst=peer, message=request))

    def _become_leader(self, out: _Out) -> None:
        self.role = LEADER
        self.leader = self.node_id
        self.leader_contact = 0
        self.heartbeat_elapsed = 0
        self.match_index = {n: 0 for n in self.nodes}
        self.match_index[self.node_id] = self.log.log_end
        self.next_index = {peer: self.log.log_end + 1 for peer in self.peers}
        self.awaiting_epoch_answer = False
        self._event(out, "became_leader", generation=self.generation, votes=sorted(self.votes))
        for peer in self.peers:
            self._send_replication(out, peer)

    # ---- helpers -------------------------------------------------------------------------------------------

    def _send_replication(self, out: _Out, peer: str) -> None:
        next_index = min(self.next_index.get(peer, self.log.log_end + 1), self.log.log_end + 1)
        prev_index = next_index - 1
        last = min(self.log.log_end, prev_index + self.max_batch)
        entries = self.log.slice(next_index, last)
        request = ReplicationRequest(generation=self.generation, leader=self.node_id, prev_index=prev_index,
                                     prev_generation=self.log.generation_at(prev_index), entries=entries,
                                     high_water_mark=self.high_water_mark)
        # Optimistic: pipeline the next request after this one; a refusal backs next_index up again.
        self.next_index[peer] = last + 1
        out.messages.append(Envelope(src=self.node_id, dst=peer, message=request))
        self._event(out, "replication_sent", to=peer, prev_index=prev_index, prev_generation=request.prev_generation,
                    first=next_index, last=last, hwm=self.high_water_mark)

    def _acknowledge(self, out: _Out, node: str, acknowledged: int) -> None:
        """Record that `node` holds the leader's log up to `acknowledged`; advance the mark if a majority does."""
        self._set_high_water_mark(out, self._count_acknowledgement(node, acknowledged))

    def _count_acknowledgement(self, node: str, acknowledged: int) -> int:
        """Exercise 2 updates the match index and says where the mark may go."""
        new = self.impl.on_replication_response(self.match_index, node, acknowledged, self.high_water_mark,
                                                self.generation, self.log.generation_at)
        if new > self.log.log_end:
            raise AssertionError(f"high-water mark {new} beyond the leader's log end {self.log.log_end}")
        return new

    def _set_high_water_mark(self, out: _Out, new: int) -> None:
        if new <= self.high_water_mark:
            return
        old, self.high_water_mark = self.high_water_mark, new
        out.high_water_mark = new
        committed = self.log.slice(old + 1, new)
        self._event(out, "hwm_changed", from_hwm=old, hwm=new, role=self.role,
                    entry_generation=self.log.generation_at(new), committed=[e.as_trace() for e in committed])
        if self.role == LEADER:
            # pending_writes is in index order (a leader appends in order): stop at the first not committed.
            acknowledged = []
            for index in self.pending_writes:
                if index > new:
                    break
                acknowledged.append(index)
            for index in acknowledged:
                request, _ = self.pending_writes.pop(index)
                entry = self.log.entry_at(index)
                out.answers.append(Answer(request=request, ok=True, index=index, generation=entry.generation,
                                          payload=entry.payload, high_water_mark=new, leader=self.node_id))
                out.events.append(Event(type="write_acked", fields={
                    "gen": self.generation, "request": request, "index": index, "generation": entry.generation,
                    "digest": digest(entry.payload)}))

    def _truncate(self, out: _Out, index: int, *, reason: str, conflicting_generation: int | None) -> None:
        removed = self.log.truncate_from(index)
        out.truncate(index)
        self.high_water_mark = min(self.high_water_mark, self.log.log_end)
        self._event(out, "truncated", from_index=index, removed=[e.as_trace() for e in removed], reason=reason,
                    conflicting_generation=conflicting_generation, hwm=self.high_water_mark)

    def _append_without_generation_check(self, req: ReplicationRequest):
        """The `high-water-mark` strategy (Kafka before 0.11): fetch from our log end, never compare generations."""
        if req.prev_index > self.log.log_end:
            return AppendResult(success=False, conflict_index=self.log.log_end + 1)
        new = tuple(e for e in req.entries if e.index > self.log.log_end)
        return AppendResult(success=True, append=new, match_index=req.prev_index + len(req.entries))

    def _rejection_reason(self, req: ReplicationRequest) -> str:
        if req.prev_index > self.log.log_end:
            return f"missing entries: the log ends at {self.log.log_end}, before index {req.prev_index}"
        return (f"index {req.prev_index} holds generation {self.log.generation_at(req.prev_index)}, "
                f"the leader's holds generation {req.prev_generation}")

    def _leader_is_alive(self, req: VoteRequest) -> bool:
        # A node that heard from a live leader within the minimum election timeout ignores vote requests,
        # so a node cut off one way cannot depose a working leader (Raft dissertation 4.2.3).
        return not req.force and self.leader_contact < self.election_ticks and self.leader is not None

    def _expire_writes(self, out: _Out) -> None:
        # Deadlines grow with the index (pending_writes is in index order): stop at the first not yet due.
        expired = []
        for index, (_request, deadline) in self.pending_writes.items():
            if deadline > self.ticks:
                break
            expired.append(index)
        for index in expired:
            request, _ = self.pending_writes.pop(index)
            error = (f"timeout: index {index} was not acknowledged by a majority within "
                     f"{self.write_timeout_ticks} ticks (high-water mark {self.high_water_mark})")
            out.answers.append(Answer(request=request, ok=False, index=index, error=error, leader=self.node_id))
            self._event(out, "write_failed", request=request, reason=error)

    def _fail_pending(self, out: _Out, error: str) -> None:
        for index in sorted(self.pending_writes):
            request, _ = self.pending_writes.pop(index)
            out.answers.append(Answer(request=request, ok=False, index=index, error=error))
            self._event(out, "write_failed", request=request, reason=error)

    def _majority(self) -> int:
        return len(self.nodes) // 2 + 1

    def _new_election_timeout(self) -> int:
        return self.election_ticks + self.rng.randrange(self.election_ticks)

    def _event(self, out: _Out, kind: str, **fields) -> None:
        out.events.append(Event(type=kind, fields={"gen": self.generation, **fields}))

    def status(self) -> dict:
        """A summary for the control API and the dashboard."""
        return {
            "id": self.node_id,
            "role": self.role,
            "generation": self.generation,
            "leader": self.leader,
            "log_end": self.log.log_end,
            "hwm": self.high_water_mark,
            "match_index": dict(self.match_index) if self.role == LEADER else {},
            "next_index": dict(self.next_index) if self.role == LEADER else {},
            # The election clock, in ticks, so that a dashboard can draw it filling up.
            "election_elapsed": self.election_elapsed,
            "election_timeout": self.election_timeout,
        }


_HANDLERS = {
    VoteRequest: Replica.on_vote_request,
    VoteResponse: Replica.on_vote_response,
    ReplicationRequest: Replica.on_replication_request,
    ReplicationResponse: Replica.on_replication_response,
    EpochQuery: Replica.on_epoch_query,
    EpochAnswer: Replica.on_epoch_answer,
}
