"""The supervisor: one process per node, the faults of lab.ports.fault_vocabulary's vocabulary, and the control API
(docs/control-api.md, lab.processes.control_api) that the CLI, the dashboard and the scenario driver use.

`Supervisor` holds the cluster's state; its jobs are mixins, one module each: lifecycle (the node processes),
faults (nodes, disks, links, settings), routing (client writes and reads), observation (state and events).
In-process: `Supervisor(run_dir, nodes=3).start()` returns it with `.control_url`; `.stop()` ends the run.
As a daemon: `python -m lab.processes.daemon --dir RUN_DIR ...` (lab.processes.daemon.launch starts it).
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading
from pathlib import Path

from lab.ports.fault_vocabulary import check_delay
from lab.core.reasons import because
from lab.core.config import FSYNC_POLICIES, PRE_VOTE, TIMING, TRUNCATION_STRATEGIES, check_choice
from lab.core.config import node_names as _node_names
from lab.core.guard import DEFAULT_LIMIT
from lab.ports import codec
from lab.ports.trace import TraceFile
from lab.processes import control_api
from lab.processes.errors import BadRequest, NotFound, SupervisorError
from lab.processes.supervisor_faults import Faults
from lab.processes.lifecycle import Lifecycle, NodeProc
from lab.processes.observation import Observation
from lab.processes.routing import NodeClients, Routing

__all__ = ["Supervisor", "SupervisorError", "NotFound", "BadRequest", "node_names"]


def node_names(count: int) -> list[str]:
    try:
        return _node_names(count)
    except ValueError as exc:
        raise BadRequest(because(exc)) from None



class Supervisor(Lifecycle, Faults, Routing, Observation):
    """A cluster of node processes on this machine, and its control API."""

    def __init__(
        self,
        run_dir: str | os.PathLike,
        *,
        nodes: int = 3,
        impl: str = "solutions",
        fsync: str | dict[str, str] = "always",
        truncation: str = "generation",
        delay_ms: float = 0,
        seed: int = 0,
        host: str = "127.0.0.1",
        control_port: int = 0,
        tick_ms: float = TIMING.tick_ms,
        election_ticks: int = TIMING.election_ticks,
        heartbeat_ticks: int = TIMING.heartbeat_ticks,
        write_timeout_ticks: int = TIMING.write_timeout_ticks,
        writeback_ms: float = 500.0,
        segment_bytes: int | None = None,
        pre_vote: bool = PRE_VOTE,
        hold_ticks: bool = False,
        max_frame: int = codec.MAX_FRAME,
        meta: dict | None = None,
        fresh: bool = False,
        cluster_file: bool = True,
        limit: float = DEFAULT_LIMIT,
    ):
        self.run_dir = Path(run_dir).resolve()
        self.names = node_names(nodes)
        policies = fsync if isinstance(fsync, dict) else {n: fsync for n in self.names}
        try:
            check_choice("truncation", truncation, TRUNCATION_STRATEGIES)
            for policy in policies.values():
                check_choice("fsync", policy, FSYNC_POLICIES)
            delay_ms = check_delay(delay_ms)
        except ValueError as exc:
            raise BadRequest(because(exc)) from None
        self.segment_bytes = segment_bytes
        self.pre_vote = pre_vote
        self.settings = {"delay_ms": float(delay_ms), "fsync": {n: policies.get(n, "always") for n in self.names},
                         "truncation": truncation, "impl": impl, "writeback_ms": float(writeback_ms),
                         "hold_ticks": hold_ticks, "limit": float(limit)}
        self.seed = seed
        self.host = host
        self.control_port = control_port
        self.timing = {"tick_ms": tick_ms, "election_ticks": election_ticks, "heartbeat_ticks": heartbeat_ticks,
                       "write_timeout_ticks": write_timeout_ticks}
        self.max_frame = max_frame
        self.meta = dict(meta or {})
        self.fresh = fresh
        self.use_cluster_file = cluster_file
        self.nodes = {n: NodeProc(n, self.run_dir / "data" / n, self.settings["fsync"][n]) for n in self.names}
        self.cuts: set[tuple[str, str]] = set()
        self.link_delays: dict[tuple[str, str], float] = {}
        self.drop_rate = 0.0
        self.link_drops: dict[tuple[str, str], float] = {}
        self.full_disks: set[str] = set()  # storage fault disk-full: on until disk-ok, also across restarts
        self._unwritable = ""  # why the cluster's trace could not be written last time ("" once it could)
        self.lock = threading.RLock()
        self._reap_lock = threading.Lock()
        self._trace_lock = threading.Lock()
        self._events_lock = threading.Lock()
        self._events: list[bytes] = []  # each event's JSON text, as read
        self._events_dropped = 0  # events numbered before the first one still kept
        self._tail: dict[Path, list] = {}  # each trace file, open, and its unfinished last line
        self._listed = float("-inf")  # when the run directory was last listed for trace files
        self._requests = itertools.count(1)
        self._request_prefix = os.urandom(3).hex()
        self.secret = secrets.token_hex(32).encode()  # what peers prove they know (lab.ports.tcp)
        self.api_token = secrets.token_hex(16)  # what a control API request that changes anything must carry
        self._leader_hint: str | None = None
        self.clients = NodeClients(host, max_frame)  # client connections kept per node (routing)
        self._writer: TraceFile | None = None
        self._server = None
        self._stopped = threading.Event()
        self._started = False
        self.start_time = 0.0
        self.control_url = ""

    def _serve(self) -> None:
        self._server = control_api.serve(self, self.control_port)
        self.control_url = f"http://127.0.0.1:{self._server.server_address[1]}"
