"""Clusters that the dashboard owns (`hwm-lab demo`): one supervisor process at a time, started and stopped here.

Starting a new cluster (another size, or a guided scenario's) stops the previous one first. The supervisor runs
in its own process (lab.processes.daemon, the daemon `hwm-lab up` starts too), so that the
dashboard's event loop, and its CPU figure, stay its own; it stops with the dashboard. While a cluster runs, its
address and token are also written where `hwm-lab status`, `write`, `read`... look by default (./.hwm-lab), unless
another cluster already runs there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from lab.core.config import node_names
from lab.processes.client import CLUSTER_FILE, ControlClient, ControlError, cluster_info
from lab.i18n import say
from lab.processes.daemon import launch
from lab.harness.realdriver import RealDriver

START_SECONDS = 60.0  # node processes are Python: slow to start on a busy two-core machine
STOP_SECONDS = 10.0
POINTER_DIR = ".hwm-lab"  # where the CLI looks for a cluster by default (lab.commands.cluster.DEFAULT_DIR)


class ClusterError(Exception):
    pass


class ClusterHost:
    def __init__(self, base_dir: str | os.PathLike, *, impl: str = "solutions", python: str = sys.executable,
                 supervisor_options: dict | None = None, pointer_dir: str | os.PathLike | None = None,
                 wait_seconds: float = 10.0):
        self.base_dir = Path(base_dir).resolve()
        self.impl = impl
        self.python = python
        self.supervisor_options = dict(supervisor_options or {})
        self.wait_seconds = wait_seconds  # how long a guided scenario's `wait` may take at this cluster's pace
        self.pointer = Path(pointer_dir) / CLUSTER_FILE if pointer_dir else None
        self.proc: subprocess.Popen | None = None
        self.control_url: str | None = None
        self.token: str | None = None
        self.run_dir: Path | None = None
        self.count = 0

    def start(self, nodes: int, settings: dict | None = None, scenario=None) -> str:
        """Stop the current cluster, start a fresh one; answer its control URL."""
        self.stop()
        settings = dict(settings or {})
        self.count += 1
        self.run_dir = self.base_dir / (f"{scenario.name}-{self.count}" if scenario else f"cluster-{self.count}")
        options = {"nodes": nodes, "impl": self.impl, "fresh": True, **self.supervisor_options}
        if settings.get("truncation"):
            options["truncation"] = settings["truncation"]
        if settings.get("fsync"):
            options["fsync"] = settings["fsync"]
        if settings.get("delay_ms"):
            options["delay_ms"] = float(settings["delay_ms"])
        if scenario is not None:
            # As lab.harness.realdriver does: clocks held until the script's first command, no background writeback,
            # so that every run of a guided scenario unfolds the same way.
            options.update(truncation=scenario.truncation, hold_ticks=True, writeback_ms=0.0,
                           fsync={n: scenario.fsync.get(n, "always") for n in node_names(nodes)},
                           segment_bytes=scenario.segment_bytes,
                           meta={"run": f"{scenario.name}-guided", "scenario": scenario.name})
        self.proc = launch(self.run_dir, options, python=self.python, parent_pid=os.getpid())
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = (self.run_dir / "supervisor.log").read_text(errors="replace")[-800:]
                raise ClusterError(say("the cluster did not start (exit code {code}): {log}", code=self.proc.returncode,
                                       log=tail))
            info = cluster_info(self.run_dir)
            if info and info.get("pid") == self.proc.pid:
                self.control_url, self.token = info["control_url"], info.get("token")
                self._point_here(info)
                return self.control_url
            time.sleep(0.1)
        self.stop()
        raise ClusterError(say("the cluster did not start within {seconds} s (its supervisor.log, in {dir}, says why)",
                               seconds=START_SECONDS, dir=str(self.run_dir)))

    def driver(self, scenario) -> RealDriver:
        """A scenario Driver on the current cluster, for the guided scenarios."""
        return RealDriver(control_url=self.control_url, token=self.token)

    def pids(self) -> list[int]:
        """The supervisor and its node processes, as far as the control API tells."""
        pids = [self.proc.pid] if self.proc and self.proc.poll() is None else []
        if self.control_url:
            try:
                state = ControlClient(self.control_url, timeout=2).state(log=0)
                pids += [n["pid"] for n in state.get("nodes", []) if n.get("pid")]
            except ControlError:
                pass
        return pids

    def stop(self) -> None:
        """Stop the cluster: ask the supervisor (it stops its nodes), then signal it, then kill it."""
        proc, url, token = self.proc, self.control_url, self.token
        self.proc, self.control_url, self.token = None, None, None
        if proc is None:
            return
        self._unpoint(proc.pid)
        if proc.poll() is None and url:
            try:
                ControlClient(url, token=token).shutdown(timeout=3)
            except ControlError:
                pass
        for sig, wait in ((None, STOP_SECONDS), (signal.SIGTERM, STOP_SECONDS), (signal.SIGKILL, 5)):
            if sig is not None and proc.poll() is None:
                proc.send_signal(sig)
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue

    def _point_here(self, info: dict) -> None:
        """Let the CLI find this cluster from the folder the demo runs in, unless another cluster is there."""
        if self.pointer is None or cluster_info(self.pointer.parent) is not None:
            return
        self.pointer.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.pointer.with_name(self.pointer.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(info, f)
        os.replace(tmp, self.pointer)

    def _unpoint(self, pid: int) -> None:
        if self.pointer is None:
            return
        try:
            if json.loads(self.pointer.read_text(encoding="utf-8")).get("pid") == pid:
                self.pointer.unlink()
        except (OSError, ValueError):
            pass
