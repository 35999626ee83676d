"""Benchmark a real cluster: 3 node processes, fsync `always`, traces on, on loopback; PySyncObj and etcd beside it.

Measured in the same run, on the same disk and the same loopback, three times (the medians are what is judged):
  floors      median append + fsync of a small record in the data directory; median loopback TCP round trip of
              a small frame between two processes
  latency     commit latency p50 / p99 with one write at a time (sent straight to the leader's port), and
              where the median write spends its time, leg by leg beside each leg's floor, from the trace's
              timestamps: the leader's fsync and its followers' run side by side (the leader sends, then syncs)
  throughput  committed entries/s with many writes in flight (frames pipelined to the leader, many per send),
              and the CPU time each process spent per committed entry meanwhile
  reads       p50 of a plain read and of a linearizable one (ReadIndex: the leader's round to its followers first),
              one at a time straight to the leader, beside the round trip floor
  peers       after each run of the lab, the same work on
              - PySyncObj (pip install '.[bench]'), three local processes, its most durable setting
                (bench/pysyncobj_peer.py)
              - etcd 3.4 (apt-get install etcd-server; its client grpcio comes with '.[bench]'), three members on
                loopback, data on the same disk (bench/etcd_peer.py)
              a peer that cannot run here is skipped with one line saying how to install it; the lab's figures are
              printed as ratios to each peer that ran
Each figure is printed next to its target with PASS or FAIL, and a missed target says by how much.
Run: .venv/bin/python bench/cluster.py [--help]
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

from lab.core.events import FOLLOWER_APPEND, LOG_PERSISTED, WRITE_ACKED, WRITE_REQUESTED  # noqa: E402
from lab.ports import codec  # noqa: E402
from lab.processes.client import NodeClient  # noqa: E402
from lab.core.messages import ClientWrite  # noqa: E402
from lab.processes.supervisor import Supervisor  # noqa: E402
from bench import etcd_peer, pysyncobj_peer  # noqa: E402

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


def commit_latencies(client: NodeClient, count: int, start_at: int = 0, sent: dict | None = None) -> list[float]:
    """One write at a time, straight to the leader: seconds from send to acknowledgement, each.

    `sent`, if given, gets index -> (wall clock at send, at acknowledgement) for each write.
    """
    times = []
    for i in range(start_at, start_at + count):
        wall, start = time.time(), time.perf_counter()
        answer = client.write(f"latency-{i}")
        times.append(time.perf_counter() - start)
        if not answer.ok:
            raise RuntimeError(f"write {i} failed: {answer.error}")
        if sent is not None:
            sent[answer.index] = (answer.request, wall, wall + times[-1])
    return times


LEGS = (  # (what, from mark, to mark, floor): the marks are LEG_MARKS' positions
    ("client -> leader wrote and sent", 0, 1, "half"),
    ("leader's fsync", 1, 2, "fsync"),
    ("leader -> a follower wrote", 1, 3, "half"),
    ("that follower's fsync", 3, 4, "fsync"),
    ("follower -> leader acknowledges", 4, 5, "half"),
    ("leader -> client has the answer", 5, 6, "half"),
)
LEG_MARKS = ("client sends", "leader wrote and sent", "leader durable", "follower wrote", "follower durable",
             "leader acknowledges", "client has the answer")


def _durable_at(marks: list[tuple[float, int]], index: int) -> float | None:
    """The time a node's log became durable up to `index`: its first log_persisted at or past it."""
    for time_, end in marks:
        if end >= index:
            return time_
    return None


def latency_split(run_dir: Path, start_time: float, leader: str, sent: dict) -> list[float]:
    """Where one write's time goes, from the trace: the median time of each of LEG_MARKS, in seconds from the
    client's send, over the writes in `sent`.

    The leader's events of a step are timed when it has written the entry and sent it (before its fsync), its
    log_persisted when the fsync returned; a follower's follower_append when it has written it, its log_persisted
    after its fsync. The follower taken is the first one durable (the one that makes the majority)."""
    appended: dict[tuple[str, int], float] = {}
    durable: dict[str, list[tuple[float, int]]] = {}
    kinds = (WRITE_REQUESTED, FOLLOWER_APPEND, WRITE_ACKED, LOG_PERSISTED)
    for path in run_dir.glob("events-*.jsonl"):
        node = path.stem.removeprefix("events-")
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not any(f'"{kind}"' in line for kind in kinds):
                    continue
                event = json.loads(line)
                kind = event["type"]
                if kind == LOG_PERSISTED:
                    durable.setdefault(node, []).append((event["time"], event["index"]))
                elif kind == FOLLOWER_APPEND and node != leader and event["index"] in sent:
                    appended.setdefault((node, event["index"]), event["time"])
                elif kind == WRITE_ACKED and node == leader and event["index"] in sent:
                    appended.setdefault(("ack", event["index"]), event["time"])
                elif kind == WRITE_REQUESTED and node == leader:
                    appended.setdefault(("requested", event["request"]), event["time"])
    for marks in durable.values():
        marks.sort()
    by_mark: list[list[float]] = [[] for _ in LEG_MARKS]
    overlaps = []
    for index, (request, wall_sent, wall_answered) in sent.items():
        leader_sent = appended.get(("requested", request))
        leader_durable = _durable_at(durable.get(leader, []), index)
        ack = appended.get(("ack", index))
        followers = [(_durable_at(durable.get(node, []), index), appended[(node, index)])
                     for node in durable if node != leader and (node, index) in appended]
        followers = [f for f in followers if f[0] is not None]
        if None in (leader_sent, leader_durable, ack) or not followers:
            continue
        follower_durable, follower_wrote = min(followers)
        origin = wall_sent - start_time  # trace times count from the run's start
        marks = (origin, leader_sent, leader_durable, follower_wrote, follower_durable, ack,
                 wall_answered - start_time)
        for position, mark in enumerate(marks):
            by_mark[position].append(mark - origin)
        # how long the leader's fsync and the follower's ran at the same time (negative: one after the other)
        overlaps.append(min(leader_durable, follower_durable) - max(leader_sent, follower_wrote))
    medians = [statistics.median(m) if m else float("nan") for m in by_mark]
    return medians + [statistics.median(overlaps) if overlaps else float("nan")]


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far (Linux: the scheduler's own count, in and out of the kernel)."""
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pipelined(port: int, frames: list[bytes], in_flight: int, per_send: int) -> tuple[float, int]:
    """Many writes in flight on one connection; returns (seconds until the last acknowledgement, failures)."""
    total = len(frames)
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
            # Count answers by their frames; each one is checked for "ok": true without a full decode (the node's
            # greeting, a Challenge, is no answer).
            position = 0
            while len(buffer) - position >= 4:
                (length,) = codec.LENGTH.unpack_from(buffer, position)
                end = position + 4 + length
                if end > len(buffer):
                    break
                frame = buffer[position + 4: end]
                if b'"ok":true' in frame:
                    acked += 1
                elif not frame.startswith(b'{"type":"Challenge"'):
                    failed += 1
                position = end
            del buffer[:position]
    elapsed = time.perf_counter() - start
    sock.close()
    return elapsed, failed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(args, run_dir: Path) -> dict:
    """One run: a fresh cluster, its floors, one write at a time, then many in flight."""
    tick_ms = 10.0
    election_ticks = max(2, round(args.election_ms / tick_ms))
    supervisor = Supervisor(run_dir, nodes=3, fsync="always", fresh=True, cluster_file=False, tick_ms=tick_ms,
                            election_ticks=election_ticks).start()
    sent: dict[int, tuple[float, float]] = {}  # one-at-a-time writes: index -> wall clock at send, at answer
    try:
        leader = supervisor.wait_for_leader(15.0)
        if not leader:
            raise RuntimeError("no leader elected within 15 s")
        port = supervisor.nodes[leader].port
        floors = Floors(supervisor.nodes[leader].data_dir)
        latencies: list[float] = []
        busy = 0.0
        try:
            with NodeClient("127.0.0.1", port, timeout=10.0) as client:
                commit_latencies(client, 50)  # warm up
                rounds = 20
                for _ in range(rounds):
                    floors.sample(max(1, args.samples // rounds))
                    started = time.perf_counter()
                    latencies += commit_latencies(client, max(1, args.samples // rounds), 50 + len(latencies), sent)
                    busy += time.perf_counter() - started
            reads = read_latencies(port, 50, args.samples, floors)  # (the floors sampled between the reads too)
        finally:
            floors.close()
        payload = "p" * args.payload_bytes
        frames = [codec.encode(ClientWrite(request=f"t{i}", payload=payload)) for i in range(args.total)]
        pids = {name: node.pid for name, node in supervisor.nodes.items()}
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        elapsed, failed = pipelined(port, frames, args.in_flight, args.per_send)
        cpu_after = {name: cpu_seconds(pid) for name, pid in pids.items()}
        committed = args.total - failed
        cpu_us = {name: (cpu_after[name] - cpu_before[name]) / max(1, committed) * 1e6 for name in pids}
    finally:
        supervisor.stop()  # the nodes' traces are complete from here on
    split = latency_split(run_dir, supervisor.start_time, leader, sent) if sent else [float("nan")] * 8
    return {"fsync_ms": statistics.median(floors.fsyncs) * 1e3,
            "round_trip_ms": statistics.median(floors.round_trips) * 1e3,
            "p50_ms": percentile(latencies, 0.50) * 1e3, "p99_ms": percentile(latencies, 0.99) * 1e3,
            "marks_ms": [mark * 1e3 for mark in split[:-1]], "overlap_ms": split[-1] * 1e3, "serial_per_s": len(latencies) / busy,
            "pipelined_per_s": committed / elapsed, "failed": failed,
            "leader_cpu_us": cpu_us[leader],
            "follower_cpu_us": [cpu_us[name] for name in pids if name != leader],
            "election_ms": election_ticks * tick_ms, **reads}


PEERS = {"PySyncObj": (pysyncobj_peer, "pip install '.[bench]'"),
         "etcd": (etcd_peer, "apt-get install etcd-server, and pip install '.[bench]' for its client (grpcio)")}
# What a peer's figures do not say by themselves.
PEER_NOTES = {"etcd": "its pipelined rate is its Python gRPC client's (futures on one channel; grpc.aio does no "
                      "better here), not etcd's own: compare the one-at-a-time latency"}


def run_peer(name: str, args, root: Path) -> dict | None:
    """One run of a peer on the same disk; None, having said why in one line, when it cannot run here."""
    module, install = PEERS[name]
    extra = {"directory": str(root)} if name == "etcd" else {}
    try:
        return module.run(samples=args.samples, total=args.peer_total or args.total, in_flight=args.in_flight,
                          payload_bytes=args.payload_bytes, **extra)
    except (ImportError, RuntimeError) as exc:
        print(f"peer: {name} not run ({exc}); to run it: {install}", flush=True)
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs, each on a fresh cluster; medians are judged")
    parser.add_argument("--samples", type=int, default=400, help="floor samples and one-at-a-time writes")
    parser.add_argument("--total", type=int, default=100_000, help="writes in the pipelined run")
    parser.add_argument("--in-flight", type=int, default=4000, help="writes in flight at once")
    parser.add_argument("--per-send", type=int, default=500, help="frames per send in the pipelined run")
    parser.add_argument("--payload-bytes", type=int, default=16)
    parser.add_argument("--election-ms", type=float, default=1000.0,
                        help="minimum election timeout (default 1000 ms, the lab's default is 300 ms): fsync "
                             "stalls on a shared disk must not depose the leader in the middle of the run")
    parser.add_argument("--peer", action="append", choices=sorted(PEERS),
                        help="run only this peer (repeatable; default: both)")
    parser.add_argument("--no-peer", action="store_true", help="run no peer")
    parser.add_argument("--peer-total", type=int, default=0,
                        help="writes in a peer's pipelined run (default: --total)")
    parser.add_argument("--dir", help="run directory (default: a new temporary directory)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)
    peers = [] if args.no_peer else (args.peer or ["PySyncObj", "etcd"])

    root = Path(args.dir or tempfile.mkdtemp(prefix="hwm-bench-"))  # a temporary one is removed at the end
    runs = []
    peer_runs: dict[str, list[dict]] = {name: [] for name in peers}
    try:
        for number in range(args.runs):  # the lab and its peers in turn, so that each run sees the same machine
            run = measure(args, root / f"run{number + 1}")
            runs.append(run)
            print(f"run {number + 1}: floors fsync {run['fsync_ms']:.3f} ms, round trip {run['round_trip_ms']:.3f} ms; "
                  f"p50 {run['p50_ms']:.3f} ms, p99 {run['p99_ms']:.3f} ms; {run['pipelined_per_s']:,.0f} entries/s "
                  f"({run['failed']} failed); CPU per entry: leader {run['leader_cpu_us']:.1f} us, followers "
                  f"{' + '.join(f'{x:.1f}' for x in run['follower_cpu_us'])} us; load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            for name in list(peer_runs):
                figures = run_peer(name, args, root)
                if figures is None:
                    del peer_runs[name]
                    continue
                peer_runs[name].append(figures)
                print(f"run {number + 1}: {name} p50 {figures['p50_ms']:.3f} ms, p99 {figures['p99_ms']:.3f} ms; "
                      f"{figures['pipelined_per_s']:,.0f} entries/s pipelined ({figures['failed']} failed)",
                      flush=True)
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    median = {key: statistics.median(run[key] for run in runs) for key in
              ("fsync_ms", "round_trip_ms", "p50_ms", "p99_ms", "serial_per_s", "pipelined_per_s", "leader_cpu_us",
               "overlap_ms")}
    median["floor_ms"] = statistics.median(run["fsync_ms"] + run["round_trip_ms"] for run in runs)
    marks = [statistics.median(run["marks_ms"][i] for run in runs) for i in range(len(LEG_MARKS))]
    peer = {name: {key: statistics.median(r[key] for r in figures) for key in figures[0]}
            for name, figures in peer_runs.items() if figures}

    limit = 3 * median["floor_ms"]
    checks = [
        ("commit latency p50", median["p50_ms"], limit, "ms", lambda v, t: v <= t,
         f"<= 3 x (fsync + round trip) = {limit:.3f} ms"),
        ("pipelined throughput", median["pipelined_per_s"], 60_000, "entries/s", lambda v, t: v >= t,
         ">= 60,000 entries/s"),
        ("leader CPU per committed entry", median["leader_cpu_us"], 12.0, "us", lambda v, t: v <= t, "<= 12 us"),
        ("pipelined vs one at a time", median["pipelined_per_s"] / median["serial_per_s"], 30, "x",
         lambda v, t: v >= t, ">= 30 x"),
        ("the leader's fsync and a follower's overlap", median["overlap_ms"], 0.0, "ms", lambda v, t: v > t,
         "> 0 ms, the median write's two fsyncs under way at once"),
    ]
    if "PySyncObj" in peer:
        checks.append(("pipelined throughput / PySyncObj's", median["pipelined_per_s"] /
                       peer["PySyncObj"]["pipelined_per_s"], 3.0, "x", lambda v, t: v >= t, ">= 3 x"))
    if "etcd" in peer:
        checks.append(("commit latency p50 / etcd's", median["p50_ms"] / peer["etcd"]["p50_ms"], 0.8, "x",
                       lambda v, t: v <= t, "<= 0.8 x"))
    print(f"cluster: 3 nodes, fsync always, loopback, traces on; election timeout {runs[0]['election_ms']:g}-"
          f"{2 * runs[0]['election_ms']:g} ms; {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end; medians of {len(runs)} runs")
    print(f"floor    append + fsync (median)              {median['fsync_ms']:8.3f} ms")
    print(f"floor    loopback round trip (median)         {median['round_trip_ms']:8.3f} ms")
    print(f"latency  commit p50, one write at a time      {median['p50_ms']:8.3f} ms")
    print(f"latency  commit p99, one write at a time      {median['p99_ms']:8.3f} ms")
    floors = {"half": median["round_trip_ms"] / 2, "fsync": median["fsync_ms"]}
    floor_words = {"half": "half a round trip", "fsync": "append + fsync"}
    print("legs     the median write, from the trace's times (ms after the client's send; each leg beside its floor):")
    for what, start, end, floor in LEGS:
        print(f"           {what:<36} {marks[start]:6.3f} -> {marks[end]:6.3f}  {marks[end] - marks[start]:6.3f} ms"
              f"  (floor {floors[floor]:.3f}, {floor_words[floor]})")
    print(f"           the leader's fsync and the follower's ran side by side for {median['overlap_ms']:.3f} ms "
          f"(median per write); the client had its answer at {marks[-1]:.3f} ms")
    print(f"rate     one write at a time               {median['serial_per_s']:10,.0f} entries/s")
    print(f"rate     pipelined ({args.in_flight} in flight)      {median['pipelined_per_s']:10,.0f} entries/s")
    print(f"cpu      leader per committed entry        {median['leader_cpu_us']:10.1f} us")
    for name, figures in peer.items():
        print(f"peer     {name}: p50 {figures['p50_ms']:.3f} ms, p99 {figures['p99_ms']:.3f} ms, "
              f"{figures['pipelined_per_s']:,.0f} entries/s pipelined, leader CPU "
              f"{figures['leader_cpu_us_per_entry']:.1f} us per entry (medians of {len(peer_runs[name])} runs)")
        if name in PEER_NOTES:
            print(f"         ({PEER_NOTES[name]})")
        print(f"ratio    lab / {name}: p50 {median['p50_ms'] / figures['p50_ms']:.2f} (lower is better), "
              f"throughput {median['pipelined_per_s'] / figures['pipelined_per_s']:.2f} (higher is better), "
              f"leader CPU per entry {median['leader_cpu_us'] / max(figures['leader_cpu_us_per_entry'], 1e-9):.2f} "
              f"(lower is better)")
    print_reads(runs, median)
    for name, value, target, unit, ok, words in checks:
        passed = ok(value, target)
        miss = "" if passed or not target else f"; missed by {abs(value - target) / target:.0%}"
        shown = f"{value:,.0f} {unit}" if unit == "entries/s" else f"{value:.3f} {unit}" if unit == "ms" else \
            f"{value:.2f} {unit}"
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {shown} (target {words}{miss})")
    if args.json:
        print(json.dumps({"runs": runs, "median": median, "marks_ms": dict(zip(LEG_MARKS, marks)), "peer": peer,
                          "peer_runs": peer_runs, "load_average": os.getloadavg(),
                          "passed": all(c[4](c[1], c[2]) for c in checks)}))
    return 0 if all(c[4](c[1], c[2]) for c in checks) else 1


# ---- reads: a plain read and a linearizable one (ReadIndex), beside the round trip floor -------------------------


def read_latencies(port: int, index: int, count: int, floors: Floors) -> dict:
    """Reads one at a time straight to the leader, a plain one and a linearizable one in turn, of an index at or
    below its mark, with the floors sampled between them: each kind's p50, in ms. A linearizable read costs the
    leader one round of messages to its followers (and the first answer of a majority) more than a plain one."""
    plain: list[float] = []
    linear: list[float] = []
    with NodeClient("127.0.0.1", port, timeout=10.0) as client:
        for k in range(count + 20):  # the first 20 of each warm up
            for kept, linearizable in ((plain, False), (linear, True)):
                start = time.perf_counter()
                answer = client.read(index, linearizable=linearizable)
                if k >= 20:
                    kept.append(time.perf_counter() - start)
                if not answer.ok:
                    raise RuntimeError(f"read of index {index} refused: {answer.error}")
            if k % 20 == 19:
                floors.sample(1)
    return {"read_p50_ms": percentile(plain, 0.50) * 1e3, "linearizable_read_p50_ms": percentile(linear, 0.50) * 1e3,
            "linearizable_read_p99_ms": percentile(linear, 0.99) * 1e3}


def print_reads(runs: list[dict], median: dict) -> None:
    """The reads' lines (medians of the runs) beside the round trip floor measured in the same runs. No target: the
    figure the lesson needs is what a linearizable read costs over a plain one, in round trips."""
    plain = statistics.median(run["read_p50_ms"] for run in runs)
    linear = statistics.median(run["linearizable_read_p50_ms"] for run in runs)
    floor = median["round_trip_ms"]
    print(f"read     plain p50, one read at a time        {plain:8.3f} ms")
    print(f"read     linearizable p50 (ReadIndex)         {linear:8.3f} ms  (+{linear - plain:.3f} ms over a plain "
          f"read = {(linear - plain) / floor:.1f} x the round trip floor {floor:.3f} ms; p99 "
          f"{statistics.median(run['linearizable_read_p99_ms'] for run in runs):.3f} ms)")


if __name__ == "__main__":
    sys.exit(main())
