"""The grader's rules (lab.core.rules) checked as a run goes, one trace event at a time, in plain Python.

Written once for the explorer (after every step), the scenarios and `hwm-lab chaos` (over a whole trace). Every
rule is computed from the lab's own facts (the events, the logs), never through a student's function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from lab.core import events as ev
from lab.core import judges

from lab.core import reasons
from lab.core.reasons import Reason
from lab.core.messages import digest
from lab.core.rules import RULE_BY_ID


@dataclass(frozen=True)
class Violation:
    """One broken rule: its check id (lab.core.rules), the node, the index concerned and what happened."""

    check: str
    node: str
    index: int | None
    detail: str
    facts: tuple = ()  # (name, value) pairs an explanation words in any language

    @property
    def title(self) -> str:
        rule = RULE_BY_ID.get(self.check)
        return rule.title if rule else self.check

    def sentence(self) -> Reason:
        return Reason(reasons.RULE_NAMED, rule=self.check, detail=self.detail)

    def as_dict(self) -> dict:
        return {"check": self.check, "title": self.title, "node": self.node, "index": self.index,
                "detail": self.detail}


class Monitor:
    """Feed it trace records (dicts as trace lines hold them) in order; each call returns the rules broken.

    `holders(leader, k)`, when given, names the nodes whose log holds the leader's entries 1..k (the world's own
    logs, for the explorer); without it, rule 1 counts the acknowledgements the leader's trace reports.
    """

    def __init__(self, size: int, holders: Callable[[str, int], list[str]] | None = None):
        self.size = size
        self.majority = size // 2 + 1
        self.holders = holders
        self.committed: dict[int, tuple[int, str, str]] = {}  # index -> (generation, digest, first committer)
        self.acked: dict[int, str] = {}  # index -> digest of the write acknowledged there
        self.hwm: dict[tuple[str, int], int] = {}  # (node, boot) -> its HWM
        self.held: dict[tuple[str, int, int], dict[str, int]] = {}  # (leader, boot, gen) -> follower -> match

    def copy(self) -> "Monitor":
        new = Monitor.__new__(Monitor)
        new.size, new.majority, new.holders = self.size, self.majority, self.holders
        new.committed, new.acked, new.hwm = dict(self.committed), dict(self.acked), dict(self.hwm)
        new.held = {k: dict(v) for k, v in self.held.items()}
        return new

    def feed(self, e: dict) -> list[Violation]:
        handler = _HANDLERS.get(e["type"])
        return handler(self, e) or [] if handler else []

    # ---- one handler per event kind -----------------------------------------------------------------------

    def _started(self, e):
        self.hwm[(e["node"], e.get("boot", 0))] = e.get("hwm", 0)

    def _match(self, e):
        if e["follower"] != e["node"]:
            held = self.held.setdefault((e["node"], e.get("boot", 0), e.get("gen", 0)), {})
            held[e["follower"]] = max(held.get(e["follower"], 0), e["match_index"])

    def _hwm_changed(self, e):
        found, node, k = [], e["node"], e["hwm"]
        key = (node, e.get("boot", 0))
        before = self.hwm.get(key)
        if before is not None and k < before:
            said = Reason(reasons.RULE_HWM_BACK, node=node, before=before, after=k)
            found.append(Violation("hwm-monotonic", node, k, said, (("from", before), ("to", k))))
        self.hwm[key] = max(k, before or 0)
        if e.get("role") == "leader" and k > (e.get("from_hwm") or 0):
            found.extend(self._majority(e, k))
        for index, generation, entry_digest in e.get("committed", ()):
            found.extend(self._commit(node, index, generation, entry_digest))
        return found

    def _majority(self, e, k):
        node, gen = e["node"], e.get("gen", 0)
        entry_generation = e.get("entry_generation")
        if entry_generation is not None and entry_generation != gen:
            said = Reason(reasons.RULE_OLDER_ENTRY, leader=node, index=k, generation=gen,
                          entry_generation=entry_generation)
            return [Violation("hwm-majority", node, k, said,
                              (("leader", node), ("index", k), ("generation", gen),
                               ("entry_generation", entry_generation)))]
        if self.holders is not None:
            names = self.holders(node, k)
        else:
            held = self.held.get((node, e.get("boot", 0), gen), {})
            names = sorted([node, *(n for n, m in held.items() if m >= k)])
        holders = len(names)
        if holders < self.majority:
            said = Reason(reasons.RULE_MINORITY, leader=node, index=k, generation=gen, nodes=names, holders=holders,
                          size=self.size, majority=self.majority)
            return [Violation("hwm-majority", node, k, said,
                              (("leader", node), ("index", k), ("generation", gen), ("holders", holders),
                               ("nodes", names), ("size", self.size), ("majority", self.majority)))]
        return []

    def _commit(self, node, index, generation, entry_digest):
        known = first_commit(self.committed, node, index, generation, entry_digest)
        if known is None:
            return []
        if self.acked.get(index) not in (None, entry_digest):
            said = Reason(reasons.RULE_ACKED_LOST, index=index, node=node, generation=generation)
            return [Violation("acked-in-final-logs", node, index, said,
                              (("node", node), ("index", index), ("generation", generation)))]
        said = Reason(reasons.RULE_COMMITTED_CHANGED, index=index, was=known[0], first=known[2], node=node,
                      now=generation)
        return [Violation("committed-never-change", node, index, said,
                          (("node", node), ("index", index), ("first", known[2]), ("was", known[0]),
                           ("now", generation)))]

    def _append(self, e):
        index = e["index"]
        known = self.committed.get(index)
        if known and known[1] != e["digest"] and e.get("gen", 0) >= known[0]:
            said = Reason(reasons.RULE_COMMITTED_CHANGED, index=index, was=known[0], first=known[2], node=e["node"],
                          now=e["generation"])
            return [Violation("committed-never-change", e["node"], index, said,
                              (("node", e["node"]), ("index", index), ("first", known[2]), ("was", known[0]),
                               ("now", e["generation"])))]
        return []

    def _acked(self, e):
        self.acked[e["index"]] = e["digest"]

    def _read_served(self, e):
        node, index = e["node"], e["index"]
        hwm = min(e["hwm"], self.hwm.get((node, e.get("boot", 0)), e["hwm"]))
        if index > hwm:
            detail = reasons.Reason(reasons.SERVED_ABOVE_HWM, node=node, index=index, hwm=hwm)
            return [Violation("read-above-hwm", node, index, detail, (("node", node), ("index", index), ("hwm", hwm)))]
        return []

    def _read_refused(self, e):
        if 1 <= e["index"] <= e["hwm"]:
            said = Reason(reasons.RULE_REFUSED_AT_OR_BELOW, node=e["node"], index=e["index"], hwm=e["hwm"])
            return [Violation("read-gate-strict", e["node"], e["index"], said,
                              (("node", e["node"]), ("index", e["index"]), ("hwm", e["hwm"])))]
        return []

    def _truncated(self, e):
        node, found = e["node"], []
        for index, generation, entry_digest in e.get("removed", ()):
            if e.get("conflicting_generation") is not None and generation == e["conflicting_generation"]:
                said = Reason(reasons.RULE_REMOVED_SAME_GENERATION, node=node, index=index, generation=generation)
                found.append(Violation("truncation-safe", node, index, said,
                                       (("node", node), ("index", index), ("generation", generation))))
            elif is_committed(self.committed, index, generation, entry_digest):
                acked = self.acked.get(index) == entry_digest
                found.append(Violation("truncation-safe", node, index, Reason(
                    reasons.RULE_REMOVED_ACKED if acked else reasons.RULE_REMOVED_COMMITTED, node=node, index=index),
                    (("node", node), ("index", index), ("acked", acked))))
        return found[:1]

    def _wal_truncated(self, e):
        if e["log_end"] != e["from_index"] - 1:
            said = Reason(reasons.RULE_WAL_CUT, node=e["node"], index=e["from_index"], log_end=e["log_end"])
            return [Violation("wal-truncation", e["node"], e["from_index"], said,
                              (("node", e["node"]), ("index", e["from_index"]), ("log_end", e["log_end"])))]
        return []

    def _epoch_answer(self, e):
        end, log_end, g = e["end_index"], e.get("log_end"), e["generation"]
        eg, ng = e.get("end_generation"), e.get("next_generation")
        if judges.epoch_end(end, end if log_end is None else log_end, eg, ng, g) is not None:
            said = Reason(reasons.RULE_EPOCH_END, node=e["node"], index=end, generation=g)
            return [Violation("epoch-end", e["node"], end, said,
                              (("node", e["node"]), ("index", end), ("generation", g)))]
        return []

    def _epoch_truncation(self, e):
        if judges.epoch_cut(e["log_end"], e["end_index"], e.get("cut")) is not None:
            said = Reason(reasons.RULE_EPOCH_CUT, node=e["node"], end=e["end_index"], log_end=e["log_end"],
                          cut=str(e.get("cut")))
            return [Violation("epoch-truncation", e["node"], e.get("cut"), said,
                              (("node", e["node"]), ("end", e["end_index"]), ("log_end", e["log_end"]),
                               ("cut", e.get("cut"))))]
        return []

    # ---- the logs as they are now -------------------------------------------------------------------------

    def check_logs(self, logs: dict[str, tuple[list, int]]) -> list[Violation]:
        """Rules 4 and 6 over the live nodes' logs: node -> (entries (index, generation, payload), HWM); the first
        broken, as log_faults finds it."""
        for fault in log_faults(logs, self.committed):
            what, node = fault[0], fault[1]
            if what == BEYOND:
                hwm = fault[2]
                said = Reason(reasons.RULE_HWM_BEYOND_LOG, node=node, index=hwm, log_end=fault[3])
                return [Violation("logs-agree", node, hwm, said, (("node", node), ("index", hwm)))]
            if what == HOLDS:
                _, _, index, generation, known = fault
                return [Violation("committed-never-change", node, index, Reason(
                    reasons.HOLDS_OTHER_GENERATION, node=node, generation=generation, index=index,
                    current=known[0]),
                                  (("node", node), ("index", index), ("first", known[2]), ("was", known[0]),
                                   ("now", generation)))]
            a, b, where = node, fault[2], fault[3]
            return [Violation("logs-agree", b, where, Reason(reasons.RULE_LOGS_DISAGREE, a=a, b=b, index=where),
                              (("a", a), ("b", b), ("index", where)))]
        return []


# ---- the rules over the facts, each written once: the monitor and the invariants (`expect safety`) call these ----

def first_commit(committed: dict, node: str, index: int, generation: int, entry_digest: str) -> tuple | None:
    """Note `node`'s commit of an entry at `index` (the first one known stays); when the entry committed first
    there differs, that one, (generation, digest, node): a committed entry never changes."""
    known = committed.setdefault(index, (generation, entry_digest, node))
    return None if known[:2] == (generation, entry_digest) else known


def is_committed(committed: dict, index: int, generation: int, entry_digest: str) -> bool:
    return committed.get(index, (None, None))[:2] == (generation, entry_digest)


BEYOND, HOLDS, DISAGREE = "beyond", "holds", "disagree"


def log_faults(logs: dict[str, tuple[list, int]], committed: dict) -> Iterator[tuple]:
    """What is wrong with the live nodes' logs (node -> (entries (index, generation, payload), HWM)), in order: for
    each node, (BEYOND, node, hwm, log_end) when its HWM is past its log's end, and (HOLDS, node, index, generation,
    first) for each entry below its HWM that is not the one committed first there; then, for each two nodes,
    (DISAGREE, a, b, index) at the first index where their logs differ below both HWMs."""
    for node, (entries, hwm) in logs.items():
        if hwm > len(entries):
            yield BEYOND, node, hwm, len(entries)
        for index, generation, payload in entries[:hwm]:
            known = committed.get(index)
            if known and known[:2] != (generation, _digest(payload)):
                yield HOLDS, node, index, generation, known
    names = sorted(logs)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            upto = min(logs[a][1], logs[b][1])
            left, right = logs[a][0][:upto], logs[b][0][:upto]
            if left != right:  # compared whole first: the explorer asks after every step, and they mostly agree
                where = next((x[0] for x, y in zip(left, right) if x != y), None)
                if where is not None:  # not only a log shorter than its HWM (BEYOND says that)
                    yield DISAGREE, a, b, where


_DIGESTS: dict[str, str] = {}


def _digest(payload: str) -> str:
    known = _DIGESTS.get(payload)
    if known is None:
        if len(_DIGESTS) > 100_000:
            _DIGESTS.clear()
        known = _DIGESTS[payload] = digest(payload)
    return known


_HANDLERS = {
    ev.NODE_STARTED: Monitor._started,
    ev.MATCH_INDEX_UPDATED: Monitor._match,
    ev.HWM_CHANGED: Monitor._hwm_changed,
    ev.LEADER_APPEND: Monitor._append,
    ev.FOLLOWER_APPEND: Monitor._append,
    ev.WRITE_ACKED: Monitor._acked,
    ev.READ_SERVED: Monitor._read_served,
    ev.READ_REFUSED: Monitor._read_refused,
    ev.TRUNCATED: Monitor._truncated,
    ev.WAL_TRUNCATED: Monitor._wal_truncated,
    ev.EPOCH_ANSWER: Monitor._epoch_answer,
    ev.EPOCH_TRUNCATION: Monitor._epoch_truncation,
}


def check_trace(events: list[dict], size: int) -> list[Violation]:
    """Every rule broken in a whole trace (events in trace order), the first of each kind: for chaos and tests."""
    monitor, found, seen = Monitor(size), [], set()
    for event in events:
        for violation in monitor.feed(event):
            if violation.check not in seen:
                seen.add(violation.check)
                found.append(violation)
    return found
