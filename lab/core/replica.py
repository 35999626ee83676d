"""The replica: one node of the replicated log as a state machine with no I/O.

Every input (a tick, a message, a client request) returns a `Ready` (below) that says what to persist, what to
send, what to answer and what happened. The simulator and the node process apply it with the same driver
(lab.ports.driver). The pieces students write are called through `self.impl` (lab.core.interface).
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any, Sequence

from lab.core.config import PRE_VOTE, TIMING, TRUNCATION_STRATEGIES, check_choice
from lab.core.impl import Impl
from lab.core.interface import AppendResult
from lab.core.progress import MatchIndex, Progress, progress_of
from lab.core import events as ev
from lab.core import reasons
from lab.core.reasons import Reason
from lab.core.messages import (
    ABOVE_HWM,
    LEADERSHIP_LOST,
    NO_SUCH_INDEX,
    NOT_LEADER,
    READ_REFUSED,
    TIMEOUT,
    Answer,
    ClientRead,
    ClientWrite,
    Entry,
    Envelope,
    EpochAnswer,
    EpochQuery,
    Event,
    FollowerAppend,
    HardState,
    LeaderAppend,
    PreVoteRequest,
    PreVoteResponse,
    ReadIndexRequest,
    ReadIndexResponse,
    ReplicationRequest,
    ReplicationResponse,
    VoteRequest,
    VoteResponse,
    WriteAcked,
    WriteRequested,
    digest,
)

FOLLOWER, CANDIDATE, LEADER = "follower", "candidate", "leader"

# Per-entry values on a busy leader's path are built with tuple.__new__, every field given, in the field order of
# their NamedTuple: the same value as calling the class, without a Python-level __new__ per entry.
_new = tuple.__new__


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

    def extend(self, entries: Sequence[Entry]) -> None:
        """Append entries numbered from log_end + 1 on, in order."""
        expected = len(self._entries) + 1
        for entry in entries:
            if entry.index != expected:
                raise ValueError(f"append at index {entry.index} but the log ends at {expected - 1}")
            expected += 1
        self._entries.extend(entries)

    def __iter__(self):
        return iter(self._entries)


class Ready:
    """Everything one step of a replica asks its driver to do. The replica fills it during the step; nobody
    changes it after the step returns.

    The order of duties, for every driver (lab.ports.driver, under the simulator and the node process alike):
      1. persist: truncate_from (remove that index and all later), then append, then hard_state written; then,
         when `must_sync`, made durable as the fsync policy says. The high_water_mark checkpoint may be written
         lazily: it is a hint, never needed for safety.
      2. send `early_messages` as soon as step 1 is written, without waiting for its sync: a leader's replication
         requests, which promise nothing of its own disk (Raft thesis 10.2.1; etcd sends them before it saves).
      3. once step 1 is durable, send `messages`: they may promise durability (a follower's success with its match
         index, a granted vote), so none leaves before the data it promises is on disk.
      4. write `events` to the trace, and flush it before step 5.
      5. answer clients: an acknowledgement promises durability, so it always comes after step 1's sync.
    Then the driver tells the replica how far its log is durable (`Replica.persisted`): a leader counts itself
    toward a majority only from there, so the high-water mark never covers an entry a majority has not persisted.
    """

    __slots__ = ("truncate_from", "append", "hard_state", "high_water_mark", "early_messages", "messages", "answers",
                 "events")

    def __init__(self):
        self.truncate_from: int | None = None
        self.append: list[Entry] = []
        self.hard_state: HardState | None = None
        self.high_water_mark: int | None = None
        self.early_messages: list[Envelope] = []
        self.messages: list[Envelope] = []
        self.answers: list[Answer] = []
        self.events: list = []

    @property
    def must_sync(self) -> bool:
        """Whether step 1 changed anything durable (the lazy high-water mark hint does not count)."""
        return bool(self.append) or self.truncate_from is not None or self.hard_state is not None

    def truncate(self, index: int) -> None:
        # A truncation after appends in the same step drops those pending appends first.
        self.append = [e for e in self.append if e.index < index]
        if self.truncate_from is None or index < self.truncate_from:
            self.truncate_from = index

    def done(self) -> "Ready":
        """The step is over: from here on the lists are tuples, and nobody changes them."""
        self.append, self.messages = tuple(self.append), tuple(self.messages)
        self.early_messages = tuple(self.early_messages)
        self.answers, self.events = tuple(self.answers), tuple(self.events)
        return self


class PendingRead:
    """A linearizable read the leader holds until it knows it still leads (ReadIndex, Raft thesis 6.4). `confirmed`
    only grows: the leader itself, then each follower that answered a round numbered `round` or later (asked after
    the read arrived). Served once a majority confirmed and the leader's mark covers an entry of its own generation;
    failed at `deadline` (a tick)."""

    __slots__ = ("read", "read_index", "round", "deadline", "confirmed")

    def __init__(self, read: ClientRead, read_index: int, round: int, deadline: int, confirmed: set[str]):
        self.read, self.read_index, self.round, self.deadline = read, read_index, round, deadline
        self.confirmed = confirmed


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
        election_ticks: int = TIMING.election_ticks,
        heartbeat_ticks: int = TIMING.heartbeat_ticks,
        max_batch: int = TIMING.max_batch,
        write_timeout_ticks: int = TIMING.write_timeout_ticks,
        pre_vote: bool = PRE_VOTE,
        catching_up_to: int = 0,
    ):
        if node_id not in nodes:
            raise ValueError(f"node {node_id!r} is not one of the cluster's nodes {list(nodes)}")
        check_choice("truncation strategy", truncation, TRUNCATION_STRATEGIES)
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
        self.pre_vote = pre_vote
        # A node repaired after losing part of its log (lab.ports.wal, --repair) neither votes nor counts toward
        # the HWM until it holds again everything up to the mark it had before: its log may lack committed entries.
        self.catching_up_to = catching_up_to

        self.generation = hard_state.generation
        self.voted_for = hard_state.voted_for
        self.log = Log(log)
        # How far the log is known to be on disk (what it was started from, then what the driver reports through
        # `persisted`): a leader counts itself toward a majority only up to here.
        self.durable_end = self.log.log_end
        # The checkpoint is a hint written lazily: never trust it beyond what the log holds.
        self.high_water_mark = min(high_water_mark, self.log.log_end)
        # The mark this node has seen confirmed since it started (by a leader, or by counting as one): nothing at or
        # below it is ever truncated. The hint recovered from disk does not count: after a node acknowledged
        # before its fsync (K2), entries under it may be the ones the cluster lost.
        self.confirmed_hwm = 0

        self.role = FOLLOWER
        self.leader: str | None = None
        self.votes: set[str] = set()
        self.prevotes: set[str] | None = None  # while asking for pre-votes: who said yes
        # A leader's view of every node's log, one record each; match_index shows their match indexes to exercise 2.
        self.progress: dict[str, Progress] = {}
        self.match_index = MatchIndex(self.progress)
        # Client writes the leader appended and has not answered: (index, request, digest) in index order, and
        # (last index, deadline tick) per proposal, so that committing and expiring both pop from the left.
        self.pending_writes: deque[tuple[int, str, str]] = deque()
        self.write_deadlines: deque[tuple[int, int]] = deque()
        self.ticks = 0
        self.election_elapsed = 0
        self.leader_contact = election_ticks  # ticks since we last heard from a live leader
        self.heartbeat_elapsed = 0
        self.election_timeout = self._new_election_timeout()
        self.awaiting_epoch_answer = False
        self._last_request: ReplicationRequest | None = None
        # Linearizable reads waiting for the leader to confirm it leads, in arrival order; each check is a round.
        self.pending_reads: list[PendingRead] = []
        self.read_round = 0

    # ---- inputs --------------------------------------------------------------------------------------------

    def start(self) -> Ready:
        """First step after construction: report the recovered state, apply the restart truncation strategy."""
        out = Ready()
        self._event(out, ev.NODE_STARTED, log_end=self.log.log_end, last_generation=self.log.last_generation,
                    hwm=self.high_water_mark, truncation=self.truncation)
        if self.truncation == "high-water-mark" and self.log.log_end > self.high_water_mark:
            # Kafka before 0.11: whatever lies above our own high-water mark is thrown away and fetched again.
            self._truncate(out, self.high_water_mark + 1, reason="restart-hwm", conflicting_generation=None)
        elif self.truncation == "leader-epoch" and self.log.log_end > 0:
            # KIP-101: before fetching, ask the leader where its log ends for our last generation. Even entries at
            # or below our own mark are asked about: a node that acknowledged before its fsync may have lost
            # them (K2), so the mark recovered from disk is no proof that they are still the cluster's.
            self.awaiting_epoch_answer = True
        if len(self.nodes) == 1:
            self._become_candidate(out, force=True)
        return out.done()

    def tick(self) -> Ready:
        out = Ready()
        self.ticks += 1
        self.leader_contact += 1
        if self.role == LEADER:
            self._tick_leader(out)
        else:
            self._tick_election(out)
        return out.done()

    def _tick_leader(self, out: Ready) -> None:
        """A leader's time: heartbeats (a replication request to every follower) and writes that expire."""
        self.leader_contact = 0
        self.heartbeat_elapsed += 1
        if self.heartbeat_elapsed >= self.heartbeat_ticks:
            self.heartbeat_elapsed = 0
            for peer in self.peers:
                self._send_replication(out, peer)
        self._expire_writes(out)
        if self.pending_reads:
            self._settle_reads(out)

    def _tick_election(self, out: Ready) -> None:
        """A follower's or candidate's time: its election timer, which starts a (pre-)election when it runs out."""
        self.election_elapsed += 1
        if self.election_elapsed >= self.election_timeout and not self._catching_up():
            if self.pre_vote and len(self.nodes) > 1:
                self._start_prevote(out)
            else:
                self._become_candidate(out, force=False)

    def campaign(self) -> Ready:
        """Start an election now (scenario scripts and the dashboard use it to pick a leader)."""
        out = Ready()
        self._become_candidate(out, force=True)
        return out.done()

    def propose(self, writes: Sequence[ClientWrite]) -> Ready:
        """Client writes: the leader appends them all, then sends one replication request per follower."""
        out = Ready()
        generation, events = self.generation, out.events
        digests = [digest(payload) for _, payload in writes]
        for (request, payload), entry_digest in zip(writes, digests):
            events.append(_new(WriteRequested, (generation, request, entry_digest, payload)))
        if self.role != LEADER:
            self._redirect(out, writes)
            return out.done()
        index, pending, entries = self.log.log_end, self.pending_writes, out.append
        for (request, payload), entry_digest in zip(writes, digests):
            index += 1
            entries.append(_new(Entry, (index, generation, payload)))
            pending.append((index, request, entry_digest))
            events.append(_new(LeaderAppend, (generation, index, generation, entry_digest, payload, request)))
        self.write_deadlines.append((index, self.ticks + self.write_timeout_ticks))
        self.log.extend(entries)
        # The leader counts itself once these entries are on its disk (`persisted`); its followers get them now.
        for peer in self.peers:
            self._send_replication(out, peer)
        return out.done()

    def persisted(self, log_end: int, generation: int) -> Ready:
        """The driver's word that this node's log is durable up to `log_end`, whose entry has `generation`.

        A report about a log that has changed since (truncated and written again: the generation there differs)
        is ignored; the next report covers it. A leader counts itself toward the majority from here on.
        """
        out = Ready()
        if log_end <= self.durable_end or log_end > self.log.log_end or \
                self.log.generation_at(log_end) != generation:
            return out.done()
        self.durable_end = log_end
        self._event(out, ev.LOG_PERSISTED, index=log_end, generation=generation)
        if self.role == LEADER:
            self._acknowledge(out, self.node_id, log_end)
        return out.done()

    def _redirect(self, out: Ready, writes: Sequence[ClientWrite]) -> None:
        """A node that is not the leader refuses writes, naming the leader it knows."""
        error = Reason(reasons.NOT_LEADER, leader=self.leader) if self.leader else Reason(reasons.NO_LEADER)
        for write in writes:
            out.answers.append(Answer(request=write.request, ok=False, leader=self.leader, error=error,
                                      refusal=NOT_LEADER))
            self._event(out, ev.WRITE_FAILED, request=write.request, reason=error)

    def read(self, request: ClientRead) -> Ready:
        """Serve an entry only if it lies at or below this node's high-water mark. A linearizable read is the
        leader's to answer, once it has confirmed that it still leads (`_read_linearizable`)."""
        out = Ready()
        if request.linearizable:
            self._read_linearizable(out, request)
        else:
            self._answer_read(out, request)
        return out.done()

    def _answer_read(self, out: Ready, request: ClientRead) -> None:
        """A read decided by this node's mark (exercise 4's check_read): served or refused, now."""
        index, hwm = request.index, self.high_water_mark
        said_how = {"request": request.request, **({"linearizable": True} if request.linearizable else {})}
        refusal = self.impl.check_read(index, hwm)
        kind = ABOVE_HWM if index > hwm else NO_SUCH_INDEX if index < 1 else READ_REFUSED
        if refusal is None and index > self.log.log_end:
            refusal, kind = Reason(reasons.BEYOND_LOG_END, index=index, end=self.log.log_end), NO_SUCH_INDEX
        elif refusal is not None and kind != READ_REFUSED:
            # exercise 4's sentence is the student's; said in the lab's words (typed) when it is those words
            said = Reason(reasons.ABOVE_HWM, index=index, hwm=hwm) if kind == ABOVE_HWM else Reason(reasons.BELOW_ONE,
                                                                                                 index=index)
            refusal = said if said == refusal else refusal
        if refusal is not None:
            out.answers.append(Answer(request=request.request, ok=False, index=index, high_water_mark=hwm,
                                      leader=self.node_id if request.linearizable else None, error=refusal,
                                      refusal=kind))
            self._event(out, ev.READ_REFUSED, index=request.index, hwm=self.high_water_mark, reason=refusal,
                        **said_how)
        else:
            entry = self.log.entry_at(request.index)
            out.answers.append(Answer(request=request.request, ok=True, index=entry.index,
                                      generation=entry.generation, payload=entry.payload,
                                      high_water_mark=self.high_water_mark,
                                      leader=self.node_id if request.linearizable else None))
            self._event(out, ev.READ_SERVED, index=entry.index, hwm=self.high_water_mark, entry=entry.as_trace(),
                        payload=entry.payload, **said_how)

    # ---- linearizable reads (ReadIndex): the leader serves up to its mark once a majority says it still leads ----

    def _read_linearizable(self, out: Ready, request: ClientRead) -> None:
        """A node that does not lead refuses, naming the leader it knows (its client asks there). A leader with no
        entry of its own generation refuses too: its mark may lag what an earlier leader acknowledged, and nothing
        would commit one. Otherwise the read waits for a round of confirmations, asked now."""
        if self.role != LEADER:
            error = Reason(reasons.NOT_LEADER, leader=self.leader) if self.leader else Reason(reasons.NO_LEADER)
            self._fail_read(out, request, error, NOT_LEADER, leader=self.leader)
            return
        if self.log.last_generation != self.generation:
            self._fail_read(out, request, Reason(reasons.GENERATION_UNCOMMITTED, leader=self.node_id,
                                                 generation=self.generation, hwm=self.high_water_mark),
                            reasons.GENERATION_UNCOMMITTED, leader=self.node_id)
            return
        self.read_round += 1
        self.pending_reads.append(PendingRead(request, self.high_water_mark, self.read_round,
                                              self.ticks + self.write_timeout_ticks, {self.node_id}))
        self._event(out, ev.READ_INDEX, request=request.request, index=request.index, read_index=self.high_water_mark,
                    round=self.read_round)
        check = ReadIndexRequest(generation=self.generation, leader=self.node_id, round=self.read_round)
        for peer in self.peers:
            out.messages.append(Envelope(self.node_id, peer, check))
        self._settle_reads(out)

    def _settle_reads(self, out: Ready) -> None:
        """Answer the reads a majority confirmed, once the mark covers an entry of this leader's generation (then
        it covers everything any leader acknowledged before); fail those whose time ran out."""
        majority, kept = self._majority(), []
        own_committed = self.log.generation_at(self.high_water_mark) == self.generation
        for pending in self.pending_reads:
            if len(pending.confirmed) >= majority and own_committed:
                self._answer_read(out, pending.read)
            elif self.ticks >= pending.deadline:
                if len(pending.confirmed) >= majority:
                    error = Reason(reasons.GENERATION_UNCOMMITTED, leader=self.node_id, generation=self.generation,
                                   hwm=self.high_water_mark)
                else:
                    error = Reason(reasons.READ_UNCONFIRMED, leader=self.node_id, nodes=sorted(pending.confirmed),
                                   size=len(self.nodes))
                self._fail_read(out, pending.read, error, TIMEOUT, leader=self.node_id)
            else:
                kept.append(pending)
        self.pending_reads = kept

    def _fail_read(self, out: Ready, request: ClientRead, error: Reason, refusal: str, leader: str | None) -> None:
        out.answers.append(Answer(request=request.request, ok=False, index=request.index,
                                  high_water_mark=self.high_water_mark, leader=leader, error=error, refusal=refusal))
        self._event(out, ev.READ_FAILED, request=request.request, index=request.index, reason=error)

    def _fail_reads(self, out: Ready) -> None:
        """A leader that steps down answers none of the reads it held: their client asks the new leader."""
        pending, self.pending_reads = self.pending_reads, []
        for held in pending:
            self._fail_read(out, held.read, Reason(reasons.READ_LEADERSHIP_LOST), LEADERSHIP_LOST, leader=None)

    def on_read_index_request(self, out: Ready, src: str, req: ReadIndexRequest) -> None:
        """A leader asks whether this node still follows it. A node of a later generation says its own (the asker
        then steps down); otherwise it answers as a follower of the asker, which counts as hearing from it."""
        if req.generation >= self.generation:
            if self.role != FOLLOWER or self.leader != req.leader:
                self._become_follower(out, req.generation, req.leader)
            self.election_elapsed = 0
            self.leader_contact = 0
            self.prevotes = None
        out.messages.append(Envelope(self.node_id, src, ReadIndexResponse(
            generation=self.generation, follower=self.node_id, round=req.round)))

    def on_read_index_response(self, out: Ready, src: str, resp: ReadIndexResponse) -> None:
        if self.role != LEADER or resp.generation != self.generation:
            return
        for pending in self.pending_reads:
            if pending.round <= resp.round:
                pending.confirmed.add(resp.follower)
        self._settle_reads(out)

    def receive(self, src: str | None, message: Any) -> Ready:
        out = Ready()
        handler = _HANDLERS.get(type(message))
        if handler is None:
            raise TypeError(f"replica {self.node_id} cannot handle {type(message).__name__}")
        if message.generation > self.generation and type(message) not in (PreVoteRequest, PreVoteResponse) and not (
            isinstance(message, VoteRequest) and self._leader_is_alive(message)
        ):
            self._become_follower(out, message.generation, None)
        handler(self, out, src, message)
        return out.done()

    # ---- message handlers, named after the message they handle -------------------------------------------

    def on_vote_request(self, out: Ready, src: str, req: VoteRequest) -> None:
        up_to_date = (req.last_generation, req.last_index) >= (self.log.last_generation, self.log.log_end)
        if req.generation < self.generation:
            reason = Reason(reasons.OLDER_GENERATION, generation=req.generation, current=self.generation)
        elif self._leader_is_alive(req):
            reason = Reason(reasons.LEADER_ALIVE, leader=self.leader, generation=self.generation)
        elif self._catching_up():
            reason = Reason(reasons.CATCHING_UP, index=self.catching_up_to)
        elif self.voted_for not in (None, req.candidate):
            reason = Reason(reasons.ALREADY_VOTED, candidate=self.voted_for, generation=self.generation)
        elif not up_to_date:
            reason = self._log_behind(req)
        else:
            reason = ""
        if reason:
            self._event(out, ev.VOTE_DENIED, candidate=req.candidate, generation=req.generation, reason=reason)
            out.messages.append(Envelope(src=self.node_id, dst=src, message=VoteResponse(
                generation=self.generation, voter=self.node_id, granted=False)))
            return
        self.voted_for = req.candidate
        out.hard_state = HardState(generation=self.generation, voted_for=self.voted_for)
        self.election_elapsed = 0
        self._event(out, ev.VOTE_GRANTED, candidate=req.candidate, generation=req.generation)
        out.messages.append(Envelope(src=self.node_id, dst=src, message=VoteResponse(
            generation=self.generation, voter=self.node_id, granted=True)))

    def on_prevote_request(self, out: Ready, src: str, req: PreVoteRequest) -> None:
        """Would this node vote for the candidate in req.generation? It answers, and changes nothing."""
        up_to_date = (req.last_generation, req.last_index) >= (self.log.last_generation, self.log.log_end)
        if req.generation <= self.generation:
            reason = Reason(reasons.NOT_ABOVE, generation=req.generation, current=self.generation)
        elif self.leader_contact < self.election_ticks and self.leader is not None:
            reason = Reason(reasons.LEADER_ALIVE, leader=self.leader, generation=self.generation)
        elif self._catching_up():
            reason = Reason(reasons.CATCHING_UP, index=self.catching_up_to)
        elif not up_to_date:
            reason = self._log_behind(req)
        else:
            reason = ""
        self._event(out, ev.PREVOTE_DENIED if reason else ev.PREVOTE_GRANTED, candidate=req.candidate,
                    generation=req.generation, **({"reason": reason} if reason else {}))
        out.messages.append(Envelope(self.node_id, src, PreVoteResponse(
            generation=req.generation, voter=self.node_id, granted=not reason)))

    def on_prevote_response(self, out: Ready, src: str, resp: PreVoteResponse) -> None:
        if self.prevotes is None or resp.generation != self.generation + 1 or not resp.granted:
            return
        self.prevotes.add(resp.voter)
        if len(self.prevotes) >= self._majority():
            self._become_candidate(out, force=False)

    def on_vote_response(self, out: Ready, src: str, resp: VoteResponse) -> None:
        if self.role != CANDIDATE or resp.generation != self.generation or not resp.granted:
            return
        self.votes.add(resp.voter)
        if len(self.votes) >= self._majority():
            self._become_leader(out)

    def on_replication_request(self, out: Ready, src: str, req: ReplicationRequest) -> None:
        if req.generation < self.generation:
            out.messages.append(Envelope(src=self.node_id, dst=src, message=ReplicationResponse(
                generation=self.generation, follower=self.node_id, success=False, log_end=self.log.log_end,
                prev_index=req.prev_index)))
            return
        if self.role != FOLLOWER or self.leader != req.leader:
            self._become_follower(out, req.generation, req.leader)
        self.election_elapsed = 0
        self.leader_contact = 0
        self.prevotes = None
        first, last = req.prev_index + 1, req.prev_index + len(req.entries)
        self._event(out, ev.REPLICATION_RECEIVED, **{"from": src}, prev_index=req.prev_index,
                    prev_generation=req.prev_generation, first=first, last=last, hwm=req.high_water_mark)
        beyond = next((e for e in req.entries if e.generation > req.generation), None)
        if beyond is not None:
            # No leader sends an entry of a generation after its own: the request is forged or broken.
            self._refuse_replication(out, src, req, Reason(reasons.ENTRY_FROM_THE_FUTURE, index=beyond.index,
                                                           generation=beyond.generation, current=req.generation))
            return
        if self.awaiting_epoch_answer:
            self._event(out, ev.EPOCH_QUERY, generation=self.log.last_generation, end_index=None)
            out.messages.append(Envelope(src=self.node_id, dst=src, message=EpochQuery(
                generation=self.generation, follower=self.node_id, of_generation=self.log.last_generation)))
            return

        if self.truncation == "high-water-mark":
            result = self._append_without_generation_check(req)
        else:
            result = self.impl.follower_append(self.log, req.prev_index, req.prev_generation, req.entries)
        if not result.success:
            self._event(out, ev.REPLICATION_REJECTED, **{"from": src}, prev_index=req.prev_index,
                        reason=self._rejection_reason(req), conflict_index=result.conflict_index)
            out.messages.append(Envelope(src=self.node_id, dst=src, message=ReplicationResponse(
                generation=self.generation, follower=self.node_id, success=False, log_end=self.log.log_end,
                conflict_index=result.conflict_index, prev_index=req.prev_index)))
            return
        if result.truncate_from is not None and result.truncate_from <= self.confirmed_hwm:
            # Never below what this node has seen committed: whoever asks it (a forged leader, broken code), a
            # committed entry does not change.
            self._event(out, ev.TRUNCATION_REFUSED, from_index=result.truncate_from, hwm=self.confirmed_hwm,
                        reason=Reason(reasons.COMMITTED_WOULD_GO))
            self._refuse_replication(out, src, req, Reason(reasons.TRUNCATION_BELOW_HWM, index=result.truncate_from,
                                                           hwm=self.confirmed_hwm))
            return
        if result.truncate_from is not None and result.truncate_from <= self.log.log_end:
            leaders = {e.index: e.generation for e in req.entries}
            self._truncate(out, result.truncate_from, reason="conflict",
                           conflicting_generation=leaders.get(result.truncate_from))
        appended = result.append
        if appended:
            generation = self.generation
            self.log.extend(appended)
            out.append.extend(appended)
            out.events.extend([_new(FollowerAppend, (generation, index, entry_generation, digest(payload), payload))
                               for index, entry_generation, payload in appended])
        # A follower's mark: what the leader says is committed, but never beyond what it knows matches the leader.
        self._set_high_water_mark(out, min(req.high_water_mark, result.match_index))
        out.messages.append(Envelope(src=self.node_id, dst=src, message=ReplicationResponse(
            generation=self.generation, follower=self.node_id, success=True, match_index=result.match_index,
            log_end=self.log.log_end, prev_index=req.prev_index, counts=not self._catching_up())))

    def on_replication_response(self, out: Ready, src: str, resp: ReplicationResponse) -> None:
        if self.role != LEADER or resp.generation != self.generation:
            return
        follower = resp.follower
        if resp.success and resp.match_index > self.log.log_end:
            self._event(out, ev.RESPONSE_IGNORED, follower=follower, match_index=resp.match_index,
                        reason=Reason(reasons.MATCH_BEYOND_LOG_END, end=self.log.log_end))
            return
        if resp.success and not resp.counts:  # a repaired follower catching up: send on, but do not count it
            record = self._progress(follower)
            record.next = max(record.next, resp.match_index + 1)
            if record.next <= self.log.log_end:
                self._send_replication(out, follower)
            return
        if resp.success:
            before = self.match_index.get(follower, 0)
            new_hwm = self._count_acknowledgement(follower, resp.match_index)
            record = self.progress[follower]
            # The trace shows the cause (a follower's match index) before its effect (the mark moving).
            if record.match != before:
                self._event(out, ev.MATCH_INDEX_UPDATED, follower=follower, match_index=record.match,
                            next_index=record.next)
            self._set_high_water_mark(out, new_hwm)
            if record.next <= self.log.log_end and resp.match_index >= record.next - 1:
                self._send_replication(out, follower)
            return
        retry_from = max(1, min(resp.conflict_index or resp.prev_index, resp.prev_index))
        record = self._progress(follower)
        if retry_from < record.next:
            record.next = retry_from
            self._event(out, ev.NEXT_INDEX_BACKED_UP, follower=follower, next_index=retry_from,
                        refused_after=resp.prev_index)
            # Refused from the log's start (a follower that will not cut what it saw committed): there is nothing
            # earlier to try, so the next heartbeat asks again; sent at once, the same refusal would come back at
            # once, thousands of times a second (broken code's runs wrote tens of megabytes of trace in seconds).
            if retry_from <= resp.prev_index:
                self._send_replication(out, follower)

    def on_epoch_query(self, out: Ready, src: str, query: EpochQuery) -> None:
        if self.role != LEADER or query.generation != self.generation:
            return
        end = self.impl.leader_epoch_end(self.log, query.of_generation)
        # The generations around the answer let a reader of the trace judge it without the leader's whole log.
        log = self.log
        end_generation = log.generation_at(end) if 0 <= end <= log.log_end else None
        next_generation = log.generation_at(end + 1) if 0 <= end < log.log_end else None
        self._event(out, ev.EPOCH_ANSWER, generation=query.of_generation, end_index=end, log_end=log.log_end,
                    end_generation=end_generation, next_generation=next_generation)
        out.messages.append(Envelope(src=self.node_id, dst=src, message=EpochAnswer(
            generation=self.generation, leader=self.node_id, of_generation=query.of_generation, end_index=end)))

    def on_epoch_answer(self, out: Ready, src: str, answer: EpochAnswer) -> None:
        # Only the answer to the question this boot asks: an answer to an earlier boot's question (about an older
        # last generation, still in flight across a restart) would cut entries committed since (found by explore).
        if not self.awaiting_epoch_answer or answer.generation != self.generation or \
                answer.of_generation != self.log.last_generation:
            return
        self.awaiting_epoch_answer = False
        cut = self.impl.epoch_truncation_point(self.log, answer.end_index)
        self._event(out, ev.EPOCH_TRUNCATION, end_index=answer.end_index, log_end=self.log.log_end, cut=cut)
        if cut is not None and cut <= self.log.log_end:
            self._truncate(out, cut, reason="leader-epoch", conflicting_generation=None)

    # ---- roles ---------------------------------------------------------------------------------------------

    def _become_follower(self, out: Ready, generation: int, leader: str | None) -> None:
        if generation != self.generation:
            self._event(out, ev.GENERATION_CHANGED, from_generation=self.generation, generation=generation)
            self.generation = generation
            self.voted_for = None
            out.hard_state = HardState(generation=generation, voted_for=None)
        was = self.role
        self.role = FOLLOWER
        self.leader = leader
        self.election_elapsed = 0
        self.election_timeout = self._new_election_timeout()
        if was == LEADER:
            self._fail_pending(out, Reason(reasons.LEADERSHIP_LOST))
            self._fail_reads(out)
        self._event(out, ev.BECAME_FOLLOWER, generation=generation, leader=leader)

    def _start_prevote(self, out: Ready) -> None:
        """Ask the others whether they would vote for us in the next generation, before raising ours."""
        self.prevotes = {self.node_id}
        self.election_elapsed = 0
        self.election_timeout = self._new_election_timeout()
        self._event(out, ev.PREVOTE_STARTED, generation=self.generation + 1)
        request = PreVoteRequest(generation=self.generation + 1, candidate=self.node_id,
                                 last_index=self.log.log_end, last_generation=self.log.last_generation)
        for peer in self.peers:
            out.messages.append(Envelope(self.node_id, peer, request))

    def _become_candidate(self, out: Ready, *, force: bool) -> None:
        self.prevotes = None
        if self.role == LEADER:
            self._fail_pending(out, Reason(reasons.LEADERSHIP_GIVEN_UP))
            self._fail_reads(out)
        self._event(out, ev.GENERATION_CHANGED, from_generation=self.generation, generation=self.generation + 1)
        self.generation += 1
        self.role = CANDIDATE
        self.leader = None
        self.voted_for = self.node_id
        self.votes = {self.node_id}
        out.hard_state = HardState(generation=self.generation, voted_for=self.node_id)
        self.election_elapsed = 0
        self.election_timeout = self._new_election_timeout()
        self._event(out, ev.ELECTION_STARTED, generation=self.generation)
        if len(self.votes) >= self._majority():
            self._become_leader(out)
            return
        request = VoteRequest(generation=self.generation, candidate=self.node_id, last_index=self.log.log_end,
                              last_generation=self.log.last_generation, force=force)
        for peer in self.peers:
            out.messages.append(Envelope(src=self.node_id, dst=peer, message=request))

    def _become_leader(self, out: Ready) -> None:
        self.role = LEADER
        self._last_request = None
        self.leader = self.node_id
        self.leader_contact = 0
        self.heartbeat_elapsed = 0
        self.progress = progress_of(self.nodes, self.node_id, self.log.log_end, self.durable_end)
        self.match_index = MatchIndex(self.progress)
        self.awaiting_epoch_answer = False
        self._event(out, ev.BECAME_LEADER, generation=self.generation, votes=sorted(self.votes))
        for peer in self.peers:
            self._send_replication(out, peer)

    # ---- helpers -------------------------------------------------------------------------------------------

    def _send_replication(self, out: Ready, peer: str) -> None:
        record = self._progress(peer, self.log.log_end + 1)
        next_index = min(record.next, self.log.log_end + 1)
        prev_index = next_index - 1
        last = min(self.log.log_end, prev_index + self.max_batch)
        # Followers that are level get the very same request value (so a transport encodes it once).
        request = self._last_request
        if request is None or (request.prev_index, request.generation, request.high_water_mark,
                               request.prev_index + len(request.entries)) != \
                (prev_index, self.generation, self.high_water_mark, last) or \
                request.prev_generation != self.log.generation_at(prev_index):
            request = self._last_request = ReplicationRequest(
                generation=self.generation, leader=self.node_id, prev_index=prev_index,
                prev_generation=self.log.generation_at(prev_index), entries=self.log.slice(next_index, last),
                high_water_mark=self.high_water_mark)
        # Optimistic: pipeline the next request after this one; a refusal backs next_index up again.
        record.next = last + 1
        out.early_messages.append(Envelope(src=self.node_id, dst=peer, message=request))
        self._event(out, ev.REPLICATION_SENT, to=peer, prev_index=prev_index, prev_generation=request.prev_generation,
                    first=next_index, last=last, hwm=self.high_water_mark)

    def _acknowledge(self, out: Ready, node: str, acknowledged: int) -> None:
        """Record that `node` holds the leader's log up to `acknowledged`; advance the mark if a majority does."""
        self._set_high_water_mark(out, self._count_acknowledgement(node, acknowledged))

    def _count_acknowledgement(self, node: str, acknowledged: int) -> int:
        """Exercise 2 updates the match index and says where the mark may go."""
        # Exercise 1's function is handed in, so a mixed implementation runs the student's majority rule too.
        new = self.impl.on_replication_response(self.match_index, node, acknowledged, self.high_water_mark,
                                                self.generation, self.log.generation_at, self.impl.high_water_mark)
        if new > self.log.log_end:
            raise AssertionError(f"high-water mark {new} beyond the leader's log end {self.log.log_end}")
        record = self.progress.get(node)
        if record is not None:
            record.next = max(record.next, record.match + 1)  # keeps 0 <= match < next
        return new

    def _progress(self, node: str, next: int = 1) -> Progress:
        """The leader's record of `node`, made (with nothing matched) if it has none."""
        record = self.progress.get(node)
        if record is None:
            record = self.progress[node] = Progress(0, next)
        return record

    def _set_high_water_mark(self, out: Ready, new: int) -> None:
        self.confirmed_hwm = max(self.confirmed_hwm, new)
        if self.catching_up_to and self.log.log_end >= self.catching_up_to:
            self._event(out, ev.CAUGHT_UP, index=self.catching_up_to)
            self.catching_up_to = 0
        if new <= self.high_water_mark:
            return
        old, self.high_water_mark = self.high_water_mark, new
        out.high_water_mark = new
        committed = self.log.slice(old + 1, new)
        self._event(out, ev.HWM_CHANGED, from_hwm=old, hwm=new, role=self.role,
                    entry_generation=self.log.generation_at(new),
                    committed=[[index, generation, digest(payload)] for index, generation, payload in committed])
        pending = self.pending_writes
        if self.role == LEADER and pending:
            answers, events, generation, node = out.answers, out.events, self.generation, self.node_id
            # pending_writes is in index order (a leader appends in order): stop at the first not committed.
            while pending and pending[0][0] <= new:
                index, request, entry_digest = pending.popleft()
                _, entry_generation, payload = committed[index - old - 1] if index > old else self.log.entry_at(index)
                answers.append(_new(Answer, (request, True, index, entry_generation, payload, new, node, "", "", ())))
                events.append(_new(WriteAcked, (generation, request, index, entry_generation, entry_digest)))
            deadlines = self.write_deadlines
            while deadlines and deadlines[0][0] <= new:
                deadlines.popleft()
        if self.pending_reads:  # the mark may now cover the leader's own generation: reads confirmed may go
            self._settle_reads(out)

    def _truncate(self, out: Ready, index: int, *, reason: str, conflicting_generation: int | None) -> None:
        self._last_request = None
        removed = self.log.truncate_from(index)
        out.truncate(index)
        self.durable_end = min(self.durable_end, index - 1)
        self.high_water_mark = min(self.high_water_mark, self.log.log_end)
        self._event(out, ev.TRUNCATED, from_index=index, removed=[e.as_trace() for e in removed], reason=reason,
                    conflicting_generation=conflicting_generation, hwm=self.high_water_mark)

    def _append_without_generation_check(self, req: ReplicationRequest):
        """The `high-water-mark` strategy (Kafka before 0.11): fetch from our log end, never compare generations."""
        if req.prev_index > self.log.log_end:
            return AppendResult(success=False, conflict_index=self.log.log_end + 1)
        new = tuple(e for e in req.entries if e.index > self.log.log_end)
        return AppendResult(success=True, append=new, match_index=req.prev_index + len(req.entries))

    def _refuse_replication(self, out: Ready, src: str, req: ReplicationRequest, reason: Reason) -> None:
        self._event(out, ev.REPLICATION_REJECTED, **{"from": src}, prev_index=req.prev_index, reason=reason,
                    conflict_index=req.prev_index)
        out.messages.append(Envelope(src=self.node_id, dst=src, message=ReplicationResponse(
            generation=self.generation, follower=self.node_id, success=False, log_end=self.log.log_end,
            conflict_index=req.prev_index or 1, prev_index=req.prev_index)))

    def _catching_up(self) -> bool:
        return self.log.log_end < self.catching_up_to

    def _rejection_reason(self, req: ReplicationRequest) -> Reason:
        if req.prev_index > self.log.log_end:
            return Reason(reasons.MISSING_ENTRIES, end=self.log.log_end, index=req.prev_index)
        return Reason(reasons.GENERATION_MISMATCH, index=req.prev_index,
                      generation=self.log.generation_at(req.prev_index), theirs=req.prev_generation)

    def _log_behind(self, req) -> Reason:
        return Reason(reasons.LOG_BEHIND, last_generation=req.last_generation, last_index=req.last_index,
                      own_generation=self.log.last_generation, own_index=self.log.log_end)

    def _leader_is_alive(self, req: VoteRequest) -> bool:
        # A node that heard from a live leader within the minimum election timeout ignores vote requests,
        # so a node cut off one way cannot depose a working leader (Raft dissertation 4.2.3).
        return not req.force and self.leader_contact < self.election_ticks and self.leader is not None

    def _expire_writes(self, out: Ready) -> None:
        # Deadlines grow with the index (pending_writes is in index order): stop at the first not yet due.
        deadlines, pending = self.write_deadlines, self.pending_writes
        expired = []
        while deadlines and deadlines[0][1] <= self.ticks:
            last, _ = deadlines.popleft()
            while pending and pending[0][0] <= last:
                expired.append(pending.popleft())
        for index, request, _ in expired:
            holders = tuple(sorted(n for n, m in self.match_index.items() if m >= index))
            error = timeout_error(index, holders, len(self.nodes), self.high_water_mark)
            out.answers.append(Answer(request=request, ok=False, index=index, high_water_mark=self.high_water_mark,
                                      leader=self.node_id, error=error, refusal=TIMEOUT, holders=holders))
            self._event(out, ev.WRITE_FAILED, request=request, reason=error)

    def _fail_pending(self, out: Ready, error: Reason) -> None:
        pending, self.pending_writes, self.write_deadlines = self.pending_writes, deque(), deque()
        for index, request, _ in pending:
            out.answers.append(Answer(request=request, ok=False, index=index, error=error, refusal=LEADERSHIP_LOST))
            self._event(out, ev.WRITE_FAILED, request=request, reason=error)

    def _majority(self) -> int:
        return majority(len(self.nodes))

    def _new_election_timeout(self) -> int:
        return self.election_ticks + self.rng.randrange(self.election_ticks)

    def _event(self, out: Ready, kind: str, **fields) -> None:
        out.events.append(Event(kind, {"gen": self.generation, **fields}))

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
            "next_index": {p: self.progress[p].next for p in self.peers if p in self.progress}
            if self.role == LEADER else {},
            "catching_up_to": self.catching_up_to if self._catching_up() else None,
            # The election clock, in ticks, so that a dashboard can draw it filling up.
            "election_elapsed": self.election_elapsed,
            "election_timeout": self.election_timeout,
        }


def majority(cluster_size: int) -> int:
    """The lab's own rule, never the student's: how many nodes of a cluster of this size are a majority."""
    return cluster_size // 2 + 1


def timeout_error(index: int, holders: Sequence[str], cluster_size: int, hwm: int, later: bool = False) -> Reason:
    """Why a write timed out, counted by the lab's own majority rule: the index on too few nodes, or on a majority
    that the leader's high-water mark rule (the student's code, maybe) did not count."""
    holders = tuple(holders)
    if len(holders) >= majority(cluster_size):
        return Reason(reasons.TIMEOUT_MAJORITY_LATER if later else reasons.TIMEOUT_MAJORITY, index=index, nodes=holders,
                      count=len(holders), size=cluster_size, hwm=hwm)
    return Reason(reasons.TIMEOUT_MINORITY_LATER if later else reasons.TIMEOUT_MINORITY, index=index, nodes=holders,
                  hwm=hwm)


_HANDLERS = {
    VoteRequest: Replica.on_vote_request,
    VoteResponse: Replica.on_vote_response,
    PreVoteRequest: Replica.on_prevote_request,
    PreVoteResponse: Replica.on_prevote_response,
    ReplicationRequest: Replica.on_replication_request,
    ReplicationResponse: Replica.on_replication_response,
    EpochQuery: Replica.on_epoch_query,
    EpochAnswer: Replica.on_epoch_answer,
    ReadIndexRequest: Replica.on_read_index_request,
    ReadIndexResponse: Replica.on_read_index_response,
}
