"""The supervisor: starts one process per node, injects faults (the vocabulary of lab.cluster: kill, pause, cut
links, delay, drop) and serves the control API (docs/control-api.md, lab.processes.control_api) that the CLI, the
dashboard and the scenario driver use.

In-process: `Supervisor(run_dir, nodes=3).start()` returns it with `.control_url`; `.stop()` ends the run.
As a daemon: `python -m lab.processes.supervisor --dir RUN_DIR ...` (what `hwm-lab up` starts in the background).
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import json
import logging
import os
import shutil
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from lab.cluster import check_delay, check_rate
from lab.core import impl as impl_module
from lab.core.guard import DEFAULT_LIMIT, Fault
from lab.core.config import FSYNC_POLICIES, PRE_VOTE, TIMING, TRUNCATION_STRATEGIES, check_choice
from lab.core.config import node_names as _node_names
from lab.core.replica import timeout_error
from lab.core.messages import NODE_DOWN, NOT_LEADER, TIMEOUT, UNREACHABLE, Event, digest
from lab.ports import codec
from lab.ports.state import FileState
from lab.ports.faults import EXIT_KINDS
from lab.ports.trace import CLUSTER, TraceFile, record, write_meta
from lab.ports.wal import WriteAheadLog
from lab.processes import control_api
from lab.processes.client import CLUSTER_FILE, NodeClient, NodeError
from lab.processes.errors import BadRequest, NotFound, SupervisorError
from lab.processes.node import FAULT_FILE

__all__ = ["Supervisor", "SupervisorError", "NotFound", "BadRequest", "node_names"]

log = logging.getLogger("lab.processes.supervisor")

NETWORK_FILE = "network.json"
SECRET_FILE = "secret"  # the cluster's secret, mode 0600: the nodes prove to each other that they know it
READY_SECONDS = 20.0  # a node process must be listening within this (python start-up on a busy machine)
STOP_SECONDS = 5.0
EVENTS_KEPT = 200_000  # /api/events serves this many of the newest events (numbering never restarts)
_REPO_ROOT = str(Path(__file__).resolve().parents[2])


def node_names(count: int) -> list[str]:
    try:
        return _node_names(count)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


@dataclass
class NodeProc:
    id: str
    data_dir: Path
    fsync: str
    state: str = "stopped"  # running | paused | killed | exited | stopped
    proc: subprocess.Popen | None = None
    pid: int | None = None
    port: int | None = None
    boot: int = 0
    exit_code: int | None = None
    exit_reason: str = ""
    fault: dict | None = None  # the student's code stopped this process: the Fault's fields
    last: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    client: NodeClient | None = None


class Supervisor:
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
            raise BadRequest(str(exc)) from None
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
        self._events: list[dict] = []
        self._events_dropped = 0  # events numbered before the first one still kept
        self._tail: dict[Path, int] = {}
        self._requests = itertools.count(1)
        self._request_prefix = os.urandom(3).hex()
        self.secret = secrets.token_hex(32).encode()  # what peers prove they know (lab.ports.tcp)
        self.api_token = secrets.token_hex(16)  # what a control API request that changes anything must carry
        self._leader_hint: str | None = None
        self._writer: TraceFile | None = None
        self._server = None
        self._stopped = threading.Event()
        self._started = False
        self.start_time = 0.0
        self.control_url = ""

    # ---- life cycle ------------------------------------------------------------------------------------------

    def start(self) -> "Supervisor":
        try:
            impl_module.load(self.settings["impl"])  # a clear error here rather than N dead node processes
        except impl_module.ImplError as exc:
            raise BadRequest(str(exc)) from None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.fresh:
            self._wipe()
        meta_path = self.run_dir / "trace.json"
        previous = _read_json(meta_path)
        if previous:
            if list(previous.get("nodes", [])) != self.names:
                raise SupervisorError(f"{self.run_dir} holds a run of nodes {','.join(previous.get('nodes', []))}, "
                                      f"not {','.join(self.names)}: start fresh (--fresh wipes it) or choose "
                                      f"another directory")
            self.start_time = _parse_time(previous.get("started")) or time.time()
        else:
            self.start_time = time.time()
        self.meta = {
            "run": self.meta.get("run") or (previous or {}).get("run") or self.run_dir.name, "source": "real",
            "scenario": None, "seed": self.seed, "nodes": self.names, "truncation": self.settings["truncation"],
            "fsync": self.settings["fsync"], "impl": self.settings["impl"], "liveness_bound": 5.0,
            **self.meta, "started": _iso(self.start_time),
        }
        write_meta(self.run_dir, **self.meta)
        _write_private(self.run_dir / SECRET_FILE, self.secret + b"\n")
        self._writer = TraceFile(self.run_dir, CLUSTER)
        self._started = True
        atexit.register(self.kill_leftovers)
        self.cluster_event("cluster_started", nodes=self.names, truncation=self.settings["truncation"],
                           fsync=self.settings["fsync"], impl=self.settings["impl"])
        self._write_network()
        try:
            for name in self.names:
                self._spawn(self.nodes[name])
            for name in self.names:
                self._await_ready(self.nodes[name])
            self._publish_network()  # every node knows every address before the first request comes in
            self._serve()
        except BaseException:
            self.stop()
            raise
        if self.use_cluster_file:
            info = {"control_url": self.control_url, "token": self.api_token, "pid": os.getpid(),
                    "run_dir": str(self.run_dir), "nodes": self.names, "started": self.meta["started"]}
            _write_private(self.run_dir / CLUSTER_FILE, (json.dumps(info, indent=1) + "\n").encode())
        return self

    def _wipe(self) -> None:
        for pattern in ("events-*.jsonl", "trace.json", "verdict.json", NETWORK_FILE, CLUSTER_FILE):
            for path in self.run_dir.glob(pattern):
                path.unlink()
        shutil.rmtree(self.run_dir / "data", ignore_errors=True)

    def stop(self, extra_meta: dict | None = None) -> None:
        """Stop every node (each writes a final log snapshot), then the API; data and traces stay."""
        with self.lock:
            if self._stopped.is_set() or not self._started:
                self._stopped.set()
                return
            procs = []
            for node in self.nodes.values():
                if node.proc is None or node.state not in ("running", "paused", "starting"):
                    continue
                try:
                    if node.state == "paused":
                        os.kill(node.pid, signal.SIGCONT)
                    node.proc.send_signal(signal.SIGTERM)
                    procs.append(node)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + STOP_SECONDS
            for node in procs:
                try:
                    node.proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    log.warning("node %s did not stop within %ss; killing it", node.id, STOP_SECONDS)
                    node.proc.kill()
                    node.proc.wait()
                node.state = "stopped"
                self._close_client(node)
            self.cluster_event("cluster_stopped")
            self.meta.update(extra_meta or {})
            self.meta["stopped"] = _iso(time.time())
            try:
                with self._trace_lock:
                    self._writer.close()
                write_meta(self.run_dir, **self.meta)
            except OSError as exc:  # a full disk: the nodes are stopped all the same
                log.warning("stopping: could not write the trace's end or its meta: %s", exc)
            if self.use_cluster_file:
                info = _read_json(self.run_dir / CLUSTER_FILE)
                if info and info.get("pid") == os.getpid():
                    (self.run_dir / CLUSTER_FILE).unlink(missing_ok=True)
            self._stopped.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def kill_leftovers(self) -> None:
        """Never leave node processes behind: after `stop`, even a failed one, or when the caller forgot to stop."""
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is None:
                try:
                    node.proc.kill()
                    node.proc.wait(2)
                except (OSError, subprocess.TimeoutExpired):
                    pass

    def wait_stopped(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def pids(self) -> list[int]:
        return [n.pid for n in self.nodes.values() if n.pid and n.proc is not None and n.proc.poll() is None]

    def wait_for_leader(self, timeout: float = 10.0) -> str | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leader = self.state(log=0)["leader"]
            if leader:
                return leader
            time.sleep(0.05)
        return None

    # ---- node processes --------------------------------------------------------------------------------------

    def _spawn(self, node: NodeProc, repair: bool = False) -> None:
        node.data_dir.mkdir(parents=True, exist_ok=True)
        ready = node.data_dir / "node.json"
        ready.unlink(missing_ok=True)
        (node.data_dir / FAULT_FILE).unlink(missing_ok=True)
        node.fault = None
        node.fsync = self.settings["fsync"][node.id]
        command = [
            sys.executable, "-m", "lab.processes.node", "--id", node.id, "--nodes", ",".join(self.names),
            "--data-dir", str(node.data_dir), "--run-dir", str(self.run_dir), "--host", self.host, "--port", "0",
            "--network", str(self.run_dir / NETWORK_FILE), "--impl", self.settings["impl"],
            "--fsync", node.fsync, "--truncation", self.settings["truncation"], "--seed", str(self.seed),
            "--start-time", repr(self.start_time), "--tick-ms", str(self.timing["tick_ms"]),
            "--election-ticks", str(self.timing["election_ticks"]),
            "--heartbeat-ticks", str(self.timing["heartbeat_ticks"]),
            "--write-timeout-ticks", str(self.timing["write_timeout_ticks"]),
            "--writeback-ms", str(self.settings["writeback_ms"]), "--max-frame", str(self.max_frame),
            "--parent-pid", str(os.getpid()), "--ready-file", str(ready),
            "--secret-file", str(self.run_dir / SECRET_FILE), "--limit", str(self.settings["limit"]),
        ]
        if self.settings["hold_ticks"]:
            command.append("--hold-ticks")
        if self.segment_bytes:
            command += ["--segment-bytes", str(self.segment_bytes)]
        if not self.pre_vote:
            command.append("--no-pre-vote")
        if repair:
            command.append("--repair")
        if node.id in self.full_disks:
            command.append("--disk-full")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_REPO_ROOT, env.get("PYTHONPATH")]))
        env["PYTHONUNBUFFERED"] = "1"
        with open(node.data_dir / "node.log", "ab") as out:
            node.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         env=env, close_fds=True)
        node.pid = node.proc.pid
        node.port = None
        node.exit_code = None
        node.exit_reason = ""
        node.state = "starting"

    def _await_ready(self, node: NodeProc) -> None:
        ready = node.data_dir / "node.json"
        deadline = time.monotonic() + READY_SECONDS
        while True:
            info = _read_json(ready)
            if info and info.get("pid") == node.pid:
                node.port, node.boot, node.state = int(info["port"]), int(info["boot"]), "running"
                return
            code = node.proc.poll()
            if code is not None:
                node.state, node.exit_code = "exited", code
                node.exit_reason = _exit_reason(node.data_dir, code)
                self.cluster_event("node_exited", target=node.id, code=code, reason=node.exit_reason)
                raise SupervisorError(f"node {node.id} exited with code {code} while starting: "
                                      f"{_tail(node.data_dir / 'node.log')}")
            if time.monotonic() > deadline:
                node.proc.kill()
                node.proc.wait()
                node.state = "exited"
                raise SupervisorError(f"node {node.id} was not listening within {READY_SECONDS:g}s: "
                                      f"{_tail(node.data_dir / 'node.log')}")
            time.sleep(0.01)

    def _node(self, name: str) -> NodeProc:
        node = self.nodes.get(name)
        if node is None:
            raise NotFound(f"no node {name!r} in this cluster (nodes: {', '.join(self.names)})")
        self._reap(node)
        return node

    def _reap(self, node: NodeProc) -> None:
        if node.state in ("running", "paused", "starting") and node.proc is not None:
            with self._reap_lock:
                code = node.proc.poll()
                if code is None or node.state not in ("running", "paused", "starting"):
                    return
                node.state, node.exit_code = "exited", code
                node.exit_reason = _exit_reason(node.data_dir, code)
            self._close_client(node)
            self._mark_dead(node)
            node.fault = _read_fault(node)
            if node.fault:  # the student's code stopped it: say which call, not the log's last line
                node.exit_reason = Fault(**node.fault).sentence()
            extra = {"fault": node.fault} if node.fault else {}
            self.cluster_event("node_exited", target=node.id, code=code, reason=node.exit_reason, **extra)

    def _control(self, node: NodeProc, op: str, timeout: float = 2.0, **args) -> dict:
        """A control request over the node's persistent control connection."""
        with node.lock:
            if node.client is None:
                node.client = NodeClient(self.host, node.port, timeout=timeout, max_frame=self.max_frame,
                                         secret=self.secret)
            try:
                return node.client.control(op, timeout=timeout, **args)
            except (OSError, TimeoutError, codec.CodecError):
                node.client.close()
                node.client = None
                raise

    def _close_client(self, node: NodeProc) -> None:
        with node.lock:
            if node.client is not None:
                node.client.close()
                node.client = None

    def kill(self, name: str, *, lose_unsynced: bool = False) -> None:
        """SIGKILL. Without lose_unsynced the node first writes out its fsync-`never` buffer and its mark, so only
        the process dies (a crash); with it, what the node had not synced is lost too (a power cut)."""
        with self.lock:
            node = self._node(name)
            if node.state in ("killed", "exited", "stopped"):
                raise SupervisorError(f"node {name} is already {node.state}")
            if not lose_unsynced and node.state == "running":
                try:
                    self._control(node, "flush", timeout=2.0)
                except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                    log.warning("flush before killing %s failed: %s", name, exc)
            try:
                node.proc.send_signal(signal.SIGKILL)
            except ProcessLookupError:
                pass
            node.proc.wait()
            node.state, node.exit_code = "killed", node.proc.returncode
            self._close_client(node)
            self._mark_dead(node)
            self.cluster_event("node_killed", target=name, lose_unsynced=lose_unsynced, pid=node.pid)

    def _mark_dead(self, node: NodeProc) -> None:
        """A dead node's state is what it would recover from its disk (read once: a dead node's disk is still)."""
        node.last = {**node.last, **self._disk_status(node), "role": None, "leader": None, "match_index": {},
                     "next_index": {}}
        if self._leader_hint == node.id:
            self._leader_hint = None

    def _disk_status(self, node: NodeProc) -> dict:
        try:
            wal = WriteAheadLog(node.data_dir / "wal", fsync="never", impl=impl_module.load(self.settings["impl"]))
            try:
                entries = [[e.index, e.generation, e.payload] for e in wal.entries()]
            finally:
                wal.abandon()
            state = FileState(node.data_dir)
            generation = state.load().generation
            hwm = min(state.load_high_water_mark(), len(entries))
        except Exception as exc:  # a status must not fail because one disk is odd; say so instead
            log.warning("reading the disk of %s: %s", node.id, exc)
            return {"disk_error": str(exc)}
        return {"generation": generation, "log_end": len(entries), "hwm": hwm, "log": entries, "log_start": 1,
                "from_disk": True}

    def restart(self, name: str, *, repair: bool = False) -> None:
        """A new process on the same data directory (a running node is killed first, as in the simulator). With
        repair, the node starts even on a log damaged in the middle: it keeps the valid prefix and catches up."""
        with self.lock:
            node = self._node(name)
            if node.state in ("running", "paused"):
                self.kill(name, lose_unsynced=False)
            self.cluster_event("node_restarted", target=name, **({"repair": True} if repair else {}))
            self._spawn(node, repair=repair)
            try:
                self._await_ready(node)
            finally:
                self._publish_network()

    def pause(self, name: str) -> None:
        with self.lock:
            node = self._node(name)
            if node.state != "running":
                raise SupervisorError(f"node {name} is {node.state}, not running: only a running node can pause")
            try:  # what it was when it froze: a paused node answers nothing
                node.last = self._control(node, "status", timeout=2.0, log="all")
            except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                log.warning("status of %s before pausing: %s", name, exc)
            os.kill(node.pid, signal.SIGSTOP)
            node.state = "paused"
            self._close_client(node)
            self.cluster_event("node_paused", target=name)

    def resume(self, name: str) -> None:
        with self.lock:
            node = self._node(name)
            if node.state != "paused":
                raise SupervisorError(f"node {name} is {node.state}, not paused")
            os.kill(node.pid, signal.SIGCONT)
            node.state = "running"
            self.cluster_event("node_resumed", target=name)

    def campaign(self, name: str) -> None:
        node = self._running(name)
        self._control(node, "campaign")

    def flush(self, name: str) -> dict:
        node = self._running(name)
        return self._control(node, "flush")

    # ---- storage faults (lab.cluster: disk-full, disk-ok, fsync-fail) ---------------------------------------

    def disk_full(self, name: str) -> None:
        """Every write of the node fails with ENOSPC, until disk_ok (a restarted node starts on a full disk)."""
        self._disk(name, "disk_full", full=True)

    def disk_ok(self, name: str) -> None:
        self._disk(name, "disk_ok", full=False)

    def fsync_fail(self, name: str) -> None:
        """The node's next fsync fails with EIO, and what it was to sync is dropped, as a kernel may."""
        with self.lock:
            node = self._running(name)
            try:
                self._control(node, "disk", fsync_fail=True)
            except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:  # it stopped meanwhile
                self._reap(node)
                raise SupervisorError(f"node {name} did not take the fault: {exc}") from None
            self.cluster_event("fsync_fail", target=name)

    def _disk(self, name: str, event: str, *, full: bool) -> None:
        with self.lock:
            node = self._node(name)
            if node.state == "paused":
                raise SupervisorError(f"node {name} is paused: resume it first (a paused node takes no requests)")
            (self.full_disks.add if full else self.full_disks.discard)(name)
            if node.state == "running":
                try:
                    self._control(node, "disk", full=full)
                except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                    log.warning("%s on %s: %s (it applies when the node restarts)", event, name, exc)
            self.cluster_event(event, target=name)

    def hold_ticks(self, hold: bool) -> None:
        with self.lock:
            self.settings["hold_ticks"] = bool(hold)
            self.cluster_event("clocks_held" if hold else "clocks_released")
            for node in self.nodes.values():
                self._reap(node)
                if node.state == "running":
                    try:
                        self._control(node, "ticks", hold=bool(hold))
                    except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                        log.warning("ticks on %s: %s", node.id, exc)

    def snapshot(self) -> list[str]:
        done = []
        for node in self.nodes.values():
            self._reap(node)
            if node.state == "running":
                try:
                    self._control(node, "snapshot", timeout=10.0)
                    done.append(node.id)
                except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                    log.warning("snapshot of %s: %s", node.id, exc)
        return done

    def _running(self, name: str) -> NodeProc:
        node = self._node(name)
        if node.state != "running":
            raise SupervisorError(f"node {name} is {node.state}, not running")
        return node

    # ---- links and settings ----------------------------------------------------------------------------------

    def cut(self, src: str, dst: str, *, one_way: bool = False) -> None:
        with self.lock:
            self._node(src), self._node(dst)
            if src == dst:
                raise BadRequest("a link joins two different nodes")
            for a, b in [(src, dst)] if one_way else [(src, dst), (dst, src)]:
                if (a, b) not in self.cuts:
                    self.cuts.add((a, b))
                    self.cluster_event("link_cut", src=a, dst=b)
            self._publish_network()

    def isolate(self, name: str) -> None:
        with self.lock:
            self._node(name)
            for other in self.names:
                if other != name:
                    for a, b in ((name, other), (other, name)):
                        if (a, b) not in self.cuts:
                            self.cuts.add((a, b))
                            self.cluster_event("link_cut", src=a, dst=b)
            self._publish_network()

    def heal(self, src: str | None = None, dst: str | None = None, *, one_way: bool = False) -> None:
        with self.lock:
            if src is not None:
                self._node(src), self._node(dst)
            for a, b in sorted(self.cuts):
                if src is None or (a, b) == (src, dst) or (not one_way and (a, b) == (dst, src)):
                    self.cuts.discard((a, b))
                    self.cluster_event("link_healed", src=a, dst=b)
            self._publish_network()

    def delay(self, ms: float, src: str | None = None, dst: str | None = None) -> None:
        try:
            ms = check_delay(ms)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        with self.lock:
            if src is None and dst is None:
                self.settings["delay_ms"] = ms
                self.link_delays.clear()
                self.cluster_event("delay_set", ms=ms)
            else:
                if src is None or dst is None:
                    raise BadRequest("a per-link delay needs both src and dst")
                self._node(src), self._node(dst)
                self.link_delays[(src, dst)] = ms
                self.cluster_event("delay_set", ms=ms, src=src, dst=dst)
            self._publish_network()

    def drop(self, rate: float, src: str | None = None, dst: str | None = None) -> None:
        try:
            rate = check_rate(rate)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        with self.lock:
            if src is None and dst is None:
                self.drop_rate = rate
                self.link_drops.clear()
                self.cluster_event("drop_set", rate=rate)
            else:
                if src is None or dst is None:
                    raise BadRequest("a per-link drop rate needs both src and dst")
                self._node(src), self._node(dst)
                self.link_drops[(src, dst)] = rate
                self.cluster_event("drop_set", rate=rate, src=src, dst=dst)
            self._publish_network()

    def update_settings(self, body: dict) -> dict:
        with self.lock:
            unknown = set(body) - {"delay_ms", "fsync", "truncation", "writeback_ms"}
            if unknown:
                raise BadRequest(f"unknown settings {sorted(unknown)}; known: delay_ms, fsync, truncation, "
                                 f"writeback_ms")
            if "fsync" in body:
                fsync = body["fsync"]
                policies = fsync if isinstance(fsync, dict) else {n: fsync for n in self.names}
                for name, policy in policies.items():
                    self._node(name)
                    self._choice("fsync", policy, FSYNC_POLICIES)
                self.settings["fsync"].update(policies)
            if "truncation" in body:
                self._choice("truncation", body["truncation"], TRUNCATION_STRATEGIES)
                self.settings["truncation"] = body["truncation"]
            if "writeback_ms" in body:
                self.settings["writeback_ms"] = float(body["writeback_ms"])
            changed = {k: v for k, v in body.items() if k != "delay_ms"}
            if changed:
                self.cluster_event("settings_changed", **changed)
            if "delay_ms" in body:
                self.delay(body["delay_ms"])
            return self.public_settings()

    @staticmethod
    def _choice(what: str, value, choices: tuple[str, ...]) -> None:
        try:
            check_choice(what, value, choices)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None

    def public_settings(self) -> dict:
        fsync = self.settings["fsync"]
        same = len(set(fsync.values())) == 1
        return {**self.settings, "fsync": next(iter(fsync.values())) if same else dict(fsync)}

    def _write_network(self) -> None:
        try:
            self._write_network_file()
        except OSError as exc:
            raise SupervisorError(f"cannot write {NETWORK_FILE} (the nodes read their links there): "
                                  f"{exc.strerror or exc}") from exc

    def _write_network_file(self) -> None:
        network = {
            "peers": {n.id: [self.host, n.port] for n in self.nodes.values() if n.port},
            "cuts": sorted([list(c) for c in self.cuts]),
            "delay_ms": self.settings["delay_ms"],
            "link_delay_ms": {f"{a}>{b}": ms for (a, b), ms in self.link_delays.items()},
            "drop": self.drop_rate,
            "link_drop": {f"{a}>{b}": rate for (a, b), rate in self.link_drops.items()},
        }
        _write_json(self.run_dir / NETWORK_FILE, network)

    def _publish_network(self) -> None:
        """Write the network file, then make every running node read it now (paused ones read it on resume)."""
        self._write_network()
        for node in self.nodes.values():
            self._reap(node)
            if node.state == "running":
                try:
                    self._control(node, "network", timeout=2.0)
                except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                    log.warning("network update to %s: %s", node.id, exc)

    # ---- clients ---------------------------------------------------------------------------------------------

    def write(self, payload: str, node: str | None = None, timeout: float = 5.0, wait: bool = True) -> dict:
        if not isinstance(payload, str):
            raise BadRequest("payload must be a string")
        if node is not None:
            self._node(node)
        request = f"w{self._request_prefix}-{next(self._requests)}"
        self.cluster_event("client_write", payload=payload, digest=digest(payload), target=node, request=request)
        if not wait:
            threading.Thread(target=self._write, args=(payload, node, timeout, request), daemon=True).start()
            return {"ok": True, "pending": True, "request": request}
        return self._write(payload, node, timeout, request)

    def _write(self, payload: str, node: str | None, timeout: float, request: str) -> dict:
        deadline = time.monotonic() + timeout
        target = node or self._leader_hint or self._any_running()
        why = "no node is running"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return self._write_failed(request, TIMEOUT, f"timeout: the write was not acknowledged within "
                                                            f"{timeout:g}s ({why})")
            proc = self.nodes.get(target) if target else None
            if proc is None or proc.state != "running" or not proc.port:
                why = f"node {target} is {proc.state}" if proc else "no node is running"
                target = self._leader_hint if self._leader_hint != target else None
                target = target or self._any_running(exclude=proc.id if proc else None)
                time.sleep(min(0.05, max(0.0, remaining)))
                continue
            client = NodeClient(self.host, proc.port, timeout=remaining, max_frame=self.max_frame)
            try:
                answer = client.write(payload, request=request, timeout=remaining)
            except (TimeoutError, OSError, codec.CodecError) as exc:
                if not client.sent:  # never left: try elsewhere
                    why = f"node {target} is unreachable ({exc})"
                    target = self._any_running(exclude=target)
                    time.sleep(0.02)
                    continue
                if isinstance(exc, TimeoutError):
                    return self._write_failed(request, TIMEOUT, self._where_is(request, target, timeout))
                return self._write_failed(request, UNREACHABLE, f"connection lost: node {target} did not answer "
                                                                f"({exc}); the write may or may not be committed")
            finally:
                client.close()
            if answer.ok:
                self._leader_hint = target
                return {"ok": True, "index": answer.index, "generation": answer.generation, "node": target,
                        "hwm": answer.high_water_mark, "request": request}
            if answer.refusal == NOT_LEADER:
                why = answer.error
                if answer.leader and answer.leader != target:
                    target = answer.leader
                else:
                    time.sleep(0.05)  # an election is under way
                    target = self._find_leader() or self._any_running(exclude=target)
                continue
            if self._leader_hint == target:
                self._leader_hint = None
            return self._write_failed(request, answer.refusal, answer.error, index=answer.index, node=target,
                                      hwm=answer.high_water_mark, holders=list(answer.holders))

    def _where_is(self, request: str, target: str, timeout: float) -> str:
        """Why a write sent to `target` got no answer in time, from what the nodes know: where its index is."""
        appended = [e for e in self.events(0)[0] if e.get("type") == "leader_append" and e.get("request") == request]
        if not appended:
            return f"timeout: node {target} did not answer within {timeout:g}s; the write may or may not be committed"
        index = appended[-1]["index"]
        state = self.state(log=0)
        holders = [n["id"] for n in state["nodes"] if n.get("log_end", 0) >= index and n["state"] == "running"]
        hwm = max((n.get("hwm", 0) for n in state["nodes"] if n["id"] == appended[-1]["node"]), default=0)
        return timeout_error(index, holders, len(state["nodes"]), hwm, later=True)

    def _write_failed(self, request: str, refusal: str, error: str, **extra) -> dict:
        self.cluster_event("client_write_failed", request=request, reason=error)
        return {"ok": False, "refusal": refusal, "error": error, "request": request, **extra}

    def _any_running(self, exclude: str | None = None) -> str | None:
        running = [n.id for n in self.nodes.values() if n.state == "running" and n.id != exclude]
        return running[0] if running else None

    def _find_leader(self) -> str | None:
        return self.state(log=0)["leader"]

    def read(self, index: int, node: str | None = None) -> dict:
        if isinstance(index, bool) or not isinstance(index, int):
            raise BadRequest(f"index must be an integer, not {index!r}")
        target = node or self._leader_hint or self._find_leader() or self._any_running()
        if target is None:
            raise SupervisorError("no node is running")
        proc = self._node(target)
        self.cluster_event("client_read", index=index, target=target)
        if proc.state != "running":
            return {"ok": False, "refusal": NODE_DOWN, "error": f"node {target} is {proc.state}", "node": target}
        try:
            with NodeClient(self.host, proc.port, timeout=3.0, max_frame=self.max_frame) as client:
                answer = client.read(index)
        except (TimeoutError, OSError, codec.CodecError) as exc:
            return {"ok": False, "refusal": UNREACHABLE, "error": f"node {target} did not answer: {exc}",
                    "node": target}
        if answer.ok:
            return {"ok": True, "index": answer.index, "generation": answer.generation, "payload": answer.payload,
                    "hwm": answer.high_water_mark, "node": target}
        return {"ok": False, "refusal": answer.refusal, "error": answer.error, "index": index,
                "hwm": answer.high_water_mark, "node": target}

    # ---- observation -----------------------------------------------------------------------------------------

    def state(self, log: int | str = 20) -> dict:
        nodes = []
        for name in self.names:
            node = self.nodes[name]
            self._reap(node)
            info = None
            if node.state == "running":
                try:
                    info = self._control(node, "status", timeout=2.0, log=log)
                    node.last = info
                except (OSError, TimeoutError, NodeError, codec.CodecError) as exc:
                    info = {**node.last, "unresponsive": str(exc)}
            if info is None:
                info = dict(node.last)
                info["stale"] = True
                if log != "all":
                    window = info.get("log", [])[-int(log):] if int(log) else []
                    info["log_start"] = window[0][0] if window else info.get("log_end", 0) + 1
                    info["log"] = window
            info.update({"id": name, "state": node.state, "pid": node.pid if node.state != "killed" else None,
                         "host": self.host, "port": node.port, "data_dir": str(node.data_dir), "boot": node.boot,
                         "fsync": self.settings["fsync"][name]})
            if node.state not in ("running", "paused"):
                info.update({"role": None, "leader": None, "match_index": {}, "next_index": {}})
            if node.exit_code is not None and node.state == "exited":
                info["exit_code"] = node.exit_code
                info["exit_reason"] = node.exit_reason or _exit_reason(node.data_dir, node.exit_code)
                if node.fault:
                    info["fault"] = node.fault
            info["disk_full"] = name in self.full_disks
            for key, default in (("role", None), ("generation", 0), ("leader", None), ("log_end", 0), ("hwm", 0),
                                 ("match_index", {}), ("next_index", {}), ("log", []), ("log_start", 1)):
                info.setdefault(key, default)
            nodes.append(info)
        leaders = [(n["generation"], n["id"]) for n in nodes if n["state"] == "running" and n["role"] == "leader"]
        leader = max(leaders)[1] if leaders else None
        if leader:
            self._leader_hint = leader
        links = [{"src": a, "dst": b, "cut": (a, b) in self.cuts,
                  "delay_ms": self.link_delays.get((a, b), self.settings["delay_ms"])}
                 for a in self.names for b in self.names if a != b]
        return {"run_dir": str(self.run_dir), "settings": self.public_settings(), "leader": leader, "nodes": nodes,
                "links": links, "time": round(time.time() - self.start_time, 6),
                **({"trace_unwritable": self._unwritable} if self._unwritable else {})}

    def node_log(self, name: str) -> list:
        node = self._running(name)
        return self._control(node, "log", timeout=10.0)["entries"]

    def cluster_event(self, kind: str, **fields) -> None:
        """A line of the cluster's own (a fault, a client request, a scenario's note) in the trace, at once."""
        now = time.time() - self.start_time
        with self._trace_lock:
            self._writer.emit([Event(kind, fields)], time=now, boot=0)
            try:
                self._writer.flush()
                self._unwritable = ""
                return
            except OSError as exc:  # a full disk: the cluster goes on, and says what it could not write
                if not self._unwritable:
                    log.warning("cannot write the cluster's trace (%s): its events are kept in memory only", exc)
                self._unwritable = f"the cluster's trace cannot be written: {exc.strerror or exc}"
        with self._events_lock:
            self._events.append({**record(Event(kind, fields), seq=0, time=round(now, 6), node=CLUSTER, boot=0),
                                 "unwritten": True})

    def events(self, after: int = 0, limit: int | None = None) -> tuple[list[dict], int]:
        """Trace events of every emitter, in the order this supervisor read them, numbered from 1: those after
        number `after` (the newest EVENTS_KEPT only; the trace files hold them all), and the number to ask next."""
        with self._events_lock:
            for path in sorted(self.run_dir.glob("events-*.jsonl")):
                offset = self._tail.get(path, 0)
                try:
                    with open(path, "rb") as f:
                        f.seek(offset)
                        data = f.read()
                except OSError:
                    continue
                end = data.rfind(b"\n") + 1  # only whole lines: a torn or unfinished one waits
                for line in data[:end].splitlines():
                    try:
                        self._events.append(json.loads(line))
                    except ValueError:
                        log.warning("%s: skipped a line that is not JSON", path.name)
                self._tail[path] = offset + end
            excess = len(self._events) - EVENTS_KEPT
            if excess > 0:
                del self._events[:excess]
                self._events_dropped += excess
            start = max(0, after, self._events_dropped) - self._events_dropped
            chosen = self._events[start: start + limit if limit else None]
            return chosen, self._events_dropped + start + len(chosen)

    # ---- HTTP ------------------------------------------------------------------------------------------------

    def _serve(self) -> None:
        self._server = control_api.serve(self, self.control_port)
        self.control_url = f"http://127.0.0.1:{self._server.server_address[1]}"


# ---- small helpers -----------------------------------------------------------------------------------------


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _parse_time(text) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner can read (mode 0600), atomically."""
    tmp = Path(f"{path}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _write_json(path: Path, data: dict) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _read_fault(node: NodeProc) -> dict | None:
    """The fault of the student's code that stopped this process of the node, if that is why it exited."""
    info = _read_json(node.data_dir / FAULT_FILE)
    if not info or info.get("pid") != node.pid:
        return None
    try:
        return Fault(**{k: info[k] for k in ("kind", "function", "inputs", "detail", "file", "line")}).as_dict()
    except (KeyError, TypeError):
        return None


def _last_line(path: Path) -> str:
    """The last line a node logged: on a fail-stop, the exception that stopped it."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            lines = f.read().decode("utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _exit_reason(data_dir: Path, code: int | None) -> str:
    """Why a node stopped on its own: the reason it wrote in the space it set aside (a storage fault), else the last
    line of its node.log, else what its exit code says."""
    try:
        reason = (Path(data_dir) / "exit_reason").read_bytes().rstrip(b"\0").decode("utf-8", "replace").strip()
    except OSError:
        reason = ""
    if reason:
        return reason
    line = _last_line(Path(data_dir) / "node.log")
    if code in EXIT_KINDS and EXIT_KINDS[code] not in line:
        return f"{EXIT_KINDS[code]} (exit code {code}; see its node.log)"
    return line


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


# ---- daemon ------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab.processes.supervisor", description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True, help="run directory: traces, node data, cluster.json")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--impl", default="solutions")
    p.add_argument("--fsync", choices=FSYNC_POLICIES, default="always")
    p.add_argument("--truncation", choices=TRUNCATION_STRATEGIES, default="generation")
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fresh", action="store_true", help="wipe a previous run in the directory first")
    p.add_argument("--control-port", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1", help="address the nodes listen on (default 127.0.0.1)")
    p.add_argument("--no-pre-vote", action="store_true", help="nodes campaign without asking for pre-votes first")
    p.add_argument("--options", default="{}", help="more Supervisor keyword arguments, as a JSON object")
    p.add_argument("--parent-pid", type=int, help="stop the cluster when this process (a dashboard) is gone")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    try:
        options = json.loads(args.options)
        if not isinstance(options, dict):
            raise ValueError("--options must be a JSON object")
    except ValueError as exc:
        print(f"supervisor: {exc}", file=sys.stderr)
        return 2
    settings = {"nodes": args.nodes, "impl": args.impl, "fsync": args.fsync, "truncation": args.truncation,
                "delay_ms": args.delay_ms, "seed": args.seed, "fresh": args.fresh, "control_port": args.control_port,
                "host": args.host, "pre_vote": not args.no_pre_vote, **options}
    try:
        supervisor = Supervisor(args.dir, **settings).start()
    except (SupervisorError, TypeError) as exc:
        print(f"supervisor: {exc}", file=sys.stderr)
        return 1
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: threading.Thread(target=supervisor.stop, daemon=True).start())
    log.info("cluster of %s up; control API at %s", ",".join(supervisor.names), supervisor.control_url)
    while not supervisor.wait_stopped(0.5):
        if args.parent_pid and os.getppid() != args.parent_pid:  # who started us is gone: leave no node behind
            supervisor.stop()
    time.sleep(0.1)  # let the shutdown answer go out
    return 0


if __name__ == "__main__":
    sys.exit(main())
