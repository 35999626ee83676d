"""The supervisor daemon: its command line (`python -m lab.processes.daemon`), and `launch`, which starts it in
the background for `hwm-lab up` (lab.commands.cluster) and for the dashboard (web.cluster).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from lab.core.config import FSYNC_POLICIES, TRUNCATION_STRATEGIES
from lab.core.reasons import record_of, said_again
from lab.processes.errors import SupervisorError
from lab.processes.supervisor import Supervisor

log = logging.getLogger("lab.processes.supervisor")

LOG_FILE = "supervisor.log"  # in the run directory: what the daemon says, appended to across runs
START_ERROR = "start-error.json"  # in the run directory: why the daemon could not start, as a reason's record
_REPO_ROOT = str(Path(__file__).resolve().parents[2])


def _keep_start_error(run_dir: Path, exc: Exception) -> None:
    """Why the start failed, as a reason's record, for the command that launched the daemon to say in its reader's
    language (the log keeps the English); written aside, then put in place."""
    record = record_of(exc.args[0]) if exc.args else None
    if not isinstance(record, dict):
        return
    aside = run_dir / f".{START_ERROR}.{os.getpid()}.tmp"
    try:
        aside.write_text(json.dumps(record), encoding="utf-8")
        os.replace(aside, run_dir / START_ERROR)
    except OSError:
        aside.unlink(missing_ok=True)


def start_error(run_dir: str | os.PathLike):
    """The reason the daemon kept for a failed start (`_keep_start_error`), or None."""
    try:
        return said_again(json.loads((Path(run_dir) / START_ERROR).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def launch(run_dir: str | os.PathLike, options: dict, *, python: str = sys.executable, parent_pid: int | None = None,
           new_session: bool = False) -> subprocess.Popen:
    """Start the daemon on `run_dir` with these Supervisor keyword arguments; its output goes to LOG_FILE there.

    parent_pid: the daemon stops its cluster when that process is gone. new_session: it outlives this one's
    terminal (`hwm-lab up` returns while the cluster runs on).
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    command = [python, "-m", "lab.processes.daemon", "--dir", str(run_dir), "--options", json.dumps(options)]
    if parent_pid is not None:
        command += ["--parent-pid", str(parent_pid)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_REPO_ROOT, env.get("PYTHONPATH")]))
    with open(run_dir / LOG_FILE, "ab") as out:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=new_session, close_fds=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab.processes.daemon",
                                description="The supervisor of a cluster of node processes.")
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
        _keep_start_error(Path(args.dir), exc)
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
