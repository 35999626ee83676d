"""The write-ahead log: what survives a torn write, a flipped bit, a truncation, a restart, and each fsync policy."""

from __future__ import annotations

import dataclasses
from pathlib import Path
import logging
import os
import shutil
import struct
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.interface import TruncationPlan
from lab.core.messages import Entry
from lab.ports.segments import HEADER, MAX_PAYLOAD, encode, segment_name
from lab.ports.wal import WalCorruption, WriteAheadLog
from diskutil import FsyncCounter

EXERCISES_NEEDED = (5,)  # with --impl exercises, skipped until these are started

SMALL_SEGMENT = 120  # a few records per segment


def make_entries(first: int, count: int, generation: int = 1) -> list[Entry]:
    # Payloads of varying length, some not ASCII, so records straddle segment limits at odd places.
    return [
        Entry(index=i, generation=generation, payload=f"m{i}-" + "é" * (i % 5) + "x" * (i % 7))
        for i in range(first, first + count)
    ]


def segment_files(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".wal"))


def copy_log(src, dst) -> str:
    shutil.copytree(src, dst)
    return str(dst)


def contents(directory, impl, **options) -> list[Entry]:
    """The log as a fresh process would find it (the writer may still be open: this is a second instance). It opens
    with fsync `never` unless told: a log opened otherwise syncs what it recovers, and the tests count the writer's."""
    wal = WriteAheadLog(directory, impl=impl, **{"fsync": "never", **options})
    try:
        return list(wal.entries())
    finally:
        wal.abandon()


# ---- writing and reading back -------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["always", "batch", "never"])
def test_entries_read_back_in_the_same_process_and_after_an_orderly_restart(tmp_path, impl, policy):
    written = make_entries(1, 40)
    with WriteAheadLog(tmp_path, fsync=policy, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        wal.append(written[:1])
        wal.append(written[1:25])
        for entry in written[25:]:
            wal.append([entry])
        assert wal.log_end == 40
        assert list(wal.entries()) == written
        assert list(wal.entries(17)) == written[16:]
        assert [wal.read(i) for i in (1, 17, 40)] == [written[0], written[16], written[39]]
    assert len(segment_files(tmp_path)) > 3, "small segments should have rolled"
    with WriteAheadLog(tmp_path, fsync=policy, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        assert wal.recovery is None
        assert wal.log_end == 40
        assert list(wal.entries()) == written


def test_segments_are_named_by_their_first_index_and_roll_at_segment_bytes(tmp_path, impl):
    with WriteAheadLog(tmp_path, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        wal.append(make_entries(1, 30))
    for name in segment_files(tmp_path):
        path = tmp_path / name
        data = path.read_bytes()
        _, _, first_index, _ = HEADER.unpack_from(data, 0)
        assert name == segment_name(first_index) == f"{first_index:020d}.wal"
        # A segment holds records until it has reached segment_bytes, never a record more.
        last_length = HEADER.unpack_from(data, _last_record_offset(data))[0] + HEADER.size
        assert len(data) - last_length < SMALL_SEGMENT


def _last_record_offset(data: bytes) -> int:
    offset = 0
    while True:
        length = HEADER.unpack_from(data, offset)[0]
        if offset + HEADER.size + length == len(data):
            return offset
        offset += HEADER.size + length


def test_record_layout_is_the_documented_header_then_utf8_payload(tmp_path, impl):
    import zlib

    with WriteAheadLog(tmp_path, impl=impl) as wal:
        wal.append([Entry(index=1, generation=7, payload="héllo")])
    data = (tmp_path / segment_name(1)).read_bytes()
    payload = "héllo".encode()
    crc = zlib.crc32(struct.pack("<QQ", 1, 7) + payload)
    assert data == struct.pack("<IIQQ", len(payload), crc, 1, 7) + payload


def test_appending_an_index_that_does_not_follow_log_end_is_refused_and_writes_nothing(tmp_path, impl):
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        wal.append(make_entries(1, 3))
        with pytest.raises(ValueError, match="next index is 4"):
            wal.append(make_entries(5, 1))
        with pytest.raises(ValueError, match="next index is 4"):
            wal.append(make_entries(3, 1))
        # A gap in the middle of a batch refuses the whole batch.
        with pytest.raises(ValueError, match="cannot append index 6"):
            wal.append(make_entries(4, 1) + make_entries(6, 1))
        assert wal.log_end == 3
    assert contents(tmp_path, impl) == make_entries(1, 3)


def test_read_outside_the_log_is_an_index_error(tmp_path, impl):
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        with pytest.raises(IndexError):
            wal.read(1)
        wal.append(make_entries(1, 2))
        for index in (0, 3, -1):
            with pytest.raises(IndexError):
                wal.read(index)
        assert wal.read(2) == make_entries(2, 1)[0]


def test_an_oversized_payload_is_refused(tmp_path, impl):
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        with pytest.raises(ValueError, match="over the maximum"):
            wal.append([Entry(index=1, generation=1, payload="x" * (MAX_PAYLOAD + 1))])
        assert wal.log_end == 0
    assert segment_files(tmp_path) == [], "nothing was written"


def test_a_closed_log_refuses_work_and_an_unknown_policy_is_refused(tmp_path, impl):
    wal = WriteAheadLog(tmp_path, impl=impl)
    wal.close()
    wal.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        wal.append(make_entries(1, 1))
    with pytest.raises(ValueError, match="fsync policy"):
        WriteAheadLog(tmp_path, fsync="sometimes", impl=impl)


@pytest.mark.parametrize("policy", ["always", "batch"])
@pytest.mark.parametrize("size", [1, 4])
def test_a_write_that_fails_halfway_leaves_the_log_as_the_disk_has_it(tmp_path, impl, monkeypatch, policy, size):
    wal = WriteAheadLog(tmp_path, fsync=policy, impl=impl)
    wal.append(make_entries(1, 3))
    real = os.write

    def disk_full(fd, data):
        real(fd, bytes(data[:10]))  # a torn record reaches the file
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(OSError):
        wal.append(make_entries(4, size))
    monkeypatch.undo()
    assert wal.log_end == 3
    assert wal.recovery is not None and wal.recovery.first_bad_index == 4 and wal.recovery.dropped_bytes == 10
    wal.append(make_entries(4, 2))
    wal.close()
    assert contents(tmp_path, impl) == make_entries(1, 5)


# ---- recovery: torn tails and flipped bits ------------------------------------------------------------------


@pytest.mark.parametrize("last_opens_a_segment", [False, True], ids=["mid-segment", "first-of-segment"])
def test_a_tail_torn_at_every_byte_of_the_last_record_keeps_every_earlier_record(tmp_path, impl, last_opens_a_segment):
    written = make_entries(1, 12)
    if last_opens_a_segment:
        written[10] = Entry(index=11, generation=1, payload="y" * SMALL_SEGMENT)  # 11 fills its segment
    base = tmp_path / "base"
    with WriteAheadLog(base, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        wal.append(written)
    last_file = base / segment_files(base)[-1]
    assert (last_file.name == segment_name(12)) == last_opens_a_segment
    size = last_file.stat().st_size
    last_record = len(encode(written[-1]))
    start = size - last_record
    for torn in range(last_record):  # keep `torn` bytes of the last record
        directory = copy_log(base, tmp_path / f"torn{torn}")
        os.truncate(os.path.join(directory, last_file.name), start + torn)
        with WriteAheadLog(directory, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
            assert list(wal.entries()) == written[:-1], f"torn at byte {torn}"
            assert wal.log_end == 11
            if torn == 0:
                assert wal.recovery is None  # ends exactly at a record boundary: nothing to cut
            else:
                assert wal.recovery.dropped_bytes == torn
                assert wal.recovery.first_bad_index == 12
            wal.append(written[-1:])  # and the log goes on from there
        assert contents(directory, impl) == written


def test_a_flipped_bit_in_the_middle_refuses_to_open_and_repair_keeps_the_prefix(tmp_path, impl):
    """Valid records follow the damaged one: not a torn tail. Without repair nothing is touched and the error names
    the file and offset; with repair the record and every later one go, and the earlier ones stay."""
    written = make_entries(1, 30)
    base = tmp_path / "base"
    with WriteAheadLog(base, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        wal.append(written)
        target = 14
        segment = wal._segment_holding(target)
        assert segment is not wal._segments[-1], "pick a record with later segments after it"
        path, offset = segment.path, segment.offsets[target]
        dropped = segment.size - offset + sum(s.size for s in wal._segments if s.first_index > target)
        later = [os.path.basename(s.path) for s in wal._segments if s.first_index > target]
    name = os.path.basename(path)
    record_length = len(encode(written[target - 1]))
    for bit in range(record_length * 8):
        directory = copy_log(base, tmp_path / f"bit{bit}")
        with open(os.path.join(directory, name), "r+b") as f:
            f.seek(offset + bit // 8)
            byte = f.read(1)[0]
            f.seek(offset + bit // 8)
            f.write(bytes([byte ^ (1 << bit % 8)]))
        before = {n: Path(directory, n).read_bytes() for n in segment_files(directory)}
        with pytest.raises(WalCorruption, match=f"{name} offset {offset} \\(index {target}\\).*--repair"):
            WriteAheadLog(directory, segment_bytes=SMALL_SEGMENT, impl=impl)
        assert {n: Path(directory, n).read_bytes() for n in segment_files(directory)} == before, f"bit {bit}"
        with WriteAheadLog(directory, segment_bytes=SMALL_SEGMENT, impl=impl, repair=True) as wal:
            assert list(wal.entries()) == written[: target - 1], f"bit {bit}"
            assert wal.recovery is not None and wal.recovery.first_bad_index == target
            assert wal.recovery.dropped_bytes == dropped and wal.recovery.mid_log
            assert wal.recovery.reason
            assert not set(later) & set(segment_files(directory)), "later segments are removed"


def test_recovery_is_logged_with_file_offset_bytes_and_first_index(tmp_path, impl, caplog):
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        wal.append(make_entries(1, 3))
    path = tmp_path / segment_name(1)
    size = path.stat().st_size
    os.truncate(path, size - 2)
    caplog.set_level(logging.WARNING, logger="lab.ports.wal")
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        dropped = len(encode(make_entries(3, 1)[0])) - 2
        assert wal.recovery.dropped_bytes == dropped
        assert wal.recovery.first_bad_index == 3
        assert "short payload" in wal.recovery.reason
    (message,) = [r.getMessage() for r in caplog.records if r.name == "lab.ports.wal"]
    offset = size - 2 - dropped
    assert segment_name(1) in message and f"offset {offset}" in message
    assert f"{dropped} bytes" in message and "index 3" in message
    assert path.stat().st_size == offset, "the torn tail is cut on disk"


def test_a_garbage_length_is_refused_without_reading_it(tmp_path, impl):
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        wal.append(make_entries(1, 2))
    with open(tmp_path / segment_name(1), "ab") as f:
        f.write(struct.pack("<IIQQ", MAX_PAYLOAD + 1, 0, 3, 1) + b"x" * 100)
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        assert wal.log_end == 2
        assert "exceeds the maximum" in wal.recovery.reason
        assert wal.recovery.dropped_bytes == HEADER.size + 100


def test_a_missing_middle_segment_cuts_the_log_before_the_gap(tmp_path, impl):
    with WriteAheadLog(tmp_path, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        wal.append(make_entries(1, 30))
    names = segment_files(tmp_path)
    assert len(names) >= 4
    os.remove(tmp_path / names[1])
    with WriteAheadLog(tmp_path, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        gap = int(names[1][:20])
        assert wal.log_end == gap - 1
        assert wal.recovery.first_bad_index == gap
        assert f"where {gap} was expected" in wal.recovery.reason
        assert segment_files(tmp_path) == names[:1]


def test_an_empty_log_and_stray_files_open_clean(tmp_path, impl):
    (tmp_path / "notes.txt").write_text("not a segment")
    (tmp_path / "junk.wal").write_text("not a segment name")
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        assert wal.recovery is None and wal.log_end == 0 and list(wal.entries()) == []
        wal.append(make_entries(1, 1))
    assert (tmp_path / "junk.wal").exists() and contents(tmp_path, impl) == make_entries(1, 1)


def test_damage_after_opening_is_reported_never_returned(tmp_path, impl):
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        wal.append(make_entries(1, 3))
        path = tmp_path / segment_name(1)
        data = bytearray(path.read_bytes())
        data[-1] ^= 0x01  # last payload byte of index 3
        path.write_bytes(bytes(data))
        assert wal.read(2) == make_entries(2, 1)[0]
        with pytest.raises(WalCorruption, match="index 3"):
            wal.read(3)
        with pytest.raises(WalCorruption):
            list(wal.entries())


# ---- truncation ---------------------------------------------------------------------------------------------


def test_truncation_inside_an_earlier_segment_removes_later_segments_and_survives_a_restart(tmp_path, impl):
    written = make_entries(1, 40)
    with WriteAheadLog(tmp_path, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        wal.append(written)
        firsts = [s.first_index for s in wal._segments]
        assert len(firsts) >= 5
        # An index inside the second segment, not its first.
        index = firsts[1] + 1
        assert index < firsts[2]
        wal.truncate_from(index)
        assert wal.log_end == index - 1
        assert list(wal.entries()) == written[: index - 1]
        assert segment_files(tmp_path) == [segment_name(f) for f in firsts[:2]]
        with pytest.raises(IndexError):
            wal.read(index)
    with WriteAheadLog(tmp_path, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        assert wal.recovery is None
        assert list(wal.entries()) == written[: index - 1]
        # The log continues with a new generation's entries, and rolls again.
        newer = make_entries(index, 20, generation=2)
        wal.append(newer)
        assert list(wal.entries()) == written[: index - 1] + newer
    assert contents(tmp_path, impl) == written[: index - 1] + newer


def test_truncation_at_a_segments_first_index_and_at_index_1(tmp_path, impl):
    written = make_entries(1, 30)
    with WriteAheadLog(tmp_path, segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        wal.append(written)
        third = wal._segments[2].first_index
        wal.truncate_from(third)
        assert wal.log_end == third - 1
        wal.append(make_entries(third, 2, generation=3))
        assert wal.read(third).generation == 3
        wal.truncate_from(1)
        assert wal.log_end == 0 and list(wal.entries()) == []
        wal.append(make_entries(1, 2, generation=4))
    assert contents(tmp_path, impl) == make_entries(1, 2, generation=4)


def test_truncation_beyond_the_end_is_a_no_op_and_below_1_is_refused(tmp_path, impl):
    with WriteAheadLog(tmp_path, impl=impl) as wal:
        wal.truncate_from(1)  # empty log
        wal.append(make_entries(1, 5))
        before = (tmp_path / segment_name(1)).read_bytes()
        wal.truncate_from(6)
        wal.truncate_from(100)
        assert wal.log_end == 5
        assert (tmp_path / segment_name(1)).read_bytes() == before
        for index in (0, -3):
            with pytest.raises(ValueError, match="indexes start at 1"):
                wal.truncate_from(index)
        assert wal.log_end == 5


def test_truncation_is_planned_by_the_implementations_plan_truncation(tmp_path, impl):
    calls = []

    def spy(segments, index):
        calls.append(([(os.path.basename(s.path), s.first_index, dict(s.offsets), s.size) for s in segments], index))
        return impl.plan_truncation(segments, index)

    with WriteAheadLog(tmp_path, segment_bytes=SMALL_SEGMENT, impl=dataclasses.replace(impl, plan_truncation=spy)) as wal:
        wal.append(make_entries(1, 12))
        on_disk = [scan_segment(tmp_path / name) for name in segment_files(tmp_path)]
        wal.truncate_from(7)
    # The plan is asked with every segment as it is on disk: name, first index, record offsets, size.
    assert calls == [(on_disk, 7)]
    assert len(on_disk) > 2


def scan_segment(path) -> tuple[str, int, dict[int, int], int]:
    data = path.read_bytes()
    offsets, offset = {}, 0
    while offset < len(data):
        length, _, index, _ = HEADER.unpack_from(data, offset)
        offsets[index] = offset
        offset += HEADER.size + length
    return path.name, int(path.name[:20]), offsets, len(data)


def test_a_plan_that_leaves_entries_behind_is_reported_and_the_log_believes_the_disk(tmp_path, impl):
    def forgetful(segments, index):
        plan = impl.plan_truncation(segments, index)
        return TruncationPlan(delete=(), cut_path=plan.cut_path, cut_offset=plan.cut_offset)  # deletes nothing

    with WriteAheadLog(tmp_path, segment_bytes=SMALL_SEGMENT, impl=dataclasses.replace(impl, plan_truncation=forgetful)) as wal:
        wal.append(make_entries(1, 30))
        index = wal._segments[1].first_index + 1
        with pytest.raises(RuntimeError, match="left the log ending at"):
            wal.truncate_from(index)
        # The later segments no longer follow the cut, so the rescan drops them: the log is a clean prefix.
        assert list(wal.entries()) == make_entries(1, index - 1)


def test_a_plan_cutting_between_records_is_refused_before_touching_the_disk(tmp_path, impl):
    def sloppy(segments, index):
        plan = impl.plan_truncation(segments, index)
        return TruncationPlan(delete=plan.delete, cut_path=plan.cut_path, cut_offset=plan.cut_offset + 1)

    with WriteAheadLog(tmp_path, impl=dataclasses.replace(impl, plan_truncation=sloppy)) as wal:
        wal.append(make_entries(1, 5))
        with pytest.raises(ValueError, match="not a record boundary"):
            wal.truncate_from(3)
        assert list(wal.entries()) == make_entries(1, 5)


def _sloppy(impl, how: str):
    """A plan_truncation that answers like `impl` but for one mistake; `moves_the_mark` also adds the offset it cuts
    at to the segments it was handed, so a check on the plan's own copy would find a record there."""
    def plan_truncation(segments, index):
        plan = impl.plan_truncation(segments, index)
        if how == "unknown_file":
            return TruncationPlan(delete=(*plan.delete, "elsewhere.wal"), cut_path=plan.cut_path,
                                  cut_offset=plan.cut_offset)
        cut = next(s for s in segments if s.path == plan.cut_path)
        cut.offsets[-1] = plan.cut_offset + 1
        return TruncationPlan(delete=plan.delete, cut_path=plan.cut_path, cut_offset=plan.cut_offset + 1)
    return plan_truncation


@pytest.mark.parametrize("how, refusal", [("unknown_file", "names files that are not segments: .*elsewhere.wal"),
                                          ("moves_the_mark", "at [0-9]+, which is not a record boundary")])
def test_the_file_log_and_its_memory_twin_refuse_a_bad_plan_alike(tmp_path, impl, how, refusal):
    """One check of a truncation plan (lab.ports.segments.check_plan), on the log's own segments, for both twins."""
    from lab.ports.memlog import MemoryLog

    sloppy = dataclasses.replace(impl, plan_truncation=_sloppy(impl, how))
    with WriteAheadLog(tmp_path, segment_bytes=SMALL_SEGMENT, impl=sloppy) as wal:
        memory = MemoryLog(segment_bytes=SMALL_SEGMENT, impl=sloppy)
        for log in (wal, memory):
            log.append(make_entries(1, 12))
            with pytest.raises(ValueError, match=refusal):
                log.truncate_from(7)
            assert list(log.entries()) == make_entries(1, 12), "nothing was removed"


# ---- fsync policies -----------------------------------------------------------------------------------------


def test_always_fsyncs_every_append_before_returning(tmp_path, impl, monkeypatch):
    fsyncs = FsyncCounter(monkeypatch)
    with WriteAheadLog(tmp_path, fsync="always", impl=impl) as wal:
        wal.append(make_entries(1, 1))
        assert fsyncs.directories >= 1, "the new segment's directory entry is made durable"
        for entry in make_entries(2, 9):
            before = fsyncs.files
            wal.append([entry])
            assert fsyncs.files == before + 1
            assert contents(tmp_path, impl) == make_entries(1, entry.index)
        before = fsyncs.files
        wal.sync()
        assert fsyncs.files == before


def test_always_writes_then_syncs_when_the_driver_splits_them(tmp_path, impl, monkeypatch):
    """The driver writes a leader's entries, sends them, then syncs: `write` makes no fsync, `sync` one for all."""
    fsyncs = FsyncCounter(monkeypatch)
    with WriteAheadLog(tmp_path, fsync="always", impl=impl) as wal:
        wal.append(make_entries(1, 1))
        before = fsyncs.files
        wal.write(make_entries(2, 1))
        wal.write(make_entries(3, 2))
        assert fsyncs.files == before
        wal.sync()
        assert fsyncs.files == before + 1
        wal.sync()  # nothing new
        assert fsyncs.files == before + 1
        assert contents(tmp_path, impl) == make_entries(1, 4)


def test_opening_a_log_syncs_what_a_crash_left_unsynced(tmp_path, impl, monkeypatch):
    """A leader counts itself on its recovered log: what a killed process left in the OS's cache is synced first."""
    with WriteAheadLog(tmp_path, fsync="always", impl=impl) as wal:
        wal.write(make_entries(1, 3))
        wal.abandon()  # killed before its sync
    fsyncs = FsyncCounter(monkeypatch)
    with WriteAheadLog(tmp_path, fsync="always", impl=impl) as wal:
        assert wal.log_end == 3 and fsyncs.files == 1
    fsyncs.files = 0
    with WriteAheadLog(tmp_path, fsync="never", impl=impl):
        assert fsyncs.files == 0


def test_batch_writes_on_append_and_fsyncs_once_per_sync(tmp_path, impl, monkeypatch):
    fsyncs = FsyncCounter(monkeypatch)
    with WriteAheadLog(tmp_path, fsync="batch", impl=impl) as wal:
        for entry in make_entries(1, 100):
            wal.append([entry])
        assert fsyncs.files == 0 and fsyncs.directories == 0
        # Written to the OS already: a process kill loses nothing.
        assert contents(tmp_path, impl) == make_entries(1, 100)
        wal.sync()
        assert fsyncs.files == 1 and fsyncs.directories == 1
        wal.sync()  # nothing new
        assert fsyncs.files == 1
        wal.append(make_entries(101, 5))
        wal.sync()
        assert fsyncs.files == 2


def test_batch_fsyncs_a_filled_segment_when_it_rolls(tmp_path, impl, monkeypatch):
    fsyncs = FsyncCounter(monkeypatch)
    with WriteAheadLog(tmp_path, fsync="batch", segment_bytes=SMALL_SEGMENT, impl=impl) as wal:
        wal.append(make_entries(1, 30))
        rolled = len(wal._segments) - 1
        assert fsyncs.files == rolled  # each finished segment; the current one waits for sync()
        wal.sync()
        assert fsyncs.files == rolled + 1


def test_never_keeps_recent_appends_in_process_until_flush_or_close_and_never_fsyncs(tmp_path, impl, monkeypatch):
    fsyncs = FsyncCounter(monkeypatch)
    wal = WriteAheadLog(tmp_path, fsync="never", impl=impl)
    wal.append(make_entries(1, 3))
    wal.flush()
    wal.append(make_entries(4, 2))
    wal.sync()  # does not write the buffer: a killed `never` node loses its tail
    assert wal.read(5) == make_entries(5, 1)[0]  # the writer itself sees everything
    assert contents(tmp_path, impl, fsync="never") == make_entries(1, 3)
    wal.abandon()  # killed
    assert contents(tmp_path, impl, fsync="never") == make_entries(1, 3)
    with WriteAheadLog(tmp_path, fsync="never", impl=impl) as wal:
        wal.append(make_entries(4, 1))
    assert contents(tmp_path, impl) == make_entries(1, 4), "an orderly close writes the buffer"
    assert fsyncs.files == 0 and fsyncs.directories == 0


def test_never_writes_the_buffer_once_it_passes_64_kib(tmp_path, impl):
    big = [Entry(index=i, generation=1, payload="p" * 1000) for i in range(1, 80)]
    wal = WriteAheadLog(tmp_path, fsync="never", impl=impl)
    for entry in big[:60]:
        wal.append([entry])
    assert contents(tmp_path, impl) == []  # about 61 KiB: still in process
    for entry in big[60:]:
        wal.append([entry])
    on_disk = contents(tmp_path, impl)
    assert 60 < len(on_disk) < len(big) and on_disk == big[: len(on_disk)]
    wal.abandon()


def test_never_reads_and_truncates_through_its_buffer(tmp_path, impl):
    wal = WriteAheadLog(tmp_path, fsync="never", segment_bytes=SMALL_SEGMENT, impl=impl)
    wal.append(make_entries(1, 20))
    assert list(wal.entries(3)) == make_entries(3, 18)
    wal.truncate_from(18)
    wal.append(make_entries(18, 4, generation=2))
    expected = make_entries(1, 17) + make_entries(18, 4, generation=2)
    assert [wal.read(i) for i in range(1, 22)] == expected
    wal.close()
    assert contents(tmp_path, impl) == expected


# ---- random operations against a list ----------------------------------------------------------------------

payloads = st.text(st.characters(codec="utf-8"), max_size=40)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(payloads, min_size=1, max_size=6), st.integers(1, 4)),
        st.tuples(st.just("truncate"), st.integers(-1, 40)),
        st.tuples(st.just("read"), st.integers(0, 40)),
        st.tuples(st.just("entries"), st.integers(0, 40)),
        st.tuples(st.just("sync")),
        st.tuples(st.just("flush")),
        st.tuples(st.just("restart")),
        st.tuples(st.just("kill")),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(policy=st.sampled_from(["always", "batch", "never"]), segment_bytes=st.sampled_from([40, 150, 4096]), ops=operations)
def test_random_operations_match_a_list(impl, policy, segment_bytes, ops):
    with tempfile.TemporaryDirectory() as directory:
        options = dict(fsync=policy, segment_bytes=segment_bytes, impl=impl)
        wal = WriteAheadLog(directory, **options)
        model: list[Entry] = []
        try:
            for op in ops:
                if op[0] == "append":
                    _, texts, generation = op
                    batch = [Entry(index=len(model) + 1 + k, generation=generation, payload=t) for k, t in enumerate(texts)]
                    wal.append(batch)
                    model += batch
                elif op[0] == "truncate":
                    if op[1] < 1:
                        with pytest.raises(ValueError):
                            wal.truncate_from(op[1])
                    else:
                        wal.truncate_from(op[1])
                        del model[op[1] - 1 :]
                elif op[0] == "read":
                    if 1 <= op[1] <= len(model):
                        assert wal.read(op[1]) == model[op[1] - 1]
                    else:
                        with pytest.raises(IndexError):
                            wal.read(op[1])
                elif op[0] == "entries":
                    assert list(wal.entries(op[1])) == model[max(op[1], 1) - 1 :]
                elif op[0] == "sync":
                    wal.sync()
                elif op[0] == "flush":
                    wal.flush()
                elif op[0] == "restart":
                    wal.close()
                    wal = WriteAheadLog(directory, **options)
                    assert wal.recovery is None
                elif op[0] == "kill":
                    wal.abandon()
                    wal = WriteAheadLog(directory, **options)
                    assert wal.recovery is None  # whole records only: the OS got no torn write
                    survived = list(wal.entries())
                    if policy == "never":
                        assert survived == model[: len(survived)]  # a prefix: the buffered tail is gone
                        model = survived
                    else:
                        assert survived == model
                assert wal.log_end == len(model)
            assert list(wal.entries()) == model
        finally:
            wal.close()
