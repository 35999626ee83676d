"""The clients' history (lab.harness.history) in the reader's language: what `hwm-lab history` prints and `hwm-lab
chaos` adds to its report. One whole sentence per line; a figure follows its name, so no word follows a count."""

from __future__ import annotations

from lab.harness.history import (
    DIRTY, MONOTONIC, READ, REFUSED, REFUSED_BY_MARK, RYW, SERVED, STALE, UNANSWERED, WRITE, History, Operation,
    SessionViolation, Stale)
from lab.i18n import Joined, Listed, Text, say

SHOWN = 5  # examples of each kind a report quotes


def _at(op: Operation) -> float:
    return round(op.start[0], 3)


def _done(op: Operation) -> float:
    return round(op.end[0], 3) if op.end is not None else round(op.start[0], 3)


def summary(h: History, run: str) -> Text:
    writes, reads = h.writes, h.reads
    values = dict(run=run, writes=len(writes), acked=sum(w.ok for w in writes), reads=len(reads))
    if h.from_answers:
        return say("history of {run}: writes {writes} ({acked} acknowledged), reads {reads}; each operation from its "
                   "client's request to the answer it got", **values)
    return say("history of {run}: writes {writes} ({acked} acknowledged), reads {reads}; each operation from its "
               "request to its node's answer (this trace does not hold the clients' answers)", **values)


def by_node(h: History) -> list[Text]:
    lines: list[Text] = [say("reads by node: served, refused before any write of their index was acknowledged, "
                             "stale, dirty, not answered by a mark")]
    for node, counts in h.by_node().items():
        lines.append(say("  {node}: served {served}, refused {refused}, stale {stale}, dirty {dirty}, not answered "
                         "{unanswered}", node=node, served=counts[SERVED], refused=counts[REFUSED],
                         stale=counts[STALE], dirty=counts[DIRTY], unanswered=counts[UNANSWERED]))
    if not h.reads:
        lines.append(say("  no reads"))
    return lines


def stale_read(op: Operation) -> Text:
    """One stale read: who refused what, when, with which mark, after which acknowledgement."""
    write = op.acked_before
    values = dict(node=op.node or op.target or "?", index=op.index, at=_at(op), hwm=op.hwm,
                  acked_by=write.node or "?", client=write.client, acked_at=_done(write))
    if op.leader is not None and op.leader_hwm is not None:
        return say("  stale: {node} refused index {index} at {at} s with its mark at {hwm}, after {acked_by} had "
                   "acknowledged a write there to {client} at {acked_at} s; the leader {leader}'s mark was "
                   "{leader_hwm}", leader=op.leader, leader_hwm=op.leader_hwm, **values)
    return say("  stale: {node} refused index {index} at {at} s with its mark at {hwm}, after {acked_by} had "
               "acknowledged a write there to {client} at {acked_at} s", **values)


def stale_said(stale: Stale) -> Text:
    """A stale read as the dashboard's feed says it when its client gets the answer (lab.harness.history.StaleWatch)."""
    values = dict(node=stale.node or "?", index=stale.index, hwm=stale.hwm, acked_by=stale.acked_by or "?")
    if stale.leader is not None and stale.leader_hwm is not None:
        return say("Stale read: {node} refused index {index} with its mark at {hwm}, after {acked_by} had "
                   "acknowledged a write at index {index} to a client; the leader {leader}'s mark is {leader_hwm}",
                   leader=stale.leader, leader_hwm=stale.leader_hwm, **values)
    return say("Stale read: {node} refused index {index} with its mark at {hwm}, after {acked_by} had acknowledged a "
               "write at index {index} to a client", **values)


def answer_said(e: dict, what: str | None, index: int | None, refusal) -> Text:
    """A client's answer (a `client_answer` line) as the feed says it: `what` the client asked (write or read, of
    `index`), `refusal` the word for the answer's refusal."""
    node = e.get("answered_by") or "?"
    if e.get("ok") and what == WRITE:
        return say("The client is told: written at index {index}, acknowledged by {node}", index=e.get("index"),
                   node=node)
    if e.get("ok"):
        return say("The client is told: {node} served index {index}", index=e.get("index"), node=node)
    if what == READ and e.get("refusal") in REFUSED_BY_MARK:
        return say("The client is told: {node} refused index {index} (its mark is {hwm})", index=index, node=node,
                   hwm=e.get("hwm"))
    return say("The client is told: no ({refusal})", refusal=refusal)


def dirty_read(op: Operation) -> Text:
    values = dict(node=op.node or "?", index=op.index, at=_at(op), hwm=op.hwm)
    if op.hwm is not None and op.index > op.hwm:
        return say("  dirty: {node} served index {index} at {at} s, above its mark {hwm}", **values)
    return say("  dirty: {node} served index {index} at {at} s an entry the log never committed there", **values)


def _session_line(v: SessionViolation) -> Text:
    later, earlier = v.later, v.earlier
    values = dict(client=v.client, index=later.index, node=later.node or later.target or "?", at=_at(later),
                  hwm=later.hwm, then=_done(earlier))
    if v.kind == RYW:
        return say("  {client} read index {index} from {node} at {at} s and was refused (its mark {hwm}), after its "
                   "own write there was acknowledged at {then} s: read-your-writes broken", **values)
    return say("  {client} read index {index} from {node} at {at} s and was refused (its mark {hwm}), after "
               "{other} had served it index {seen} at {then} s: monotonic reads broken",
               other=earlier.node or "?", seen=earlier.index, **values)


def sessions(h: History) -> list[Text]:
    ryw, monotonic = h.sessions_of(RYW), h.sessions_of(MONOTONIC)
    lines: list[Text] = [say("sessions: violations of read-your-writes and of monotonic reads")]
    for client in ryw:
        lines.append(say("  {client}: read-your-writes {ryw}, monotonic reads {monotonic}", client=client,
                         ryw=ryw[client], monotonic=monotonic[client]))
    for kind in (RYW, MONOTONIC):
        lines += [_session_line(v) for v in [v for v in h.sessions if v.kind == kind][:SHOWN]]
    return lines


def linearizable(h: History) -> Text:
    parts, broken = len(h.parts), h.not_linearizable()
    if h.linearizable:
        return say("linearizable: yes (the operations of {parts} indexes checked, one register per index)",
                   parts=parts)
    if broken:
        return say("linearizable: no: at {count} of {parts} indexes no order of the operations respects their times "
                   "(indexes {indexes})", count=len(broken), parts=parts,
                   indexes=Listed(str(i) for i in broken[:10]))
    undecided = sorted(i for i, v in h.parts.items() if v.ok is None)
    return say("linearizable: not decided: the search ran out of steps at indexes {indexes}",
               indexes=Listed(str(i) for i in undecided[:10]))


def report(h: History, run: str) -> Joined:
    """The whole report of one run's history."""
    lines: list = [summary(h, run), *by_node(h)]
    lines += [stale_read(op) for op in h.of_verdict(STALE)[:SHOWN]]
    lines += [dirty_read(op) for op in h.of_verdict(DIRTY)[:SHOWN]]
    lines += sessions(h)
    lines.append(linearizable(h))
    return Joined(lines, "\n")


def chaos_lines(h: History) -> list:
    """What `hwm-lab chaos` adds to its report: the reads per node, the sessions, linearizability."""
    lines: list = [*by_node(h)]
    lines += [stale_read(op) for op in h.of_verdict(STALE)[:3]]
    lines += [dirty_read(op) for op in h.of_verdict(DIRTY)[:3]]
    lines += sessions(h)[:1 + len(h.sessions_of(RYW))]
    lines.append(linearizable(h))
    return lines
