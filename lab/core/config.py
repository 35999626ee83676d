"""The lab's vocabulary and defaults, declared once: fsync policies, truncation strategies, node names, timing.

The simulator, the node processes, the supervisor, the CLI and the dashboard all take them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.reasons import CLUSTER_SIZE, Reason

# What `append` promises when it returns (lab/ports/wal.py says how each is kept).
FSYNC_POLICIES = ("always", "batch", "never")

# What a restarted node does with the entries above its high-water mark (docs/scenarios.md, K1 and K2).
TRUNCATION_STRATEGIES = ("generation", "high-water-mark", "leader-epoch")

MAX_NODES = 7

# Pre-vote (Raft thesis 9.6): a node whose election timer fires first asks whether it could win, so a node that was
# cut off does not raise its generation and depose a working leader when it comes back.
PRE_VOTE = True


def node_names(count: int) -> list[str]:
    """The names of a cluster of `count` nodes: A, B, C, ..."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_NODES:
        raise ValueError(Reason(CLUSTER_SIZE, most=MAX_NODES, count=count))  # said in the reader's language
    return [chr(ord("A") + i) for i in range(count)]


def check_choice(what: str, value, choices: tuple[str, ...]) -> str:
    """`value` if it is one of `choices`; else a ValueError that names them."""
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}: {what} must be one of {', '.join(choices)}")
    return value


@dataclass(frozen=True)
class Timing:
    """The clock, in ticks: the replica counts ticks; a node process turns one tick into `tick_ms` of wall time
    and the simulator into one step of simulated time (`tick_ms` of trace time)."""

    tick_ms: float = 10.0
    election_ticks: int = 30  # a follower that hears no leader for election_ticks..2*election_ticks campaigns
    heartbeat_ticks: int = 5  # a leader sends an empty replication request this often
    write_timeout_ticks: int = 300  # a client write not acknowledged within this is refused with TIMEOUT
    max_batch: int = 1024  # entries per replication request


TIMING = Timing()

# Paces: "normal" elects a leader in a few hundred milliseconds; "classroom" stretches every tick tenfold, so that
# an election timer runs for 3 to 6 seconds and a room can watch the followers' timers fill (heartbeats every
# 0.5 s). Messages travel at the network's speed either way; only timers slow down.
PACES = {"normal": TIMING, "classroom": Timing(tick_ms=100.0)}


def pace_timing(name: str) -> Timing:
    """The timing of a pace ("normal" or "classroom")."""
    return PACES[check_choice("pace", name, tuple(PACES))]


def wait_seconds(timing: Timing, base: float = 10.0) -> float:
    """How long a scenario's `wait` may take under `timing`: `base` at the normal pace, as much longer as its
    ticks are."""
    return base * max(1.0, timing.tick_ms / TIMING.tick_ms)
