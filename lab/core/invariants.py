"""The safety properties the lab teaches, checked over trace events and a cluster status.

Used by the property tests, the scenario runner (`expect safety`) and `hwm-lab exercise check`.
"""

from __future__ import annotations

from lab.core.messages import digest
from lab.core.events import BECAME_LEADER, HWM_CHANGED, READ_SERVED, TRUNCATED


def safety_violations(events: list[dict], status: dict | None = None) -> list[str]:
    """Every broken safety rule, in words. Empty when all hold."""
    problems: list[str] = []
    committed: dict[int, tuple[int, str, str]] = {}  # index -> (generation, digest, who committed it first)
    leaders: dict[int, str] = {}
    for event in events:
        kind = event["type"]
        if kind == HWM_CHANGED:
            for index, generation, entry_digest in event["committed"]:
                known = committed.setdefault(index, (generation, entry_digest, event["node"]))
                if known[:2] != (generation, entry_digest):
                    problems.append(
                        f"committed entry at index {index} changed: {known[2]} committed generation {known[0]} "
                        f"({known[1]}), {event['node']} later committed generation {generation} ({entry_digest})")
        elif kind == BECAME_LEADER:
            other = leaders.setdefault(event["generation"], event["node"])
            if other != event["node"]:
                problems.append(f"two leaders in generation {event['generation']}: {other} and {event['node']}")
        elif kind == READ_SERVED and event["index"] > event["hwm"]:
            problems.append(f"{event['node']} served index {event['index']} above its high-water mark {event['hwm']}")
        elif kind == TRUNCATED:
            for index, generation, entry_digest in event["removed"]:
                if committed.get(index, (None, None))[:2] == (generation, entry_digest):
                    problems.append(f"{event['node']} truncated committed index {index} (generation {generation})")
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
                problems.append(f"{node['id']} holds generation {generation} at committed index {index}, "
                                f"committed as generation {known[0]}")
    for a in live:
        for b in live:
            if a["id"] < b["id"]:
                upto = min(a["hwm"], b["hwm"])
                for x, y in zip(a["log"][:upto], b["log"][:upto]):
                    if x != y:
                        problems.append(f"{a['id']} and {b['id']} disagree at index {x[0]} below both "
                                        f"high-water marks ({a['hwm']}, {b['hwm']})")
                        break
    return problems


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
