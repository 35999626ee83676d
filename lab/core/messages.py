"""The values the replica takes and gives: log entries, messages between nodes, client requests, answers with
typed refusals, control requests, and trace events. No I/O.

Nobody changes a value after it is made. Wire messages are frozen dataclasses; the records a busy leader makes
once per entry (Entry, Answer) are NamedTuples, about three times cheaper to build. Event kinds are declared in
lab.core.events, refusal kinds and reasons in lab.core.reasons (imported here too). The wire codec
(`lab.ports.codec`) is the only place that turns these into bytes, and the trace (`lab.ports.trace`) the only place
that turns events into lines.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from lab.core.events import (  # the trace events and the refusal kinds, declared with the others there
    ENTRY_EVENTS, READ_REFUSED, Event, FollowerAppend, LeaderAppend, WriteAcked, WriteRequested, event_fields)
from lab.core.reasons import (
    ABOVE_HWM, LEADERSHIP_LOST, NO_SUCH_INDEX, NODE_DOWN, NOT_LEADER, REFUSALS, TIMEOUT, UNREACHABLE)

frozen = dataclass(frozen=True, slots=True, kw_only=True)


@lru_cache(maxsize=65536)  # an entry's digest is traced several times on its way (append, commit, ack)
def digest(payload: str) -> str:
    """Short content digest of a payload, as written in traces."""
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


class Entry(NamedTuple):
    index: int
    generation: int
    payload: str

    def as_trace(self) -> list:
        return [self.index, self.generation, digest(self.payload)]


# ---- node to node -------------------------------------------------------------------------------------------


@frozen
class ReplicationRequest:
    """Leader -> follower: entries after (prev_index, prev_generation), plus the leader's high-water mark.

    With no entries it is a heartbeat.
    """

    generation: int
    leader: str
    prev_index: int
    prev_generation: int
    entries: tuple[Entry, ...] = ()
    high_water_mark: int = 0


@frozen
class ReplicationResponse:
    """Follower -> leader.

    match_index: the last index the follower now knows to match the leader (prev_index + len(entries)).
    log_end: the follower's last index. On a refusal, conflict_index is where the leader should retry from.
    """

    generation: int
    follower: str
    success: bool
    match_index: int = 0
    log_end: int = 0
    conflict_index: int = 0
    prev_index: int = 0
    counts: bool = True  # False while a repaired node catches up: its match index is not counted for the HWM


@frozen
class VoteRequest:
    generation: int
    candidate: str
    last_index: int
    last_generation: int
    force: bool = False  # an explicit campaign (scenario step, dashboard): ignore the live-leader rule


@frozen
class VoteResponse:
    generation: int
    voter: str
    granted: bool


@frozen
class PreVoteRequest:
    """Pre-vote (Raft thesis 9.6): "would you vote for me in `generation`?", asked before a candidate raises its
    generation. Nobody persists or changes anything for it, so a node that was cut off cannot depose a leader."""

    generation: int  # the generation the candidate would campaign in
    candidate: str
    last_index: int
    last_generation: int


@frozen
class PreVoteResponse:
    generation: int  # the generation asked about
    voter: str
    granted: bool


@frozen
class ReadIndexRequest:
    """Leader -> follower, for linearizable reads: "do you still follow me in `generation`?" `round` numbers the
    leader's checks: an answer to round r confirms every read that reached the leader before it sent round r."""

    generation: int
    leader: str
    round: int


@frozen
class ReadIndexResponse:
    """Follower -> leader: it follows `generation`'s leader still (a higher generation tells the leader it is not)."""

    generation: int
    follower: str
    round: int


@frozen
class EpochQuery:
    """leader-epoch strategy: a restarted follower asks where the leader's log ends for `of_generation`."""

    generation: int
    follower: str
    of_generation: int


@frozen
class EpochAnswer:
    generation: int
    leader: str
    of_generation: int
    end_index: int


class Envelope(NamedTuple):
    """A message on its way: from `src` to `dst`."""

    src: str
    dst: str
    message: Any


@frozen
class Challenge:
    """First frame a node sends on every connection it accepts: a fresh nonce, for a peer to prove it knows the
    cluster's secret (clients ignore it)."""

    nonce: str
    node: str  # who is asking


@frozen
class Hello:
    """The answer to a Challenge on a connection a node opens to a peer (or the supervisor to a node): who is
    sending, and proof = HMAC-SHA256(cluster secret, "nonce|node|receiver"). Peer messages, and control requests
    that change a node, are accepted only after it."""

    node: str
    proof: str


# ---- client -------------------------------------------------------------------------------------------------


class ClientWrite(NamedTuple):  # one per write: a NamedTuple, like Entry and Answer
    request: str
    payload: str


@frozen
class ClientRead:
    """A client's read of one index. `linearizable`: ask the leader, which first confirms with a round of its
    followers that it still leads, then serves up to its mark (ReadIndex, Raft thesis 6.4): a read that cannot be
    stale. A plain read is served by whichever node is asked, up to that node's own mark."""

    request: str
    index: int
    linearizable: bool = False


class Answer(NamedTuple):
    """The reply to a client request. `ok` False carries a `refusal` kind (lab.core.reasons) and an `error`: a
    Reason (lab.core.reasons) from the lab, or a sentence from a student's check_read.

    holders: with TIMEOUT, the nodes the leader knew to hold the index (so the client can be told where it is).
    """

    request: str
    ok: bool
    index: int = 0
    generation: int = 0
    payload: str = ""
    high_water_mark: int = 0
    leader: str | None = None
    error: str = ""
    refusal: str = ""
    holders: tuple[str, ...] = ()


def answer_fields(answer: Answer, node: str | None) -> dict:
    """An answer as the trace's `client_answer` line holds it (lab.core.events.CLIENT_ANSWER): `node` answered."""
    fields = {"request": answer.request, "ok": answer.ok}
    if node:
        fields["answered_by"] = node
    if answer.index:
        fields["index"] = answer.index
    if answer.ok or answer.high_water_mark:
        fields["hwm"] = answer.high_water_mark
    if answer.ok:
        fields["digest"] = digest(answer.payload)
    else:
        fields["refusal"] = answer.refusal
    return fields


# ---- control (supervisor, tests and dashboard to a node) ------------------------------------------------------


@frozen
class Control:
    """A request to a node's control side: `op` plus its arguments, flat on the wire."""

    request: str
    op: str
    args: dict = field(default_factory=dict)


@frozen
class ControlReply:
    request: str
    ok: bool
    result: dict = field(default_factory=dict)
    error: str = ""


# ---- durable state --------------------------------------------------------------------------------------------


@frozen
class HardState:
    """What must survive a crash besides the log: the generation clock and this generation's vote."""

    generation: int
    voted_for: str | None

