"""The peer that bench/cluster.py compares the lab with: PySyncObj (a Raft library in Python, from PyPI), three local
processes on loopback, doing the same work: writes one at a time, then many in flight.

PySyncObj has no client protocol: a replicated method is called in the process of one of its nodes. So each node
process runs the same script; the one that is leader runs the workload on its own replicated object and writes the
figures to a JSON file; the others serve until told to stop. Its most durable setting is a journal file per node
(an mmap'ed file that the OS writes back; PySyncObj has no setting that fsyncs each entry, unlike the lab's fsync
`always`), which this benchmark turns on.

Run by bench/cluster.py; by hand: python bench/pysyncobj_peer.py --help
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def node(args) -> int:
    """One PySyncObj node; the leader runs the workload and writes the figures."""
    from pysyncobj import SyncObj, SyncObjConf, replicated

    class Log(SyncObj):
        def __init__(self, me, others, conf):
            super().__init__(me, others, conf)
            self.entries = 0

        @replicated
        def append(self, payload):
            self.entries += 1
            return self.entries

    addresses = [f"127.0.0.1:{p}" for p in args.ports.split(",")]
    me = addresses[args.index]
    work = Path(args.dir)
    conf = SyncObjConf(journalFile=str(work / f"journal-{args.index}"), fullDumpFile=str(work / f"dump-{args.index}"),
                       raftMinTimeout=1.0, raftMaxTimeout=2.0, connectionTimeout=3.5, commandsQueueSize=200_000,
                       autoTickPeriod=0.001, appendEntriesPeriod=0.002,
                       logCompactionMinEntries=10_000_000, logCompactionMinTime=10_000)
    log = Log(me, [a for a in addresses if a != me], conf)
    stop = work / "stop"
    deadline = time.monotonic() + 60
    while not log._isReady() or log._getLeader() is None:
        if time.monotonic() > deadline:
            return 1
        time.sleep(0.05)
    if log._getLeader() != log.selfNode:
        while not stop.exists():
            time.sleep(0.1)
        return 0
    payload = "p" * args.payload_bytes
    for _ in range(50):  # warm up
        log.append(payload, sync=True)
    latencies = []
    for _ in range(args.samples):
        started = time.perf_counter()
        log.append(payload, sync=True)
        latencies.append(time.perf_counter() - started)
    done = threading.Semaphore(0)
    in_flight = threading.BoundedSemaphore(args.in_flight)
    failures = []

    def callback(result, error):
        if error:
            failures.append(error)
        in_flight.release()
        done.release()

    cpu_before = time.process_time()
    started = time.perf_counter()
    for _ in range(args.total):
        in_flight.acquire()
        log.append(payload, callback=callback)
    for _ in range(args.total):
        done.acquire()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_before
    latencies.sort()
    result = {"p50_ms": statistics.median(latencies) * 1e3,
              "p99_ms": latencies[min(len(latencies) - 1, int(0.99 * (len(latencies) - 1)))] * 1e3,
              "serial_per_s": len(latencies) / sum(latencies), "pipelined_per_s": (args.total - len(failures)) / elapsed,
              "failed": len(failures), "leader_cpu_us_per_entry": cpu / args.total * 1e6}
    (work / "result.json").write_text(json.dumps(result))
    stop.touch()
    return 0


def run(*, samples: int = 400, total: int = 100_000, in_flight: int = 4000, payload_bytes: int = 16,
        timeout: float = 300.0) -> dict:
    """Start three PySyncObj nodes, let the leader run the workload, and return its figures."""
    with tempfile.TemporaryDirectory(prefix="hwm-pysyncobj-") as work:
        ports = ",".join(map(str, free_ports(3)))
        procs = [subprocess.Popen([sys.executable, __file__, "node", "--index", str(i), "--ports", ports, "--dir", work,
                                   "--samples", str(samples), "--total", str(total), "--in-flight", str(in_flight),
                                   "--payload-bytes", str(payload_bytes)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for i in range(3)]
        try:
            deadline = time.monotonic() + timeout
            result = Path(work) / "result.json"
            while not result.exists():
                if time.monotonic() > deadline:
                    raise RuntimeError("PySyncObj did not finish its workload in time")
                if all(p.poll() is not None for p in procs):
                    raise RuntimeError("PySyncObj's processes exited: "
                                       + " | ".join(p.stderr.read().decode(errors="replace")[-300:] for p in procs))
                time.sleep(0.1)
            return json.loads(result.read_text())
        finally:
            (Path(work) / "stop").touch()
            for p in procs:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    n = sub.add_parser("node", help="(internal) one node process")
    for p in (parser, n):
        p.add_argument("--samples", type=int, default=400)
        p.add_argument("--total", type=int, default=100_000)
        p.add_argument("--in-flight", type=int, default=4000)
        p.add_argument("--payload-bytes", type=int, default=16)
    n.add_argument("--index", type=int, required=True)
    n.add_argument("--ports", required=True)
    n.add_argument("--dir", required=True)
    args = parser.parse_args(argv)
    if args.command == "node":
        return node(args)
    print(json.dumps(run(samples=args.samples, total=args.total, in_flight=args.in_flight,
                         payload_bytes=args.payload_bytes), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
