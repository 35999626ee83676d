"""Benchmark a real cluster: 3 node processes, fsync `always`, on loopback.

Measured in the same run, on the same disk and the same loopback:
  floors      median append + fsync of a small record in the data directory; median loopback TCP round trip of
              a small frame between two processes
  latency     commit latency p50 / p99 with one write at a time (sent straight to the leader's port)
  throughput  committed entries/s with many writes in flight (frames pipelined to the leader, many per send)
Each figure is printed next to its target with PASS or FAIL. Run: .venv/bin/python bench/cluster.py [--help]
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab import codec  # noqa: E402
from lab.client import NodeClient  # noqa: E402
from lab.messages import ClientWrite  # noqa: E402
from lab.supervisor import Supervisor  # noqa: E402

_ECHO_SERVER = textwrap.dedent("""
    import socket, sys
    server = socket.create_server(("127.0.0.1", 0))
    print(server.getsockname()[1], flush=True)
    conn, _ = server.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        data = conn.recv(65536)
        if not data:
            break
        conn.sendall(data)
""")


class Floors:
    """The two floors, sampled in small rounds between the latency samples so that both see the same load."""

    def __init__(self, directory: Path):
        self.path = directory / "fsync-floor.bin"
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.echo = subprocess.Popen([sys.executable, "-c", _ECHO_SERVER], stdout=subprocess.PIPE, text=True)
        self.sock = socket.create_connection(("127.0.0.1", int(self.echo.stdout.readline())))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.frame = codec.encode(ClientWrite(request="w1", payload="x" * 16))
        self.fsyncs: list[float] = []
        self.round_trips: list[float] = []

    def sample(self, count: int) -> None:
        record = b"r" * 64
        for _ in range(count):
            start = time.perf_counter()
            os.write(self.fd, record)
            os.fsync(self.fd)
            self.fsyncs.append(time.perf_counter() - start)
            start = time.perf_counter()
            self.sock.sendall(self.frame)
            got = 0
            while got < len(self.frame):
                got += len(self.sock.recv(65536))
            self.round_trips.append(time.perf_counter() - start)

    def close(self) -> None:
        os.close(self.fd)
        self.path.unlink()
        self.sock.close()
        self.echo.kill()
        self.echo.wait()


def commit_latencies(client: NodeClient, count: int, start_at: int = 0) -> list[float]:
    """One write at a time, straight to the leader: seconds from send to acknowledgement, each."""
    times = []
    for i in range(start_at, start_at + count):
        start = time.perf_counter()
        answer = client.write(f"latency-{i}")
        times.append(time.perf_counter() - start)
        if not answer.ok:
            raise RuntimeError(f"write {i} failed: {answer.error}")
    return times


def pipelined(port: int, total: int, in_flight: int, per_send: int, payload_bytes: int) -> tuple[float, int]:
    """Many writes in flight on one connection; returns (seconds until the last acknowledgement, failures)."""
    payload = "p" * payload_bytes
    frames = [codec.encode(ClientWrite(request=f"t{i}", payload=payload)) for i in range(total)]
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    sent = acked = failed = 0
    out = bytearray()
    buffer = bytearray()
    start = time.perf_counter()
    deadline = time.monotonic() + 120
    while acked + failed < total:
        if time.monotonic() > deadline:
            raise RuntimeError(f"pipelined run stuck: {acked} acknowledged, {failed} failed of {total}")
        while sent < total and sent - acked - failed < in_flight and len(out) < (1 << 20):
            batch = frames[sent: min(total, sent + per_send, acked + failed + in_flight)]
            out += b"".join(batch)
            sent += len(batch)
        if out:
            try:
                del out[: sock.send(out)]
            except BlockingIOError:
                pass
        sel.modify(sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0))
        for _key, mask in sel.select(1.0):
            if not mask & selectors.EVENT_READ:
                continue
            data = sock.recv(1 << 20)
            if not data:
                raise RuntimeError("the leader closed the connection")
            buffer += data
            # Count answers by their frames; each one is checked for "ok": true without a full decode.
            position = 0
            while len(buffer) - position >= 4:
                (length,) = codec.LENGTH.unpack_from(buffer, position)
                end = position + 4 + length
                if end > len(buffer):
                    break
                if b'"ok":true' in buffer[position + 4: end]:
                    acked += 1
                else:
                    failed += 1
                position = end
            del buffer[:position]
    elapsed = time.perf_counter() - start
    sock.close()
    return elapsed, failed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=400, help="floor samples and one-at-a-time writes")
    parser.add_argument("--total", type=int, default=100_000, help="writes in the pipelined run")
    parser.add_argument("--in-flight", type=int, default=4000, help="writes in flight at once")
    parser.add_argument("--per-send", type=int, default=500, help="frames per send in the pipelined run")
    parser.add_argument("--payload-bytes", type=int, default=16)
    parser.add_argument("--election-ms", type=float, default=1000.0,
                        help="minimum election timeout (default 1000 ms, the lab's default is 300 ms): fsync "
                             "stalls on a shared disk must not depose the leader in the middle of the run")
    parser.add_argument("--dir", help="run directory (default: a new temporary directory)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)

    run_dir = Path(args.dir or tempfile.mkdtemp(prefix="hwm-bench-"))  # a temporary one is removed at the end
    tick_ms = 10.0
    election_ticks = max(2, round(args.election_ms / tick_ms))
    supervisor = Supervisor(run_dir, nodes=3, fsync="always", fresh=True, cluster_file=False, tick_ms=tick_ms,
                            election_ticks=election_ticks).start()
    try:
        leader = supervisor.wait_for_leader(15.0)
        if not leader:
            print("no leader elected within 15 s", file=sys.stderr)
            return 1
        port = supervisor.nodes[leader].port

        floors = Floors(supervisor.nodes[leader].data_dir)
        latencies: list[float] = []
        busy = 0.0
        try:
            with NodeClient("127.0.0.1", port, timeout=10.0) as client:
                commit_latencies(client, 50)  # warm up
                rounds = 20
                for r in range(rounds):
                    floors.sample(max(1, args.samples // rounds))
                    started = time.perf_counter()
                    latencies += commit_latencies(client, max(1, args.samples // rounds), 50 + len(latencies))
                    busy += time.perf_counter() - started
        finally:
            floors.close()
        fsync_s, rtt_s = statistics.median(floors.fsyncs), statistics.median(floors.round_trips)
        floor = fsync_s + rtt_s
        serial_rate = len(latencies) / busy
        p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)

        elapsed, failed = pipelined(port, args.total, args.in_flight, args.per_send, args.payload_bytes)
        rate = (args.total - failed) / elapsed
        state = supervisor.state(log=0)
    finally:
        supervisor.stop()
        if not args.dir:
            shutil.rmtree(run_dir, ignore_errors=True)

    checks = [
        ("commit latency p50", f"{p50 * 1e3:.3f} ms", f"<= 3 x (fsync + round trip) = {3 * floor * 1e3:.3f} ms",
         p50 <= 3 * floor),
        ("pipelined vs one at a time", f"{rate / serial_rate:.1f} x", ">= 30 x", rate >= 30 * serial_rate),
        ("pipelined throughput", f"{rate:,.0f} entries/s", ">= 50,000 entries/s", rate >= 50_000),
    ]
    print(f"cluster: 3 nodes, fsync always, loopback, traces on; election timeout {election_ticks * tick_ms:g}-"
          f"{2 * election_ticks * tick_ms:g} ms; {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")
    print(f"run directory {run_dir}{'' if args.dir else ' (removed)'}")
    print(f"floor    append + fsync (median)           {fsync_s * 1e3:8.3f} ms")
    print(f"floor    loopback round trip (median)      {rtt_s * 1e3:8.3f} ms")
    print(f"latency  commit p50, one write at a time   {p50 * 1e3:8.3f} ms")
    print(f"latency  commit p99, one write at a time   {p99 * 1e3:8.3f} ms")
    print(f"rate     one write at a time               {serial_rate:10,.0f} entries/s")
    print(f"rate     pipelined ({args.in_flight} in flight)      {rate:10,.0f} entries/s "
          f"({args.total - failed} committed in {elapsed:.2f} s, {failed} failed)")
    for name, value, target, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {value} (target {target})")
    logs = {n["id"]: (n["log_end"], n["hwm"]) for n in state["nodes"]}
    print(f"final (log_end, hwm) per node: {logs}")
    if args.json:
        print(json.dumps({"fsync_ms": fsync_s * 1e3, "round_trip_ms": rtt_s * 1e3, "p50_ms": p50 * 1e3,
                          "p99_ms": p99 * 1e3, "serial_per_s": serial_rate, "pipelined_per_s": rate,
                          "failed": failed, "passed": all(c[3] for c in checks)}))
    return 0 if all(c[3] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
