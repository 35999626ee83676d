"""The choices of the explorer's world in a state: which message to deliver, drop or duplicate, which node to elect,
crash, restart or pause, which link to cut, which client request to make; and the bounds that keep a
breadth-first search finite."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bounds:
    """What the choices may do, so that a breadth-first search ends: writes, generations, kills, messages per link."""

    writes: int = 2
    generation: int = 3
    kills: int = 1
    per_link: int = 2
    kinds: frozenset = frozenset({"deliver", "drop", "duplicate", "campaign", "heartbeat", "write", "read", "kill",
                                  "restart", "sync"})


WALK_KINDS = frozenset({"deliver", "drop", "duplicate", "campaign", "heartbeat", "write", "read", "kill",
                        "restart", "pause", "resume", "cut", "heal", "sync"})


def enumerate_choices(world, bounds: Bounds) -> list[tuple[str, ...]]:
    """Every choice in the world's state, in a fixed order: messages first (deliver, drop, duplicate, by link and
    type), then each node's (sync, campaign, heartbeat, write, read, kill, pause, resume, restart), then the links."""
    kinds, out = bounds.kinds, []
    groups: dict[tuple[str, str, str], list] = {}
    for src, dst, message in world.inflight:
        groups.setdefault((src, dst, type(message).__name__), []).append(message)
    per_link: dict[tuple[str, str], int] = {}
    for (src, dst, kind), messages in groups.items():
        per_link[(src, dst)] = per_link.get((src, dst), 0) + len(messages)
        seen = []
        for k, message in enumerate(messages):
            if message in seen:
                continue
            seen.append(message)
            link, tail = f"{src}->{dst}", (str(k),) if k else ()
            if "deliver" in kinds and world.states[dst] == "running":
                out.append(("deliver", link, kind, *tail))
            if "drop" in kinds:
                out.append(("drop", link, kind, *tail))
            if "duplicate" in kinds and len(messages) < bounds.per_link:
                out.append(("duplicate", link, kind, *tail))
    full = {src for (src, _), count in per_link.items() if count >= bounds.per_link}
    for name in world.names:
        state, replica = world.states[name], world.replicas[name]
        if state == "running":
            if "sync" in kinds and world.drivers[name].sync_pending:  # a leader's fsync, under way since it sent
                out.append(("sync", name))
            if "campaign" in kinds and replica.generation < bounds.generation:
                out.append(("campaign", name))
            if "heartbeat" in kinds and replica.role == "leader" and name not in full:
                out.append(("heartbeat", name))
            if "write" in kinds and replica.role == "leader" and world.writes < bounds.writes:
                out.append(("write", name))
            if "read" in kinds:  # every index, and one past the log's end: a gate is judged at each
                for index in range(1, replica.log.log_end + 2):
                    out.append(("read", str(index), "at", name))
            if "kill" in kinds and world.kills < bounds.kills:
                out.append(("kill", name))
                if world.logs[name].synced < world.logs[name].log_end:
                    out.append(("kill", name, "lose-unsynced"))
            if "pause" in kinds:
                out.append(("pause", name))
        elif state == "paused" and "resume" in kinds:
            out.append(("resume", name))
        elif state in ("killed", "exited") and "restart" in kinds and state == "killed":
            out.append(("restart", name))
    if "cut" in kinds or "heal" in kinds:
        for a in world.names:
            for b in world.names:
                if a < b:
                    cut = (a, b) in world.cuts or (b, a) in world.cuts
                    if "cut" in kinds and not cut:
                        out.extend([("cut", f"{a}<->{b}"), ("cut", f"{a}->{b}"), ("cut", f"{b}->{a}")])
                    if "heal" in kinds and cut:
                        out.append(("heal", f"{a}<->{b}"))
    return out
