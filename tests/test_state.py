"""Durable hard state and the high-water-mark hint: saved atomically, read back exactly, corruption named."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.messages import HardState
from lab.ports.state import HIGH_WATER_MARK_FILE, STATE_FILE, FileState, MemoryState, StateError
from diskutil import FsyncCounter


@pytest.fixture(params=["file", "memory"])
def state(request, tmp_path):
    return FileState(tmp_path) if request.param == "file" else MemoryState()


# ---- both twins ---------------------------------------------------------------------------------------------


def test_a_fresh_node_has_generation_0_no_vote_and_high_water_mark_0(state):
    assert state.load() == HardState(generation=0, voted_for=None)
    assert state.load_high_water_mark() == 0


def test_the_last_save_wins(state):
    state.save(HardState(generation=1, voted_for="a"))
    state.save(HardState(generation=2, voted_for=None))
    state.save(HardState(generation=3, voted_for="c"))
    assert state.load() == HardState(generation=3, voted_for="c")
    state.save_high_water_mark(5)
    state.save_high_water_mark(7)
    assert state.load_high_water_mark() == 7


@pytest.mark.parametrize(
    "bad", [HardState(generation=-1, voted_for=None), HardState(generation=1, voted_for=3), HardState(generation=True, voted_for=None)]
)
def test_nonsense_hard_state_is_refused_and_not_saved(state, bad):
    state.save(HardState(generation=4, voted_for="b"))
    with pytest.raises(ValueError):
        state.save(bad)
    assert state.load() == HardState(generation=4, voted_for="b")


@pytest.mark.parametrize("bad", [-1, "3", 2.0])
def test_a_nonsense_high_water_mark_is_refused(state, bad):
    state.save_high_water_mark(2)
    with pytest.raises(ValueError):
        state.save_high_water_mark(bad)
    assert state.load_high_water_mark() == 2


# ---- on disk ------------------------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(generation=st.integers(0, 2**63), voted_for=st.none() | st.text(), high_water_mark=st.integers(0, 2**63))
def test_a_restarted_node_reads_back_exactly_what_was_saved(tmp_path, generation, voted_for, high_water_mark):
    FileState(tmp_path).save(HardState(generation=generation, voted_for=voted_for))
    FileState(tmp_path).save_high_water_mark(high_water_mark)
    restarted = FileState(tmp_path)
    assert restarted.load() == HardState(generation=generation, voted_for=voted_for)
    assert restarted.load_high_water_mark() == high_water_mark


def test_save_is_durable_file_then_directory_and_leaves_no_temp_file(tmp_path, monkeypatch):
    fsyncs = FsyncCounter(monkeypatch)
    FileState(tmp_path).save(HardState(generation=2, voted_for="a"))
    assert fsyncs.files == 1 and fsyncs.directories == 1
    assert sorted(os.listdir(tmp_path)) == [STATE_FILE]


def test_the_high_water_mark_is_a_hint_never_fsynced(tmp_path, monkeypatch):
    fsyncs = FsyncCounter(monkeypatch)
    FileState(tmp_path).save_high_water_mark(9)
    assert fsyncs.files == 0 and fsyncs.directories == 0
    assert sorted(os.listdir(tmp_path)) == [HIGH_WATER_MARK_FILE]


def test_a_crash_before_the_rename_keeps_the_old_state(tmp_path, monkeypatch):
    state = FileState(tmp_path)
    state.save(HardState(generation=1, voted_for="a"))

    def power_cut(src, dst):
        raise OSError("power cut before the rename")

    monkeypatch.setattr(os, "replace", power_cut)
    with pytest.raises(OSError):
        state.save(HardState(generation=2, voted_for="b"))
    monkeypatch.undo()
    # The half-done save left its temp file behind; the restarted node ignores it.
    assert any(name != STATE_FILE for name in os.listdir(tmp_path))
    assert FileState(tmp_path).load() == HardState(generation=1, voted_for="a")
    FileState(tmp_path).save(HardState(generation=3, voted_for=None))
    assert FileState(tmp_path).load() == HardState(generation=3, voted_for=None)


def test_a_leftover_garbage_temp_file_is_ignored_and_overwritten(tmp_path):
    state = FileState(tmp_path)
    state.save(HardState(generation=5, voted_for="c"))
    (tmp_path / (STATE_FILE + ".tmp")).write_bytes(b"\x00garbage{")
    (tmp_path / (HIGH_WATER_MARK_FILE + ".tmp")).write_bytes(b"nonsense")
    assert FileState(tmp_path).load() == HardState(generation=5, voted_for="c")
    assert FileState(tmp_path).load_high_water_mark() == 0
    state.save(HardState(generation=6, voted_for=None))
    state.save_high_water_mark(4)
    assert FileState(tmp_path).load() == HardState(generation=6, voted_for=None)
    assert FileState(tmp_path).load_high_water_mark() == 4


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\xff\xfe not utf-8",
        b'{"generation": 3, "voted_for": "a"',  # torn
        b"[3, null]",
        b'{"generation": "3", "voted_for": null}',
        b'{"generation": -2, "voted_for": null}',
        b'{"generation": 3}',
        b'{"generation": 3, "voted_for": null, "extra": 1}',
        b'{"generation": 3, "voted_for": 7}',
    ],
)
def test_a_corrupt_state_file_is_a_clear_error_naming_the_file(tmp_path, content):
    (tmp_path / STATE_FILE).write_bytes(content)
    with pytest.raises(StateError) as raised:
        FileState(tmp_path).load()
    assert str(tmp_path / STATE_FILE) in str(raised.value)
    assert "corrupt" in str(raised.value)


@pytest.mark.parametrize("content", [b"", b"seven", b"-4", b"\xff", b"1.5"])
def test_an_unreadable_high_water_mark_reads_as_0(tmp_path, content):
    (tmp_path / HIGH_WATER_MARK_FILE).write_bytes(content)
    assert FileState(tmp_path).load_high_water_mark() == 0


def test_the_state_directory_is_created_when_missing(tmp_path):
    state = FileState(tmp_path / "node" / "a")
    state.save(HardState(generation=1, voted_for="a"))
    assert (tmp_path / "node" / "a" / STATE_FILE).exists()
    assert FileState(tmp_path / "node" / "a").load() == HardState(generation=1, voted_for="a")
