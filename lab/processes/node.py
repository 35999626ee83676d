"""A node process: one replica, its write-ahead log and durable state on disk, framed JSON on one TCP port.

A thin single-threaded loop: read bytes -> decode -> replica step -> the driver applies the output
(lab.ports.driver: persist, send, trace, answer) -> repeat. Run `python -m lab.processes.node --id A --nodes A,B,C
--data-dir DIR` (the supervisor does it for you); `--help` lists the options. Port 0 (the default) picks a free
port; the node prints it and writes it to its ready file.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import random
import signal
import sys
import time
from dataclasses import dataclass, field

from lab.core import guard
from lab.core import impl as impl_module
from lab.core.config import FSYNC_POLICIES, PRE_VOTE, TIMING, TRUNCATION_STRATEGIES, check_choice
from lab.core.messages import ControlReply, Event
from lab.core.replica import Replica
from lab.ports import codec
from lab.ports.driver import ReadyDriver
from lab.ports.disk_faults import DiskFaults, failure, mark
from lab.ports.state import FileState, StateError, next_boot
from lab.ports.tcp import CONTROL, PEER, READ, Network, TcpTransport, read_secret
from lab.ports.trace import TraceFile, TraceOff
from lab.ports.segments import SEGMENT_BYTES
from lab.ports.wal import WalCorruption, WriteAheadLog
from lab.core.events import LOG_SNAPSHOT, NODE_STOPPED, WAL_RECOVERED

log = logging.getLogger("lab.node")

MAX_WRITES_PER_STEP = 1024  # client writes taken into one propose: ticks and peers are never starved by a flood
BACKLOG_LIMIT = 4  # stop reading clients while more than this many steps' worth of writes wait
NETWORK_CHECK_SECONDS = 0.02
HWM_CHECKPOINT_SECONDS = 0.1
PARENT_CHECK_SECONDS = 0.5
MAX_CATCHUP_TICKS = 3  # after a pause, a node does not replay every tick it missed
EXIT_REPLICA_FAILED = 70
EXIT_REASON_FILE = "exit_reason"  # space set aside at start, so that a node on a full disk can still say why it stopped
EXIT_REASON_BYTES = 512
READ_ONLY_OPS = ("status", "log", "ping")  # anyone may ask these; the rest change the node: the supervisor only


@dataclass
class NodeConfig:
    node_id: str
    nodes: list[str]
    data_dir: str
    run_dir: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    peers: dict[str, tuple[str, int]] = field(default_factory=dict)
    network_file: str | None = None
    impl: str = "solutions"
    fsync: str = "always"
    truncation: str = "generation"
    seed: int = 0
    start_time: float | None = None
    tick_ms: float = TIMING.tick_ms
    election_ticks: int = TIMING.election_ticks
    heartbeat_ticks: int = TIMING.heartbeat_ticks
    write_timeout_ticks: int = TIMING.write_timeout_ticks
    max_batch: int = TIMING.max_batch
    max_frame: int = codec.MAX_FRAME
    segment_bytes: int = SEGMENT_BYTES
    writeback_ms: float = 500.0
    hold_ticks: bool = False
    parent_pid: int | None = None
    ready_file: str | None = None
    trace: bool = True
    secret_file: str | None = None  # the cluster's secret (the supervisor writes it, mode 0600)
    repair: bool = False  # start even on a log damaged in the middle (keeping the valid prefix), or a bad boot file
    pre_vote: bool = PRE_VOTE
    disk_full: bool = False  # start with the storage fault `disk-full` on (the supervisor restarts a node so)
    limit: float = guard.DEFAULT_LIMIT  # seconds one call of the implementation's functions may take


FAULT_FILE = "fault.json"  # in the data directory: the student's fault that stopped this node (its exit reason)


class WallClock:
    def __init__(self, start: float):
        self.start = start

    def now(self) -> float:
        return time.time() - self.start


class Node:
    def __init__(self, cfg: NodeConfig):
        if cfg.node_id not in cfg.nodes:
            raise ValueError(f"node {cfg.node_id!r} is not one of {cfg.nodes}")
        check_choice("fsync", cfg.fsync, FSYNC_POLICIES)
        check_choice("truncation", cfg.truncation, TRUNCATION_STRATEGIES)
        self.cfg = cfg
        self.id = cfg.node_id
        os.makedirs(cfg.data_dir, exist_ok=True)
        run_dir = cfg.run_dir or cfg.data_dir
        os.makedirs(run_dir, exist_ok=True)
        self.disks = DiskFaults(full=cfg.disk_full)
        self.disks.before_write("writing the boot counter")
        self._reason_fd = _reserve(os.path.join(cfg.data_dir, EXIT_REASON_FILE))
        self.boot = next_boot(cfg.data_dir, os.path.join(run_dir, f"events-{self.id}.jsonl") if cfg.repair else None)
        self.impl = guard.guarded(impl_module.load(cfg.impl), cfg.limit)
        self.wal = WriteAheadLog(os.path.join(cfg.data_dir, "wal"), fsync=cfg.fsync,
                                 segment_bytes=cfg.segment_bytes, impl=self.impl, repair=cfg.repair)
        self.state = FileState(cfg.data_dir)
        self.wal.faults = self.state.faults = self.disks
        hint = self.state.load_high_water_mark()
        recovery = self.wal.recovery
        # After losing entries from the middle of its log, the node may lack committed entries: it neither votes
        # nor counts toward the mark until it holds again everything up to the mark it had.
        self.catching_up_to = hint if recovery is not None and recovery.mid_log and hint > self.wal.log_end else 0
        self.replica = Replica(
            node_id=self.id, nodes=list(cfg.nodes), impl=self.impl,
            rng=random.Random(f"{cfg.seed}-{self.id}-{self.boot}"),
            hard_state=self.state.load(), log=list(self.wal.entries()), high_water_mark=hint,
            truncation=cfg.truncation, election_ticks=cfg.election_ticks, heartbeat_ticks=cfg.heartbeat_ticks,
            max_batch=cfg.max_batch, write_timeout_ticks=cfg.write_timeout_ticks, pre_vote=cfg.pre_vote,
            catching_up_to=self.catching_up_to,
        )
        self.transport = TcpTransport(self.id, list(cfg.nodes), host=cfg.host, port=cfg.port,
                                      secret=read_secret(cfg.secret_file), max_frame=cfg.max_frame, seed=cfg.seed)
        self.transport.configure(Network(peers=dict(cfg.peers)))
        self.port = self.transport.port
        self.start_time = cfg.start_time if cfg.start_time is not None else time.time()
        trace = TraceFile(run_dir, self.id) if cfg.trace else TraceOff()
        self.driver = ReadyDriver(self.id, log=self.wal, state=self.state, transport=self.transport, trace=trace,
                                  clock=WallClock(self.start_time), boot=self.boot, replica=self.replica)
        self.network_stamp = None
        self.hold_ticks = cfg.hold_ticks
        self.base_tick = cfg.tick_ms / 1000.0
        self.tick_seconds = self.base_tick
        self.next_tick = time.monotonic() + self.tick_seconds
        self.stopping: str | None = None

    # ---- life cycle ------------------------------------------------------------------------------------------

    def run(self) -> int:
        try:
            self._start()
        except OSError as exc:
            if not failure(exc):
                raise
            self._fail_stop(exc)
        while self.stopping is None:
            self._iterate()
        self._stop(self.stopping)
        return 0

    def _start(self) -> None:
        now = time.monotonic()
        self._check_network(force=True)
        recovery = self.wal.recovery
        if recovery is not None and recovery.first_bad_index is not None:
            what = "was repaired: it lost the entries" if recovery.mid_log else "lost its torn tail"
            log.warning("node %s: the write-ahead log %s from index %s (%s)", self.id, what,
                        recovery.first_bad_index, recovery.reason)
        if recovery is not None:
            self.driver.emit(Event(WAL_RECOVERED, {
                "gen": self.replica.generation, "first_bad_index": recovery.first_bad_index,
                "dropped_bytes": recovery.dropped_bytes, "reason": recovery.reason, "repaired": recovery.mid_log,
                "log_end": self.wal.log_end, "catching_up_to": self.catching_up_to or None}))
        self._apply([self.replica.start()])
        self._write_ready_file()
        print(f"node {self.id} (boot {self.boot}) listening on {self.cfg.host}:{self.port}", flush=True)
        self.next_tick = now + self.tick_seconds
        self.next_checkpoint = now + HWM_CHECKPOINT_SECONDS
        self.next_writeback = now + self.cfg.writeback_ms / 1000.0 if self.cfg.writeback_ms > 0 else None
        self.next_network_check = now + NETWORK_CHECK_SECONDS
        self.next_parent_check = now + PARENT_CHECK_SECONDS

    def request_stop(self, reason: str) -> None:
        if self.stopping is None:
            self.stopping = reason

    def _stop(self, reason: str) -> None:
        """Orderly stop: a final log snapshot, the mark checkpointed, the log closed (flushed and synced)."""
        try:
            self._stop_writing(reason)
        except OSError as exc:
            if not failure(exc):
                raise
            self._fail_stop(exc)

    def _stop_writing(self, reason: str) -> None:
        self._snapshot()
        self.driver.emit(Event(NODE_STOPPED, {"gen": self.replica.generation, "reason": reason}))
        self.state.hint_high_water_mark(self.replica.high_water_mark)
        self.state.checkpoint()
        self.driver.trace.close()
        self.wal.close()
        self.transport.shutdown()

    def _write_ready_file(self) -> None:
        path = self.cfg.ready_file or os.path.join(self.cfg.data_dir, "node.json")
        info = {"node": self.id, "pid": os.getpid(), "host": self.cfg.host, "port": self.port, "boot": self.boot}
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(info, f)
        os.replace(tmp, path)

    # ---- the loop ------------------------------------------------------------------------------------------

    def _iterate(self) -> None:
        now = time.monotonic()
        transport = self.transport
        deadline = min(self.next_tick if not self.hold_ticks else now + 0.05, self.next_network_check)
        if transport.writes:
            deadline = now  # writes are waiting: poll, do not sleep
        # Back-pressure: with a long queue of writes, leave client bytes in the socket for later.
        saturated = len(transport.writes) > BACKLOG_LIMIT * MAX_WRITES_PER_STEP
        readys = []
        replica = self.replica
        for kind, src, item in transport.poll(deadline - now, read_clients=not saturated):
            if kind == CONTROL:
                self._control(src, item)
            elif kind == PEER:
                readys.append(self._step(replica.receive, src, item))
            elif kind == READ:
                readys.append(self._step(replica.read, item))
        if transport.writes:
            writes = transport.writes
            if len(writes) <= MAX_WRITES_PER_STEP:
                transport.writes = []
            else:
                writes, transport.writes = writes[:MAX_WRITES_PER_STEP], writes[MAX_WRITES_PER_STEP:]
            readys.append(self._step(replica.propose, writes))
        now = time.monotonic()
        if not self.hold_ticks and now >= self.next_tick:
            behind = int((now - self.next_tick) / self.tick_seconds) + 1
            self.next_tick += behind * self.tick_seconds
            for _ in range(min(behind, MAX_CATCHUP_TICKS)):
                readys.append(self._step(replica.tick))
        if readys:
            self._apply(readys)
        else:
            self.transport.flush()
        try:
            self._housekeeping(now)
        except OSError as exc:
            if not failure(exc):
                raise
            self._fail_stop(exc)

    def _step(self, step, *args):
        try:
            return step(*args)
        except Exception as exc:
            if not failure(exc):
                log.exception("node %s: the replica failed on %s%r; stopping (fail-stop)", self.id, step.__name__,
                              args)
            self._fail_stop(exc)

    def _apply(self, readys) -> None:
        try:
            self.driver.apply(readys)
        except Exception as exc:
            if not failure(exc):
                log.exception("node %s: applying the replica's output failed; stopping (fail-stop)", self.id)
            self._fail_stop(exc)

    def _fail_stop(self, exc: BaseException) -> None:
        """Stop at once. After a storage fault, write nothing more and retry nothing (a second fsync could report
        success for pages the kernel dropped): what was synced is what a restart recovers; nothing unsynced was
        acknowledged, since answers leave only after the sync. When the student's code stopped us, say which call
        (fault.json, which the supervisor reads as the exit reason)."""
        storage = failure(exc)
        if storage is None:
            fault = guard.fault_of(exc)
            if fault is not None:
                log.error("node %s stopped: %s", self.id, fault.sentence())
                path = os.path.join(self.cfg.data_dir, FAULT_FILE)
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    json.dump({"pid": os.getpid(), **fault.as_dict()}, f)
                os.replace(path + ".tmp", path)
            self.driver.trace.flush()
            self.wal.flush()
            os._exit(EXIT_REPLICA_FAILED)
        reason, code = storage
        try:
            said = f"{reason}\n{json.dumps(reason.as_record())}".encode("utf-8")  # the sentence, then its kind
            os.pwrite(self._reason_fd, (said if len(said) < EXIT_REASON_BYTES else str(reason).encode("utf-8")
                                        [: EXIT_REASON_BYTES - 1]), 0)
        except OSError:
            pass
        log.error("node %s stopped: %s [%s]", self.id, reason, exc)  # one clear line, the last of node.log (if it
        # fits), with the system's own words
        os._exit(code)

    # ---- control requests (supervisor, tests, dashboard) ---------------------------------------------------

    def _control(self, conn, message) -> None:
        op, args = message.op, message.args
        replica = self.replica
        try:
            if op not in READ_ONLY_OPS and conn.kind != "supervisor":
                raise PermissionError(f"control op {op!r} changes the node: only the supervisor may ask it")
            if op == "campaign":
                self._apply([self._step(replica.campaign)])
                result = {}
            elif op == "status":
                result = self._status(args.get("log", 20))
            elif op == "log":
                first = int(args.get("first", 1))
                last = int(args.get("last", replica.log.log_end))
                result = {"entries": [[e.index, e.generation, e.payload] for e in replica.log.slice(max(first, 1), last)]}
            elif op == "flush":
                self.wal.flush()
                self.state.hint_high_water_mark(replica.high_water_mark)
                self.state.checkpoint()
                self.driver.trace.flush()
                result = {"log_end": self.wal.log_end}
            elif op == "snapshot":
                self._snapshot()
                result = {"log_end": replica.log.log_end, "hwm": replica.high_water_mark}
            elif op == "network":
                self._check_network(force=True)
                result = {"cuts": sorted(self.transport.network.cuts)}
            elif op == "ticks":
                self.hold_ticks = bool(args.get("hold", False))
                self.next_tick = time.monotonic() + self.tick_seconds
                result = {"hold": self.hold_ticks}
            elif op == "stop":
                self.request_stop(str(args.get("reason", "stopped by a control request")))
                result = {}
            elif op == "ping":
                result = {"node": self.id, "boot": self.boot}
            elif op == "disk":  # storage faults (lab.ports.fault_vocabulary): disk-full, disk-ok, fsync-fail
                if "full" in args:
                    self.disks.full = bool(args["full"])
                    self.disks.fsync_fail = self.disks.fsync_fail and self.disks.full  # disk-ok: a sound disk
                if args.get("fsync_fail"):
                    self.disks.fsync_fail = True
                result = {"full": self.disks.full, "fsync_fail": self.disks.fsync_fail}
            else:
                raise ValueError(f"unknown control op {op!r} (known: campaign, status, log, flush, snapshot, "
                                 f"network, ticks, stop, ping, disk)")
            reply = ControlReply(request=message.request, ok=True, result=result)
        except Exception as exc:  # a bad request is answered, never a reason to stop serving
            log.warning("node %s: control %r refused: %s: %s", self.id, op, type(exc).__name__, exc)
            reply = ControlReply(request=message.request, ok=False, error=f"{type(exc).__name__}: {exc}")
        self.transport.reply(conn, reply)
        if op == "disk":
            self.transport.flush()  # answered before the fault can stop the node

    def _status(self, window) -> dict:
        replica = self.replica
        info = replica.status()
        end = replica.log.log_end
        if window != "all" and (type(window) is not int or window < 0):
            raise ValueError(f"log must be a count of entries or \"all\", not {window!r}")
        start = 1 if window == "all" else max(1, end - window + 1)
        info.update({
            "state": "running", "pid": os.getpid(), "port": self.port, "boot": self.boot,
            "fsync": self.cfg.fsync, "truncation": self.cfg.truncation, "impl": self.cfg.impl,
            "pre_vote": self.cfg.pre_vote,
            "log_start": start, "log": [[e.index, e.generation, e.payload] for e in replica.log.slice(start, end)],
            "durable_log_end": self.wal.log_end, "cuts": sorted([list(c) for c in self.transport.network.cuts]),
            "hold_ticks": self.hold_ticks, "tick_ms": round(self.tick_seconds * 1000, 3),
            "dropped": self.transport.dropped, "time": round(time.time() - self.start_time, 6),
            "recovery": None if self.wal.recovery is None else {
                "first_bad_index": self.wal.recovery.first_bad_index, "reason": self.wal.recovery.reason,
                "repaired": self.wal.recovery.mid_log},
        })
        return info

    def _snapshot(self) -> None:
        replica = self.replica
        self.driver.emit(Event(LOG_SNAPSHOT, {
            "gen": replica.generation, "hwm": replica.high_water_mark, "log_end": replica.log.log_end,
            "entries": [e.as_trace() for e in replica.log]}))

    # ---- housekeeping --------------------------------------------------------------------------------------

    def _housekeeping(self, now: float) -> None:
        if now >= self.next_checkpoint:
            self.next_checkpoint = now + HWM_CHECKPOINT_SECONDS
            self.state.checkpoint()
        if self.next_writeback is not None and now >= self.next_writeback:
            # fsync `never`: the OS writing back on its own, so a kill loses only the recent tail.
            self.next_writeback = now + self.cfg.writeback_ms / 1000.0
            self.wal.flush()
        if now >= self.next_network_check:
            self.next_network_check = now + NETWORK_CHECK_SECONDS
            self._check_network()
        if self.cfg.parent_pid and now >= self.next_parent_check:
            self.next_parent_check = now + PARENT_CHECK_SECONDS
            if os.getppid() != self.cfg.parent_pid:
                self.request_stop("the supervisor is gone")

    def _check_network(self, force: bool = False) -> None:
        """Reload the supervisor's network file (peer addresses, cut links, delays) when it changed."""
        path = self.cfg.network_file
        if not path:
            return
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self.network_stamp and not force:
            return
        try:
            with open(path, encoding="utf-8") as f:
                network = Network.from_json(json.load(f), self.id)
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            log.warning("node %s: cannot read %s: %s", self.id, path, exc)
            return
        self.network_stamp = stamp
        self.apply_network(network)

    def apply_network(self, network: Network) -> None:
        self.transport.configure(network)
        # Slow motion: stretch the tick so that an election round trip still fits in the election timeout.
        self.tick_seconds = max(self.base_tick, 4 * network.slowest_ms() / 1000.0 / self.cfg.election_ticks)
        # A shorter tick applies at once: the next tick is never later than one new tick from now.
        self.next_tick = min(self.next_tick, time.monotonic() + self.tick_seconds)


def _reserve(path: str) -> int:
    """An empty exit-reason file with its space allocated now, written in place if the node stops on a full disk."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.posix_fallocate(fd, 0, EXIT_REASON_BYTES)
    except OSError as exc:
        os.close(fd)
        raise mark(exc, "setting aside space for its exit reason")
    return fd


# ---- command line ------------------------------------------------------------------------------------------


def _peer(text: str) -> tuple[str, tuple[str, int]]:
    try:
        name, address = text.split("=", 1)
        host, port = address.rsplit(":", 1)
        return name, (host.strip("[]"), int(port))
    except ValueError:
        raise argparse.ArgumentTypeError(f"write a peer as NAME=HOST:PORT, not {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab.processes.node", description=__doc__.split("\n\n")[0])
    p.add_argument("--id", required=True, help="this node's name, e.g. A")
    p.add_argument("--nodes", required=True, help="every node of the cluster, comma separated, e.g. A,B,C")
    p.add_argument("--data-dir", required=True, help="where the write-ahead log and durable state live")
    p.add_argument("--run-dir", help="where events-<ID>.jsonl is appended (default: the data directory)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port to listen on; 0 (default) picks a free one")
    p.add_argument("--peer", type=_peer, action="append", default=[], metavar="NAME=HOST:PORT",
                   help="a peer's address (repeat for each); the network file overrides these")
    p.add_argument("--network", help="JSON file of peer addresses, cut links and delays, reloaded when it changes")
    p.add_argument("--impl", default="solutions", help="solutions (default), exercises, or a module name")
    p.add_argument("--fsync", choices=FSYNC_POLICIES, default="always")
    p.add_argument("--truncation", choices=TRUNCATION_STRATEGIES, default="generation")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start-time", type=float, help="the run's start (Unix time) that trace times count from")
    p.add_argument("--tick-ms", type=float, default=TIMING.tick_ms)
    p.add_argument("--election-ticks", type=int, default=TIMING.election_ticks)
    p.add_argument("--heartbeat-ticks", type=int, default=TIMING.heartbeat_ticks)
    p.add_argument("--write-timeout-ticks", type=int, default=TIMING.write_timeout_ticks)
    p.add_argument("--max-batch", type=int, default=TIMING.max_batch, help="entries per replication request")
    p.add_argument("--max-frame", type=int, default=codec.MAX_FRAME, help="largest frame accepted, in bytes")
    p.add_argument("--segment-bytes", type=int, default=SEGMENT_BYTES)
    p.add_argument("--writeback-ms", type=float, default=500.0,
                   help="fsync never: write the log buffer to the file this often (0: only when it fills)")
    p.add_argument("--hold-ticks", action="store_true", help="start with the clock stopped (no elections) "
                   "until a control request releases it")
    p.add_argument("--parent-pid", type=int, help="stop when this process (the supervisor) is gone")
    p.add_argument("--ready-file", help="where to write {pid, port, boot} once listening "
                   "(default DATA_DIR/node.json)")
    p.add_argument("--no-trace", action="store_true", help="write no trace (benchmarks of the lab without it)")
    p.add_argument("--secret-file", help="the cluster's secret, which peers and the supervisor prove they know")
    p.add_argument("--repair", action="store_true", help="start on a write-ahead log damaged in the middle, keeping "
                   "the valid prefix (the node then catches up before it votes), or on a damaged boot file")
    p.add_argument("--no-pre-vote", action="store_true", help="campaign without asking for pre-votes first")
    p.add_argument("--disk-full", action="store_true", help="start with the storage fault disk-full on: every "
                   "write fails with ENOSPC until the control op disk clears it")
    p.add_argument("--limit", type=float, default=guard.DEFAULT_LIMIT,
                   help="seconds one call of the implementation's functions may take (default 1)")
    p.add_argument("--log-level", default="INFO")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    nodes = [n.strip() for n in args.nodes.split(",") if n.strip()]
    cfg = NodeConfig(
        node_id=args.id, nodes=nodes, data_dir=args.data_dir, run_dir=args.run_dir, host=args.host,
        port=args.port, peers=dict(args.peer), network_file=args.network, impl=args.impl, fsync=args.fsync,
        truncation=args.truncation, seed=args.seed, start_time=args.start_time, tick_ms=args.tick_ms,
        election_ticks=args.election_ticks, heartbeat_ticks=args.heartbeat_ticks,
        write_timeout_ticks=args.write_timeout_ticks, max_batch=args.max_batch, max_frame=args.max_frame,
        segment_bytes=args.segment_bytes, writeback_ms=args.writeback_ms, hold_ticks=args.hold_ticks,
        parent_pid=args.parent_pid, ready_file=args.ready_file, trace=not args.no_trace,
        secret_file=args.secret_file, repair=args.repair, pre_vote=not args.no_pre_vote, disk_full=args.disk_full,
        limit=args.limit,
    )
    try:
        node = Node(cfg)
    except (ValueError, OSError, impl_module.ImplError, StateError, WalCorruption) as exc:
        storage = failure(exc)
        print(f"node {args.id}: cannot start: {storage[0] if storage else exc}", file=sys.stderr)
        return storage[1] if storage else 2
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda s, _f: node.request_stop(f"signal {signal.Signals(s).name}"))
    # A busy node makes many short-lived, acyclic values per entry: what it built at start is set aside, and the
    # cycle collector runs every 100,000 allocations instead of 700 (5% of a leader's instructions per entry).
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    return node.run()


if __name__ == "__main__":
    sys.exit(main())
