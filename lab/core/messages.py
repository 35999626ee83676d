"""Messages between nodes, client requests and answers: plain frozen values, no I/O.

The wire codec (`lab.ports.codec`) is the only place that turns these into bytes.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Any

frozen = dataclass(frozen=True, slots=True, kw_only=True)


@lru_cache(maxsize=65536)  # an entry's digest is traced several times on its way (append, commit, ack)
def digest(payload: str) -> str:
    """Short content digest of a payload, as written in traces."""
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


@frozen
class Entry:
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


MESSAGE_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (ReplicationRequest, ReplicationResponse, VoteRequest, VoteResponse, EpochQuery, EpochAnswer)
}


@frozen
class Envelope:
    """A message on its way: from `src` to `dst`."""

    src: str
    dst: str
    message: Any


# ---- client -------------------------------------------------------------------------------------------------


@frozen
class ClientWrite:
    request: str
    payload: str


@frozen
class ClientRead:
    request: str
    index: int


@frozen
class Answer:
    """The reply to a client request. `ok` False carries a readable `error` (and `leader` when redirecting)."""

    request: str
    ok: bool
    index: int = 0
    generation: int = 0
    payload: str = ""
    high_water_mark: int = 0
    leader: str | None = None
    error: str = ""


# ---- the replica's output ----------------------------------------------------------------------------------


@frozen
class HardState:
    """What must survive a crash besides the log: the generation clock and this generation's vote."""

    generation: int
    voted_for: str | None


@frozen
class Event:
    """A trace event: `type` from docs/trace-format.md, `fields` its extra fields."""

    type: str
    fields: dict = field(default_factory=dict)


@frozen
class Ready:
    """Everything one step of a replica asks its driver to do.

    The order of duties, for every driver (simulator and node process alike):
      1. persist: truncate_from (remove that index and all later), then append, then hard_state;
         then make it durable as the fsync policy says;
         the high_water_mark checkpoint may be written lazily (it is a hint, never needed for safety);
      2. send `messages` (only after step 1: a vote or an acknowledgement must never outrun the disk);
      3. answer clients (only after step 2).
    `events` go to the trace as they are.
    """

    truncate_from: int | None = None
    append: tuple[Entry, ...] = ()
    hard_state: HardState | None = None
    high_water_mark: int | None = None
    messages: tuple[Envelope, ...] = ()
    answers: tuple[Answer, ...] = ()
    events: tuple[Event, ...] = ()

    def is_empty(self) -> bool:
        return not (
            self.truncate_from is not None
            or self.append
            or self.hard_state
            or self.high_water_mark is not None
            or self.messages
            or self.answers
            or self.events
        )
