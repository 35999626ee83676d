"""Clusters that the dashboard owns (`hwm-lab demo`): one supervisor process at a time, started and stopped here.

Starting a new cluster (another size, or a guided scenario's) stops the previous one first. The supervisor runs
in its own process (web.clusterproc) so that the dashboard's event loop, and its CPU figure, stay its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from web.control import ControlClient, ControlError

START_SECONDS = 60.0  # node processes are Python: slow to start on a busy two-core machine
STOP_SECONDS = 10.0


class ClusterError(Exception):
    pass


class ClusterHost:
    def __init__(self, base_dir: str | os.PathLike, *, impl: str = "solutions", python: str = sys.executable,
                 supervisor_options: dict | None = None):
        self.base_dir = Path(base_dir).resolve()
        self.impl = impl
        self.python = python
        self.supervisor_options = dict(supervisor_options or {})
        self.proc: subprocess.Popen | None = None
        self.control_url: str | None = None
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
            # As lab.sim.realdriver does: clocks held until the script's first command, no background writeback,
            # so that every run of a guided scenario unfolds the same way.
            names = [chr(ord("A") + i) for i in range(nodes)]
            options.update(truncation=scenario.truncation, hold_ticks=True, writeback_ms=0.0,
                           fsync={n: scenario.fsync.get(n, "always") for n in names},
                           meta={"run": f"{scenario.name}-guided", "scenario": scenario.name})
        self.run_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.run_dir / "supervisor.log", "ab")
        self.proc = subprocess.Popen([self.python, "-m", "web.clusterproc", "--dir", str(self.run_dir),
                                      "--options", json.dumps(options)],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=str(Path(__file__).resolve().parent.parent))
        log.close()
        info_path = self.run_dir / "cluster.json"
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = (self.run_dir / "supervisor.log").read_text(errors="replace")[-800:]
                raise ClusterError(f"the cluster did not start (exit {self.proc.returncode}): {tail}")
            try:
                info = json.loads(info_path.read_text())
                if info.get("pid") == self.proc.pid and info.get("control_url"):
                    self.control_url = info["control_url"]
                    return self.control_url
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        self.stop()
        raise ClusterError(f"the cluster did not start within {START_SECONDS:g}s (see {self.run_dir}/supervisor.log)")

    def driver(self, scenario):
        """A scenario Driver on the current cluster (lab.sim.realdriver), for the guided scenarios."""
        from lab.sim.realdriver import RealDriver

        return RealDriver(control_url=self.control_url)

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
        proc, url = self.proc, self.control_url
        self.proc, self.control_url = None, None
        if proc is None:
            return
        if proc.poll() is None and url:
            try:
                ControlClient(url, timeout=3).post("/api/shutdown")
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
