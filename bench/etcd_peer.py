"""The second peer that bench/cluster.py compares the lab with: etcd (Debian's `etcd-server`, a Go Raft store that
fsyncs its write-ahead log before it acknowledges), three members on loopback, data in one temporary folder on the
same disk as the lab's, doing the same work: puts one at a time to the leader, then many in flight.

The client is grpcio (from PyPI, `pip install '.[bench]'`) calling etcd's KV/Put with the request encoded by hand
(two bytes fields of etcdserverpb.PutRequest), so no Python protobuf layer slows etcd's side of the comparison.
Install etcd with `apt-get install etcd-server` (its service need not run: this starts its own members).

Run by bench/cluster.py; by hand: python bench/etcd_peer.py --help
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

PUT = "/etcdserverpb.KV/Put"


def etcd_binary() -> str | None:
    return shutil.which("etcd") or next((p for p in ("/usr/bin/etcd", "/usr/sbin/etcd") if os.path.exists(p)), None)


def free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def put_request(key: bytes, value: bytes) -> bytes:
    """etcdserverpb.PutRequest{key: 1, value: 2} in protobuf's wire format."""
    return b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(len(value)) + value


def _status(client_port: int) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{client_port}/v3/maintenance/status", data=b"{}",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=2) as answer:
        return json.loads(answer.read())


def cpu_seconds(pid: int) -> float:
    """CPU time of all of a process's threads (etcd's work runs on many: /proc/PID/schedstat counts only one)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Etcd:
    """Three etcd members on loopback, started fresh in `work` and stopped by close()."""

    def __init__(self, work: Path, binary: str):
        ports = free_ports(6)
        self.clients, peers = ports[:3], ports[3:]
        cluster = ",".join(f"e{i}=http://127.0.0.1:{peers[i]}" for i in range(3))
        self.procs = []
        self.logs = []
        for i in range(3):
            log = open(work / f"e{i}.log", "wb")
            self.logs.append(log)
            self.procs.append(subprocess.Popen(
                [binary, "--name", f"e{i}", "--data-dir", str(work / f"e{i}"),
                 "--listen-client-urls", f"http://127.0.0.1:{self.clients[i]}",
                 "--advertise-client-urls", f"http://127.0.0.1:{self.clients[i]}",
                 "--listen-peer-urls", f"http://127.0.0.1:{peers[i]}",
                 "--initial-advertise-peer-urls", f"http://127.0.0.1:{peers[i]}",
                 "--initial-cluster", cluster, "--initial-cluster-token", "hwm-bench",
                 "--initial-cluster-state", "new", "--logger", "zap", "--log-outputs", "stderr"],
                stdout=subprocess.DEVNULL, stderr=log))

    def leader(self, timeout: float = 30.0) -> int:
        """The member that leads (its position), once one does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i, proc in enumerate(self.procs):
                if proc.poll() is not None:
                    raise RuntimeError(f"etcd member e{i} exited with code {proc.returncode}")
            for i, port in enumerate(self.clients):
                try:
                    status = _status(port)
                except (OSError, ValueError):
                    continue
                if status.get("leader") and status["leader"] == status.get("header", {}).get("member_id"):
                    return i
            time.sleep(0.1)
        raise RuntimeError("etcd elected no leader in time")

    def close(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for log in self.logs:
            log.close()


def run(*, samples: int = 400, total: int = 100_000, in_flight: int = 4000, payload_bytes: int = 16,
        directory: str | None = None) -> dict:
    """Start three etcd members, put one at a time to the leader, then many in flight; return the figures.
    ImportError without grpcio, RuntimeError without etcd or when it does not come up."""
    import grpc

    binary = etcd_binary()
    if binary is None:
        raise RuntimeError("no etcd binary (install it with: apt-get install etcd-server)")
    with tempfile.TemporaryDirectory(prefix="hwm-etcd-", dir=directory) as work:
        etcd = Etcd(Path(work), binary)
        try:
            leader = etcd.leader()
            channel = grpc.insecure_channel(f"127.0.0.1:{etcd.clients[leader]}")
            put = channel.unary_unary(PUT)  # bytes in, bytes out: the request is encoded above
            payload = b"p" * payload_bytes
            for i in range(50):  # warm up (and the channel connects)
                put(put_request(b"w%d" % i, payload), timeout=10)
            latencies = []
            for i in range(samples):
                request = put_request(b"k%d" % i, payload)
                started = time.perf_counter()
                put(request, timeout=10)
                latencies.append(time.perf_counter() - started)
            requests = [put_request(b"t%d" % i, payload) for i in range(total)]
            slots = threading.BoundedSemaphore(in_flight)
            done = threading.Semaphore(0)
            failures = []

            def finished(future):
                if future.exception() is not None:
                    failures.append(future.exception())
                slots.release()
                done.release()

            pid = etcd.procs[leader].pid
            cpu_before = cpu_seconds(pid)
            started = time.perf_counter()
            for request in requests:
                slots.acquire()
                put.future(request, timeout=60).add_done_callback(finished)
            for _ in range(total):
                done.acquire()
            elapsed = time.perf_counter() - started
            cpu = cpu_seconds(pid) - cpu_before
            channel.close()
        finally:
            etcd.close()
    latencies.sort()
    return {"p50_ms": statistics.median(latencies) * 1e3,
            "p99_ms": latencies[min(len(latencies) - 1, int(0.99 * (len(latencies) - 1)))] * 1e3,
            "serial_per_s": len(latencies) / sum(latencies), "pipelined_per_s": (total - len(failures)) / elapsed,
            "failed": len(failures), "leader_cpu_us_per_entry": cpu / total * 1e6}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--total", type=int, default=100_000)
    parser.add_argument("--in-flight", type=int, default=4000)
    parser.add_argument("--payload-bytes", type=int, default=16)
    parser.add_argument("--dir", help="where the members' data folders go (default: the system's temporary folder)")
    args = parser.parse_args(argv)
    print(json.dumps(run(samples=args.samples, total=args.total, in_flight=args.in_flight,
                         payload_bytes=args.payload_bytes, directory=args.dir), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
