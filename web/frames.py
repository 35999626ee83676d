"""One builder of dashboard frames (a live delta, a live snapshot, a replay's snapshot), said in a page's language."""

from __future__ import annotations

import time
from collections import Counter

from lab import i18n
from lab.core.reasons import reason_from_record
from lab.i18n import localize

PAYLOAD_CHARS = 16
SEQUENCE_EVENTS = 1500  # the sequence view of a replay draws at most this many events before its cursor
LOG_WINDOW = 48  # newest entries per node sent to a page
RECENT = 60  # events a replay's frame carries before its position


def frame(kind: str, seq: int, *, sent: float, nodes: list[dict], cluster: dict, clocks: dict, events: list[dict],
          events_next: int, skipped: Counter | None = None, gone=(), rate: float = 0, **more) -> dict:
    """A frame: a snapshot (every node; `base` None) or a delta on the frame before it (only the nodes that
    changed, and those `gone`), with the new events and what was left out of them, counted by type."""
    skipped = skipped or Counter()
    return {"kind": kind, "seq": seq, "base": None if kind == "snapshot" else seq - 1, "sent": sent, **more,
            "nodes": nodes, "gone": list(gone), "cluster": cluster, "clocks": clocks, "events": events,
            "skipped": sum(skipped.values()), "skipped_by_type": dict(skipped), "events_next": events_next,
            "rate": rate}


def shape_node(node: dict, log_window: int) -> dict:
    """A node as the page draws it: the newest `log_window` entries, payloads cut short."""
    log = node.get("log") or []
    log = log[-log_window:] if log_window else log
    cells = [[e[0], e[1], e[2] if len(str(e[2])) <= PAYLOAD_CHARS else str(e[2])[:PAYLOAD_CHARS - 1] + "…"]
             for e in log]
    shaped = {k: node.get(k) for k in ("id", "state", "role", "generation", "leader", "log_end", "hwm", "pid")}
    shaped["match_index"] = dict(node.get("match_index") or {})
    shaped["next_index"] = dict(node.get("next_index") or {})
    shaped["log"] = cells
    shaped["log_start"] = cells[0][0] if cells else (node.get("log_end") or 0) + 1
    if shaped["log_end"] is None:
        shaped["log_end"] = log[-1][0] if log else 0
    if shaped["state"] is None:
        shaped["state"] = "running"
    # The supervisor could not ask a running node (busy, or its clock held): these figures are its last known.
    shaped["stale"] = shaped["state"] == "running" and bool(node.get("unresponsive") or node.get("stale"))
    if shaped["state"] == "exited" and node.get("exit_reason"):
        reason = node["exit_reason"]  # why it stopped on its own: "fsync failed: ...", a sentence
        shaped["exit_reason"] = reason_from_record(node.get("exit_because")) or reason
    if node.get("disk_full"):
        shaped["disk_full"] = True  # the storage fault disk-full is on
    return shaped


def election_clock(node: dict) -> dict | None:
    """A running node's election clock (ticks elapsed of its timeout), sent apart from the node: it changes
    on every poll, and a frame should not resend a whole node for it."""
    if node.get("state", "running") != "running" or node.get("election_timeout") is None:
        return None
    return {"elapsed": node.get("election_elapsed"), "timeout": node.get("election_timeout"),
            "tick_ms": node.get("tick_ms"), "held": bool(node.get("hold_ticks"))}


def shown_links(links: list[dict], delay_ms) -> list[dict]:
    """The links a page draws: the cut ones, and those slower or faster than the cluster's slow motion."""
    delay = delay_ms or 0
    return [l for l in links if l.get("cut") or ("delay_ms" in l and (l["delay_ms"] or 0) != delay)]


def cut_off(node_id: str, links: list[dict], ids: list[str]) -> bool:
    """A node is cut off when every link to or from it is cut."""
    others = [n for n in ids if n != node_id]
    if not others:
        return False
    cut = {(l["src"], l["dst"]) for l in links if l.get("cut")}
    return all((node_id, o) in cut and (o, node_id) in cut for o in others)


def shaped_nodes(nodes: list[dict], links: list[dict], log_window: int) -> list[dict]:
    """The nodes as the page draws them, a running node that every link cut off shown as "cut off"."""
    ids = [n["id"] for n in nodes]
    shaped = [shape_node(node, log_window) for node in nodes]
    for node in shaped:
        if node["state"] == "running" and cut_off(node["id"], links, ids):
            node["state"] = "cut off"
    return shaped


def replay_frame(replay, position: int | None = None, at_time: float | None = None, *, log_window: int,
                 recent: int = RECENT) -> dict:
    """A replay's snapshot at `position` (or at the run's time `at_time`), with its `recent` events before it."""
    if at_time is not None:
        position = replay.position_at_time(float(at_time))
    position = max(0, min(int(position or 0), len(replay)))
    events = [replay.event(n) for n in range(max(1, position - recent + 1), position + 1)]
    return replay_snapshot(replay, position, replay.fold_at(position).status(), events, log_window=log_window)


def replay_snapshot(replay, position: int, status: dict, events: list[dict], *, log_window: int,
                    skipped: Counter | None = None) -> dict:
    """A replay's snapshot at `position` from the cluster's status there (web.fold), with the events it shows and
    those it only counts: what the server sends a page, and what a replay in one file holds (web.onefile)."""
    ids = [n["id"] for n in status["nodes"]]
    nodes = shaped_nodes(status["nodes"], status["links"], log_window)
    snapshot = frame("snapshot", position, sent=time.time(), nodes=nodes,
                     cluster={"leader": status["leader"], "settings": status["settings"], "links": status["links"],
                              "ids": ids, "connected": True, "error": None},
                     clocks={}, events=events, events_next=position + 1, skipped=skipped, position=position,
                     total=len(replay), time=status["time"], play=replay.play_time(position), duration=replay.duration)
    under_way = [(k, step) for k, step in enumerate(replay.steps(), start=1) if step["start"] <= position]
    if under_way:  # the step the cursor is in, and its narration: a page is told a step's words once it plays
        snapshot["step_now"] = {"k": under_way[-1][0], "text": under_way[-1][1]["text"]}
    return snapshot


def localize_tree(value, lang: str):
    """A payload with every Text in it said in `lang` (dicts and lists are copied; English is sent as it is)."""
    if lang == i18n.SOURCE:
        return value
    if isinstance(value, i18n.SPOKEN):
        return localize(value, lang)
    if isinstance(value, dict):
        return {k: localize_tree(v, lang) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [localize_tree(v, lang) for v in value]
    return value


def localized_frame(frame: dict, lang: str) -> dict:
    """A frame in `lang`: only its events' words and the cluster's error are sentences (the nodes are data)."""
    if lang == i18n.SOURCE:
        return frame
    cluster = frame.get("cluster") or {}
    if cluster.get("error"):
        cluster = {**cluster, "error": localize(cluster["error"], lang)}
    if any(n.get("exit_reason") for n in frame.get("nodes") or []):  # a node's reason for stopping is a sentence
        frame = {**frame, "nodes": [{**n, "exit_reason": localize(n["exit_reason"], lang)}
                                    if n.get("exit_reason") else n for n in frame["nodes"]]}
    return {**frame, "cluster": cluster,
            "events": [{**e, "text": localize(e["text"], lang)} if "text" in e else e for e in frame["events"]]}
