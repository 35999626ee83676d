"""Runs one supervisor (lab.processes.supervisor) in its own process for the dashboard's `hwm-lab demo`.

`python -m web.clusterproc --dir RUN_DIR --options JSON` starts `Supervisor(RUN_DIR, **options)`, which writes
RUN_DIR/cluster.json with its control URL, and stops it (and so every node) on SIGTERM, SIGINT, a POST to
/api/shutdown, or when the dashboard that started it is gone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m web.clusterproc")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--options", default="{}", help="keyword arguments for lab.processes.supervisor.Supervisor, as JSON")
    args = parser.parse_args(argv)
    from lab.processes.supervisor import Supervisor, SupervisorError

    parent = os.getppid()
    try:
        supervisor = Supervisor(args.dir, **json.loads(args.options)).start()
    except SupervisorError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1

    def stop(*_):
        threading.Thread(target=supervisor.stop, daemon=True).start()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    print(f"cluster of {','.join(supervisor.names)} up; control API at {supervisor.control_url}", flush=True)
    while not supervisor.wait_stopped(0.5):
        if os.getppid() != parent:  # the dashboard died without stopping us: leave no node behind
            supervisor.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
