"""The safety properties the lab teaches, checked over trace events and a cluster status.

Used by the property tests, the scenario runner (`expect safety`) and `hwm-lab exercise check`.
"""

from __future__ import annotations

from lab.core.messages import digest
from lab.core import reasons
from lab.core.events import BECAME_LEADER, HWM_CHANGED, READ_SERVED, TRUNCATED
from lab.core.reasons import Reason


def safety_violations(events: list[dict], status: dict | None = None) -> list[str]:
    """Every broken safety rule, each a Reason (read as its English sentence). Empty when all hold."""
    problems: list[str] = []
    committed: dict[int, tuple[int, str, str]] = {}  # index -> (generation, digest, who committed it first)
    leaders: dict[int, str] = {}
    for event in events:
        kind = event["type"]
        if kind == HWM_CHANGED:
            for index, generation, entry_digest in event["committed"]:
                known = committed.setdefault(index, (generation, entry_digest, event["node"]))
                if known[:2] != (generation, entry_digest):
                    problems.append(Reason(reasons.COMMITTED_CHANGED, index=index, other=known[2], generation=known[0],
                                           digest=known[1], node=event["node"], current=generation,
                                           digest2=entry_digest))
        elif kind == BECAME_LEADER:
            other = leaders.setdefault(event["generation"], event["node"])
            if other != event["node"]:
                problems.append(Reason(reasons.TWO_LEADERS, generation=event["generation"], other=other,
                                       node=event["node"]))
        elif kind == READ_SERVED and event["index"] > event["hwm"]:
            problems.append(Reason(reasons.SERVED_ABOVE_HWM, node=event["node"], index=event["index"],
                                   hwm=event["hwm"]))
        elif kind == TRUNCATED:
            for index, generation, entry_digest in event["removed"]:
                if committed.get(index, (None, None))[:2] == (generation, entry_digest):
                    problems.append(Reason(reasons.TRUNCATED_COMMITTED, node=event["node"], index=index,
                                           generation=generation))
    if status is not None:
        problems.extend(_log_problems(status, committed))
    return _unique(problems)


def _log_problems(status: dict, committed: dict) -> list[str]:
    problems = []
    live = [n for n in status["nodes"] if n["state"] != "killed"]
    for node in live:
        for index, generation, payload in node["log"][: node["hwm"]]:
            known = committed.get(index)
            if known and known[:2] != (generation, digest(payload)):
                problems.append(Reason(reasons.HOLDS_OTHER_GENERATION, node=node["id"], generation=generation,
                                       index=index, current=known[0]))
    for a in live:
        for b in live:
            if a["id"] < b["id"]:
                upto = min(a["hwm"], b["hwm"])
                for x, y in zip(a["log"][:upto], b["log"][:upto]):
                    if x != y:
                        problems.append(Reason(reasons.LOGS_DISAGREE, other=a["id"], node=b["id"], index=x[0],
                                               hwm=a["hwm"], hwm2=b["hwm"]))
                        break
    return problems


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
