"""What a chaos run's clients were told, and its check against the nodes' final logs and the trace: written from the
trace format and the clients' own records, not from the replica's code (lab/core/invariants.py is not used)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lab.core.messages import digest
from lab.core.monitor import check_trace
from lab.ports.trace import read_kinds
from lab.core.events import (
    BECAME_LEADER, ELECTION_STARTED, EPOCH_ANSWER, EPOCH_TRUNCATION, HWM_CHANGED, MATCH_INDEX_UPDATED, NODE_EXITED,
    NODE_KILLED, NODE_STARTED, PREVOTE_STARTED, READ_REFUSED, READ_SERVED, TRUNCATED, WAL_TRUNCATED, WRITE_ACKED)
from lab.core import reasons
from lab.core.reasons import SERVED_ABOVE_HWM, TWO_LEADERS, Reason

# ---- what the clients saw ----------------------------------------------------------------------------------


@dataclass
class WriteRecord:
    client: str
    payload: str
    ok: bool
    index: int = 0
    generation: int = 0
    node: str | None = None
    refusal: str = ""


@dataclass
class ReadRecord:
    client: str
    node: str
    index: int
    ok: bool
    generation: int = 0
    payload: str = ""
    hwm: int = 0
    refusal: str = ""


@dataclass
class Fault:
    time: float  # seconds since the run started, taken just before the request
    op: str
    target: str = ""
    delay_ms: float | None = None  # what a delay set
    drop_rate: float | None = None  # what a drop set (a loss rate, 0 to 1)
    after_disk_ok: bool = False  # a restart of a node whose disk fault was cleared first
    leader: str | None = None  # the leader as the nemesis saw it just before
    leader_generation: int = 0
    refused: str = ""


# ---- the checker: independent of the replica --------------------------------------------------------------


@dataclass
class Verdict:
    acknowledged: int  # writes the clients were told are committed
    acked_by_nodes: int  # distinct entries the nodes traced as write_acked
    reads_served: int  # reads the clients were served
    reads_traced: int  # read_served events in the trace (the same reads, seen by the nodes)
    lost: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def check(writes: list[WriteRecord], reads: list[ReadRecord], events: list[dict], final: dict[str, dict],
          size: int | None = None) -> Verdict:
    """What went wrong, in words.

    `final` maps each live node to its final `{"log": [[index, generation, payload], ...], "hwm": N}`; `events` are
    the trace's events (any order). Checked: every acknowledged write (to a client, or traced as write_acked) is at
    its index, same generation and payload, in every live node's final log; the final logs agree below their
    high-water marks, with each other and with every entry the trace says was committed; a committed index never
    changes; one leader per generation; every read served was at or below the serving node's high-water mark and
    returned the committed entry. With `size` (the number of nodes), also the grader's rules over the trace
    (lab.core.monitor: among them, no leader raises its mark above what a majority acknowledged).
    """
    events = sorted(events, key=lambda e: (e.get("time", 0.0), str(e.get("node")), e.get("seq", 0)))
    committed, violations = _committed_by_trace(events)
    if not final:
        violations.append("no live node at the end: nothing to check the acknowledged writes against")
    history = _final_history(final, committed, violations)
    lost, client_acks, traced_acks = _lost_writes(writes, events, final)
    served, traced = _check_reads(reads, events, history, committed, violations)
    if size:
        violations.extend(v.sentence() for v in check_trace(events, size))
    return Verdict(acknowledged=client_acks, acked_by_nodes=traced_acks, reads_served=served,
                   reads_traced=traced, lost=lost, violations=list(dict.fromkeys(violations)))


def _committed_by_trace(events: list[dict]) -> tuple[dict[int, tuple[int, str, str]], list]:
    """What the trace says was committed (index -> (generation, digest, who committed it first)), and the
    violations seen on the way: an index committed twice differently, two leaders of one generation."""
    violations: list = []
    committed: dict[int, tuple[int, str, str]] = {}
    leaders: dict[int, str] = {}
    for event in events:
        kind = event.get("type")
        if kind == HWM_CHANGED:
            for index, generation, entry_digest in event.get("committed", []):
                first = committed.setdefault(index, (generation, entry_digest, event["node"]))
                if first[:2] != (generation, entry_digest):
                    violations.append(f"index {index} was committed as generation {first[0]} ({first[1]}) on "
                                      f"{first[2]}, then as generation {generation} ({entry_digest}) on "
                                      f"{event['node']}")
        elif kind == BECAME_LEADER:
            first_leader = leaders.setdefault(event["generation"], event["node"])
            if first_leader != event["node"]:
                violations.append(Reason(TWO_LEADERS, generation=event["generation"], other=first_leader,
                                         node=event["node"]))
    return committed, violations


def _final_history(final: dict[str, dict], committed: dict, violations: list) -> dict[int, tuple[int, str, str]]:
    """The final logs, below each node's high-water mark: one history (index -> (generation, payload, node)), the
    one the trace committed; where they part, a violation."""
    history: dict[int, tuple[int, str, str]] = {}
    for node in sorted(final):
        log, hwm = final[node]["log"], final[node]["hwm"]
        if hwm > len(log):
            violations.append(Reason(reasons.RULE_HWM_BEYOND_LOG, node=node, index=hwm, log_end=len(log)))
        for position, (index, generation, payload) in enumerate(log[:hwm], 1):
            if index != position:
                violations.append(f"{node}'s log has index {index} at position {position}")
                break
            known = history.setdefault(index, (generation, payload, node))
            if known[:2] != (generation, payload):
                violations.append(f"{node} and {known[2]} disagree at index {index}, below both high-water marks: "
                                  f"generation {generation} {payload!r} against generation {known[0]} {known[1]!r}")
                break
            trace = committed.get(index)
            if trace is not None and trace[:2] != (generation, digest(payload)):
                violations.append(f"{node} holds generation {generation} at index {index}, below its high-water "
                                  f"mark; the trace committed generation {trace[0]} there ({trace[2]})")
                break
    return history


def _lost_writes(writes: list[WriteRecord], events: list[dict], final: dict[str, dict]) -> tuple[list[str], int, int]:
    """The acknowledged writes (told to a client, or traced as write_acked) missing from a live node's final log;
    with how many the clients were told of and how many distinct ones the nodes traced."""
    acknowledged: dict[tuple[int, int, str], str] = {}
    for w in writes:
        if w.ok:
            acknowledged[(w.index, w.generation, digest(w.payload))] = \
                f"write {w.payload!r} acknowledged to {w.client} at index {w.index} (generation {w.generation})"
    client_acks = len(acknowledged)
    traced_acks = set()
    for event in events:
        if event.get("type") == WRITE_ACKED:
            key = (event["index"], event["generation"], event["digest"])
            traced_acks.add(key)
            acknowledged.setdefault(key, f"request {event['request']} acknowledged by {event['node']} at index "
                                         f"{event['index']} (generation {event['generation']})")
    lost = []
    for (index, generation, entry_digest), what in sorted(acknowledged.items()):
        missing = []
        for node in sorted(final):
            log = final[node]["log"]
            if index > len(log):
                missing.append(f"{node} (log ends at {len(log)})")
            elif (log[index - 1][1], digest(log[index - 1][2])) != (generation, entry_digest):
                missing.append(f"{node} (holds generation {log[index - 1][1]} {log[index - 1][2]!r})")
        if missing:
            lost.append(f"{what}: not in the final log of {', '.join(missing)}")
    return lost, client_acks, len(traced_acks)


def _check_reads(reads: list[ReadRecord], events: list[dict], history: dict, committed: dict,
                 violations: list) -> tuple[int, int]:
    """Every read served, as the clients saw it and as the trace has it, against the committed history; returns how
    many the clients were served and how many the trace holds."""
    served = traced = 0
    for r in reads:
        if r.ok:
            served += 1
            violations.extend(_read_problems(r.node, r.index, r.hwm, r.generation, digest(r.payload), history,
                                             committed))
    for event in events:
        if event.get("type") == READ_SERVED:
            traced += 1
            index, generation, entry_digest = event["entry"]
            violations.extend(_read_problems(event["node"], event["index"], event["hwm"], generation, entry_digest,
                                             history, committed))
    return served, traced


def _read_problems(node, index, hwm, generation, entry_digest, history, committed) -> list[str]:
    """A served read's problems. The same wording from the client's record and from the trace, so that one read
    seen both ways counts once."""
    problems = []
    if index > hwm:
        problems.append(Reason(SERVED_ABOVE_HWM, node=node, index=index, hwm=hwm))
    final = history.get(index)
    if final is not None:
        expected = (final[0], digest(final[1]))
    elif index in committed:
        expected = committed[index][:2]
    else:
        return problems + [f"{node} served index {index}, which no live node holds below its final high-water mark"]
    if (generation, entry_digest) != expected:
        problems.append(f"{node} served generation {generation} ({entry_digest}) at index {index}; the committed "
                        f"entry is generation {expected[0]} ({expected[1]})")
    return problems


# ---- the trace -----------------------------------------------------------------------------------------------

WANTED = (HWM_CHANGED, BECAME_LEADER, ELECTION_STARTED, PREVOTE_STARTED, WRITE_ACKED, READ_SERVED, NODE_KILLED,
          NODE_EXITED, NODE_STARTED, MATCH_INDEX_UPDATED, READ_REFUSED, TRUNCATED, WAL_TRUNCATED, EPOCH_ANSWER,
          EPOCH_TRUNCATION)


def read_trace(run_dir: Path) -> list[dict]:
    """The events the checker and the figures need, from every events-*.jsonl (a torn last line is skipped)."""
    return read_kinds(run_dir, WANTED)


def leader_gaps(faults: list[Fault], events: list[dict]) -> tuple[list[tuple[float, float]], int]:
    """For each kill of the leader: (when its node_killed event was written, seconds from then to the first
    became_leader of a later generation); and how many such kills saw no new leader before the end."""
    kills = sorted((e["time"], e["target"]) for e in events if e.get("type") == NODE_KILLED)
    wins = sorted((e["time"], e["generation"]) for e in events if e.get("type") == BECAME_LEADER)
    gaps, none = [], 0
    for fault in faults:
        if fault.op not in ("kill", "restart") or fault.refused or fault.target != fault.leader:
            continue
        killed_at = next((t for t, target in kills if target == fault.target and t >= fault.time), None)
        if killed_at is None:
            continue
        won_at = next((t for t, generation in wins if t >= killed_at and generation > fault.leader_generation), None)
        if won_at is None:
            none += 1
        else:
            gaps.append((killed_at, won_at - killed_at))
    return gaps, none
