"""`hwm-lab spark-cluster up` starts a master and a worker on loopback from pyspark's own spark-class, and
`down` stops them."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lab.grade.spark import standalone

ROOT = Path(__file__).resolve().parents[2]


def outward_address() -> str | None:
    """The address of the interface of the default route (a UDP connect sends nothing), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") else address


@pytest.mark.spark
def test_up_starts_a_master_and_a_worker_on_loopback_and_down_stops_them(tmp_path):
    folder = str(tmp_path / "cluster")
    try:
        done = subprocess.run([sys.executable, "-m", "lab.cli", "spark-cluster", "up", "--dir", folder],
                              cwd=ROOT, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
        state = standalone._read(os.path.join(folder, standalone.STATE))
        url = state["master"]
        assert url.startswith("spark://127.0.0.1:") and f"--master {url}" in done.stdout
        port = int(url.rsplit(":", 1)[1])
        assert standalone._listening(port)
        outward = outward_address()
        if outward:  # the master is not on the machine's other addresses
            with pytest.raises(OSError):
                socket.create_connection((outward, port), timeout=1).close()
        pids = [p["pid"] for p in state["processes"]]
        assert len(pids) == 2 and all(standalone._alive(p["pid"], p["class"]) for p in state["processes"])
        assert b"spark-class" in open(f"/proc/{pids[0]}/cmdline", "rb").read() or "java" in \
            os.readlink(f"/proc/{pids[0]}/exe")
    finally:
        stopped = subprocess.run([sys.executable, "-m", "lab.cli", "spark-cluster", "down", "--dir", folder],
                                 cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert stopped.returncode == 0 and "stopped 2 Spark processes" in stopped.stdout
    assert not any(standalone._alive(p["pid"], p["class"]) for p in state["processes"])
    assert not standalone._listening(port)
