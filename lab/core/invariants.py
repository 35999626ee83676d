"""The safety properties the lab teaches, checked over trace events and a cluster status.

Used by the property tests, the scenario runner (`expect safety`) and `hwm-lab exercise check`; the rules it shares
with the grader's monitor (a committed entry never changes, nor is truncated; the logs agree) are the monitor's.
"""

from __future__ import annotations

from lab.core.monitor import BEYOND, HOLDS, first_commit, is_committed, log_faults
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
                known = first_commit(committed, event["node"], index, generation, entry_digest)
                if known is not None:
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
                if is_committed(committed, index, generation, entry_digest):
                    problems.append(Reason(reasons.TRUNCATED_COMMITTED, node=event["node"], index=index,
                                           generation=generation))
    if status is not None:
        problems.extend(_log_problems(status, committed))
    return _unique(problems)


def _log_problems(status: dict, committed: dict) -> list[str]:
    """The rules over the logs of the nodes not killed, as the monitor's (lab.core.monitor.log_faults), in words."""
    live = {n["id"]: (n["log"], n["hwm"]) for n in status["nodes"] if n["state"] != "killed"}
    problems = []
    for fault in log_faults(live, committed):
        what, node = fault[0], fault[1]
        if what == BEYOND:
            problems.append(Reason(reasons.RULE_HWM_BEYOND_LOG, node=node, index=fault[2], log_end=fault[3]))
        elif what == HOLDS:
            _, _, index, generation, known = fault
            problems.append(Reason(reasons.HOLDS_OTHER_GENERATION, node=node, generation=generation, index=index,
                                   current=known[0]))
        else:
            b, index = fault[2], fault[3]
            problems.append(Reason(reasons.LOGS_DISAGREE, other=node, node=b, index=index, hwm=live[node][1],
                                   hwm2=live[b][1]))
    return problems


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
