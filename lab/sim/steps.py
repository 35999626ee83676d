"""A step of a run as data: the command played, the message it moved with the values a reader follows, its node's
generation. A trace's step event keeps this (never a sentence); lab.i18n.steps says it in the reader's language."""

from __future__ import annotations

from lab.core.messages import (EpochAnswer, EpochQuery, PreVoteRequest, PreVoteResponse, ReplicationRequest,
                               ReplicationResponse, VoteRequest, VoteResponse)

MOVE_KINDS = ("deliver", "drop", "duplicate")  # the steps that move a message


def _entries(entries) -> str:
    return "[" + ", ".join(f"{e.index} (g{e.generation})" for e in entries) + "]"


def message_values(m) -> tuple[str, dict]:
    """A message's kind (a key of MESSAGES) and the values a reader follows."""
    if isinstance(m, ReplicationRequest):
        if not m.entries:
            return "heartbeat", dict(generation=m.generation, prev=m.prev_index, hwm=m.high_water_mark)
        return "replication", dict(generation=m.generation, entries=_entries(m.entries), prev=m.prev_index,
                                   prev_generation=m.prev_generation, hwm=m.high_water_mark)
    if isinstance(m, ReplicationResponse):
        if m.success:
            return "appended", dict(generation=m.generation, match=m.match_index)
        return "refused", dict(generation=m.generation, end=m.log_end)
    if isinstance(m, (VoteRequest, PreVoteRequest)):
        return "vote request", dict(generation=m.generation, end=m.last_index, last=m.last_generation)
    if isinstance(m, (VoteResponse, PreVoteResponse)):
        return "vote granted" if m.granted else "vote denied", dict(generation=m.generation)
    if isinstance(m, EpochQuery):
        return "epoch query", dict(of=m.of_generation)
    if isinstance(m, EpochAnswer):
        return "epoch answer", dict(end=m.end_index, of=m.of_generation)
    return "other", dict(kind=type(m).__name__)


def record(words: tuple[str, ...], message=None, generation: int = 0) -> dict:
    """One step as data, what a trace's step event keeps (never its sentence): which sentence of STEPS or DELIVERIES
    says it ("what", and for a move its "message" kind) and the values it takes. `words`: its command; `message`:
    the message it moves (deliver, drop, duplicate); `generation`: its node's just after it."""
    head = words[0]
    if head in MOVE_KINDS:
        src, dst = words[1].split("->")
        kind, values = message_values(message)
        return {"what": head, "message": kind, "src": src, "dst": dst, **values}
    node = words[3] if head in ("read", "write") else words[1] if len(words) > 1 else ""
    if head in ("campaign", "heartbeat"):
        return {"what": head, "node": node, "generation": generation}
    if head == "write":
        return {"what": head, "payload": words[1], "node": node}
    if head == "read":
        return {"what": head, "index": int(words[1]), "node": node}
    if head == "kill":
        return {"what": "kill lose-unsynced" if "lose-unsynced" in words else "kill", "node": node}
    if head in ("restart", "pause", "resume", "sync"):
        return {"what": head, "node": node}
    if head in ("cut", "heal"):
        return {"what": head, "link": words[1] if len(words) > 1 else "*"}
    return {"what": "other", "words": " ".join(words)}


def step_record(words: tuple[str, ...], world) -> dict:
    """One step as data, taken from the world just before it (lab.i18n.steps.record): the message it moves, and the
    generation its node will have (a campaign is forced: the next one)."""
    head = words[0]
    node = words[3] if head in ("read", "write") else words[1] if len(words) > 1 else ""
    replica = world.replicas.get(node)
    generation = replica.generation + (head == "campaign") if replica is not None else 0
    return record(words, world.in_flight(words) if head in MOVE_KINDS else None, generation)
