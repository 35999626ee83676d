"""The supervisor's node processes: starting and stopping the run, spawning, watching and reaping each node.

A mixin of `Supervisor` (lab.processes.supervisor), which holds the state it works on.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from lab.core import impl as impl_module
from lab.core.guard import Fault
from lab.ports import codec
from lab.ports.state import FileState
from lab.ports.trace import CLUSTER, TraceFile, write_meta
from lab.ports.wal import WriteAheadLog
from lab.processes.client import CLUSTER_FILE, NodeClient, NodeError
from lab.processes.errors import BadRequest, NotFound, SupervisorError
from lab.processes.node import FAULT_FILE
from lab.processes.runfiles import (NETWORK_FILE, SECRET_FILE, exit_reason, iso, parse_time, read_fault,
                                    read_json, tail, write_private)
from lab.core import reasons
from lab.core.reasons import Reason, because
from lab.core.events import CLOCKS_HELD, CLOCKS_RELEASED, CLUSTER_STARTED, CLUSTER_STOPPED, NODE_EXITED

log = logging.getLogger("lab.processes.supervisor")

READY_SECONDS = 20.0  # a node process must be listening within this (python start-up on a busy machine)
STOP_SECONDS = 5.0
_REPO_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass
class NodeProc:
    id: str
    data_dir: Path
    fsync: str
    state: str = "stopped"  # starting | running | paused | killed | exited | stopping (by the supervisor) | stopped
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


class Lifecycle:
    """Start, stop, spawn, await, reap: what keeps one process per node (and says when one is gone)."""

    def start(self) -> Self:
        try:
            impl_module.load(self.settings["impl"])  # a clear error here rather than N dead node processes
        except impl_module.ImplError as exc:
            raise BadRequest(because(exc)) from None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.fresh:
            self._wipe()
        meta_path = self.run_dir / "trace.json"
        previous = read_json(meta_path)
        if previous:
            if list(previous.get("nodes", [])) != self.names:
                raise SupervisorError(Reason(reasons.OTHER_NODES_RUN, dir=str(self.run_dir),
                                             held=",".join(previous.get("nodes", [])), wanted=",".join(self.names)))
            self.start_time = parse_time(previous.get("started")) or time.time()
        else:
            self.start_time = time.time()
        self.meta = {
            "run": self.meta.get("run") or (previous or {}).get("run") or self.run_dir.name, "source": "real",
            "scenario": None, "seed": self.seed, "nodes": self.names, "truncation": self.settings["truncation"],
            "fsync": self.settings["fsync"], "impl": self.settings["impl"], "liveness_bound": 5.0,
            **self.meta, "started": iso(self.start_time),
        }
        write_meta(self.run_dir, **self.meta)
        write_private(self.run_dir / SECRET_FILE, self.secret + b"\n")
        self._writer = TraceFile(self.run_dir, CLUSTER)
        self._started = True
        atexit.register(self.kill_leftovers)
        self.cluster_event(CLUSTER_STARTED, nodes=self.names, truncation=self.settings["truncation"],
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
            write_private(self.run_dir / CLUSTER_FILE, (json.dumps(info, indent=1) + "\n").encode())
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
                    # Stopped by us, not on its own: the reaper must not report it as exited (with its log's last
                    # line for a reason, which a replay's lane then showed as "stopped: ... listening").
                    node.state = "stopping"
                    node.proc.send_signal(signal.SIGTERM)
                    procs.append(node)
                except ProcessLookupError:
                    node.state = "stopped"
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
            self.cluster_event(CLUSTER_STOPPED)
            self.meta.update(extra_meta or {})
            self.meta["stopped"] = iso(time.time())
            try:
                with self._trace_lock:
                    self._writer.close()
                write_meta(self.run_dir, **self.meta)
            except OSError as exc:  # a full disk: the nodes are stopped all the same
                log.warning("stopping: could not write the trace's end or its meta: %s", exc)
            if self.use_cluster_file:
                info = read_json(self.run_dir / CLUSTER_FILE)
                if info and info.get("pid") == os.getpid():
                    (self.run_dir / CLUSTER_FILE).unlink(missing_ok=True)
            self._stopped.set()
            self.close_traces()
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
            info = read_json(ready)
            if info and info.get("pid") == node.pid:
                node.port, node.boot, node.state = int(info["port"]), int(info["boot"]), "running"
                return
            code = node.proc.poll()
            if code is not None:
                node.state, node.exit_code = "exited", code
                node.exit_reason = exit_reason(node.data_dir, code)
                self.cluster_event(NODE_EXITED, target=node.id, code=code, reason=node.exit_reason)
                raise SupervisorError(Reason(reasons.EXITED_STARTING, node=node.id, code=code,
                                             log=tail(node.data_dir / "node.log")))
            if time.monotonic() > deadline:
                node.proc.kill()
                node.proc.wait()
                node.state = "exited"
                raise SupervisorError(Reason(reasons.NOT_LISTENING, node=node.id, seconds=READY_SECONDS,
                                             log=tail(node.data_dir / "node.log")))
            time.sleep(0.01)

    def _node(self, name: str) -> NodeProc:
        node = self.nodes.get(name)
        if node is None:
            raise NotFound(Reason(reasons.NO_NODE_IN_CLUSTER, node=repr(name), nodes=list(self.names)))
        self._reap(node)
        return node

    def _reap(self, node: NodeProc) -> None:
        if node.state in ("running", "paused", "starting") and node.proc is not None:
            with self._reap_lock:
                code = node.proc.poll()
                if code is None or node.state not in ("running", "paused", "starting"):
                    return
                node.state, node.exit_code = "exited", code
                node.exit_reason = exit_reason(node.data_dir, code)
            self._close_client(node)
            self._mark_dead(node)
            node.fault = read_fault(node)
            if node.fault:  # the student's code stopped it: say which call, not the log's last line
                node.exit_reason = Fault(**node.fault).sentence()
            extra = {"fault": node.fault} if node.fault else {}
            self.cluster_event(NODE_EXITED, target=node.id, code=code, reason=node.exit_reason, **extra)

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
        self.clients.forget(node.id)

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

    def campaign(self, name: str) -> None:
        node = self._running(name)
        self._control(node, "campaign")

    def flush(self, name: str) -> dict:
        node = self._running(name)
        return self._control(node, "flush")

    def hold_ticks(self, hold: bool) -> None:
        with self.lock:
            self.settings["hold_ticks"] = bool(hold)
            self.cluster_event(CLOCKS_HELD if hold else CLOCKS_RELEASED)
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
            raise SupervisorError(Reason(reasons.NOT_RUNNING, node=name, state=node.state))
        return node
