"""Measure write-ahead log append throughput per fsync policy against the disk's own floor, in one run.

    python bench/wal.py [--records N] [--dir DIR] [--payload-bytes B]

The floor is raw `os.write` + `os.fsync` of one record-sized buffer per record, on the same file system.
Targets: `always` within 1.5x of the floor per record; `batch` (append 100 records, then sync) at least 30x the
throughput of `always`. Prints PASS/FAIL per target and always exits 0: it is a measurement, not a gate.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lab.core.messages import Entry  # noqa: E402
from lab.ports.segments import HEADER  # noqa: E402
from lab.ports.wal import WriteAheadLog  # noqa: E402

ROUNDS = 5  # floor and `always` alternate, so drift in the disk's speed hits both alike
WARMUP = 20
GROUP = 100  # records per fsync for `batch`
ALWAYS_TARGET = 1.5  # at most this many times the floor's time per record
BATCH_TARGET = 30.0  # at least this many times the throughput of `always`


def make_entries(count: int, payload_bytes: int) -> list[Entry]:
    return [Entry(index=i, generation=1, payload=f"{i:08d}".ljust(payload_bytes, "x")) for i in range(1, count + 1)]


class Floor:
    """Raw writes of one prebuilt record-sized buffer, each followed by an fsync."""

    def __init__(self, path: str, record_bytes: int):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.buffer = b"r" * record_bytes

    def run(self, count: int) -> float:
        fd, buffer, write, fsync = self.fd, self.buffer, os.write, os.fsync
        started = time.perf_counter()
        for _ in range(count):
            write(fd, buffer)
            fsync(fd)
        return time.perf_counter() - started

    def close(self) -> None:
        os.close(self.fd)


class PerRecord:
    """WAL appends of one record each (`always` fsyncs inside every append)."""

    def __init__(self, wal: WriteAheadLog, entries: list[Entry]):
        self.wal, self.entries, self.next = wal, entries, 0

    def run(self, count: int) -> float:
        append, batches = self.wal.append, [[entry] for entry in self.entries[self.next : self.next + count]]
        self.next += count
        started = time.perf_counter()
        for batch in batches:
            append(batch)
        self.wal.sync()
        return time.perf_counter() - started


def run_grouped(wal: WriteAheadLog, entries: list[Entry], one_call: bool) -> float:
    """`batch` group commit: GROUP records, then one sync; as one append call or GROUP single-record calls."""
    if one_call:
        groups = [[entries[i : i + GROUP]] for i in range(0, len(entries), GROUP)]
    else:
        groups = [[[entry] for entry in entries[i : i + GROUP]] for i in range(0, len(entries), GROUP)]
    append, sync = wal.append, wal.sync
    started = time.perf_counter()
    for group in groups:
        for batch in group:
            append(batch)
        sync()
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000, help="records per measurement (default 5000)")
    parser.add_argument("--dir", help="directory to write in (default: a temporary directory, removed afterwards)")
    parser.add_argument("--payload-bytes", type=int, default=64, help="payload size of each record (default 64)")
    args = parser.parse_args(argv)
    records = max(args.records, ROUNDS * GROUP)
    records -= records % (ROUNDS * GROUP)
    record_bytes = HEADER.size + args.payload_bytes

    base = tempfile.mkdtemp(prefix="wal-bench-", dir=args.dir)
    try:
        entries = make_entries(records + WARMUP, args.payload_bytes)
        per_round = records // ROUNDS

        # Floor and `always` alternate in rounds.
        floor = Floor(os.path.join(base, "floor.raw"), record_bytes)
        always_wal = WriteAheadLog(os.path.join(base, "always"), fsync="always")
        always = PerRecord(always_wal, entries)
        floor.run(WARMUP)
        always.run(WARMUP)
        floor_seconds = always_seconds = 0.0
        for _ in range(ROUNDS):
            floor_seconds += floor.run(per_round)
            always_seconds += always.run(per_round)
        floor.close()
        always_wal.close()

        timed = entries[:records]
        results = {}
        for name, one_call in (("batch", True), ("batch_calls", False)):
            with WriteAheadLog(os.path.join(base, name), fsync="batch") as wal:
                results[name] = run_grouped(wal, timed, one_call)
        with WriteAheadLog(os.path.join(base, "never"), fsync="never") as wal:
            results["never"] = PerRecord(wal, timed).run(records)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    def row(label: str, seconds: float, note: str = "") -> None:
        print(f"  {label:<44} {records / seconds:>12,.0f} {seconds / records * 1e6:>11.2f}  {note}")

    print(f"WAL append throughput: {records} records of {record_bytes} bytes ({args.payload_bytes}-byte payload)")
    print(f"  {'':<44} {'records/s':>12} {'us/record':>11}")
    row("floor: os.write + os.fsync per record", floor_seconds)
    row("always: append(1 record) (fsync each)", always_seconds, f"{always_seconds / floor_seconds:.2f}x floor")
    row(f"batch: append({GROUP} records) + sync()", results["batch"])
    row(f"batch: {GROUP} x append(1 record) + sync()", results["batch_calls"], "(information)")
    row("never: append(1 record) (no fsync)", results["never"], "(information)")

    always_ratio = always_seconds / floor_seconds
    batch_ratio = always_seconds / results["batch"]
    calls_ratio = always_seconds / results["batch_calls"]
    print("targets:")
    print(
        f"  always per record <= {ALWAYS_TARGET}x floor: {always_ratio:.2f}x"
        f"  {'PASS' if always_ratio <= ALWAYS_TARGET else 'FAIL'}"
    )
    print(
        f"  batch ({GROUP} records per fsync) >= {BATCH_TARGET:.0f}x always throughput: {batch_ratio:.1f}x"
        f"  {'PASS' if batch_ratio >= BATCH_TARGET else 'FAIL'}"
        f"  (as {GROUP} single-record appends: {calls_ratio:.1f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
