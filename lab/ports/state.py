"""Durable state besides the log: the generation and this generation's vote, plus a high-water-mark hint, and a
node process's boot counter.

`FileState` keeps them in a directory; `MemoryState` is its in-memory twin for the simulator.
"""

from __future__ import annotations

import json
import logging
import os

from lab.core.messages import HardState
from lab.ports.disk_faults import FsyncFailed, mark
from lab.ports.trace import parse_line

__all__ = ["FileState", "MemoryState", "StateError", "STATE_FILE", "HIGH_WATER_MARK_FILE", "next_boot"]

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
HIGH_WATER_MARK_FILE = "high_water_mark"
_TEMP = ".tmp"

EMPTY = HardState(generation=0, voted_for=None)


class StateError(Exception):
    """The durable state file cannot be read back."""


def _check(hard_state: HardState) -> None:
    generation = hard_state.generation
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise ValueError(f"generation must be a non-negative int, not {hard_state.generation!r}")
    if hard_state.voted_for is not None and not isinstance(hard_state.voted_for, str):
        raise ValueError(f"voted_for must be a node name or None, not {hard_state.voted_for!r}")


def _check_high_water_mark(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"high-water mark must be a non-negative int, not {n!r}")


class FileState:
    """Hard state saved atomically (temp file, fsync, rename, fsync the directory); the HWM hint is not fsynced."""

    def __init__(self, directory):
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.path = os.path.join(self.directory, STATE_FILE)
        self.high_water_mark_path = os.path.join(self.directory, HIGH_WATER_MARK_FILE)
        self._hint: int | None = None  # the newest mark, not yet checkpointed
        self.faults = None  # a lab.ports.disk_faults.DiskFaults: the storage faults the lab injects (node processes)

    def load(self) -> HardState:
        """The saved hard state; generation 0 and no vote when nothing was saved yet."""
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return EMPTY
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or set(data) != {"generation", "voted_for"}:
                raise ValueError("expected an object with exactly generation and voted_for")
            hard_state = HardState(generation=data["generation"], voted_for=data["voted_for"])
            _check(hard_state)
        except ValueError as exc:  # JSON and UTF-8 errors are ValueErrors too
            raise StateError(f"durable state file {self.path} is corrupt: {exc}") from exc
        return hard_state

    def save(self, hard_state: HardState) -> None:
        """Replace the hard state atomically and durably: a crash leaves either the old or the new one."""
        _check(hard_state)
        data = json.dumps({"generation": hard_state.generation, "voted_for": hard_state.voted_for}).encode()
        self._replace(self.path, data, durable=True, where="saving the generation and vote")

    def save_high_water_mark(self, n: int) -> None:
        """Checkpoint the high-water mark: atomic but not fsynced, it is only a hint for a restart."""
        _check_high_water_mark(n)
        self._replace(self.high_water_mark_path, str(n).encode(), durable=False,
                      where="checkpointing the high-water mark")

    def hint_high_water_mark(self, n: int) -> None:
        """Remember the newest mark; `checkpoint()` writes it (a busy node moves its mark far more often than it
        is worth writing a file)."""
        self._hint = n

    def checkpoint(self) -> None:
        """Write the remembered mark, if it changed since the last checkpoint."""
        if self._hint is not None:
            self.save_high_water_mark(self._hint)
            self._hint = None

    def load_high_water_mark(self) -> int:
        """The checkpointed high-water mark; 0 if there is none or it cannot be read."""
        try:
            with open(self.high_water_mark_path, "rb") as f:
                n = int(f.read().decode("ascii").strip())
        except (OSError, ValueError):
            return 0
        return n if n >= 0 else 0

    def _replace(self, path: str, data: bytes, *, durable: bool, where: str) -> None:
        try:
            self._replace_file(path, data, durable)
        except OSError as exc:
            raise mark(exc, where)

    def _replace_file(self, path: str, data: bytes, durable: bool) -> None:
        temp = path + _TEMP
        if self.faults is not None:
            self.faults.before_write("")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                _fsync(fd, self.faults)
        finally:
            os.close(fd)
        os.replace(temp, path)
        if durable:
            fd = os.open(self.directory, os.O_RDONLY)
            try:
                _fsync(fd, self.faults)
            finally:
                os.close(fd)

    def __repr__(self) -> str:
        return f"FileState({self.directory!r})"


def _fsync(fd: int, faults) -> None:
    """An fsync whose failure is an FsyncFailed (never retried: lab.ports.disk_faults)."""
    if faults is not None and faults.take_fsync_failure():
        raise faults.fsync_error("")
    try:
        os.fsync(fd)
    except OSError as exc:
        raise FsyncFailed(exc.errno, exc.strerror) from exc


class MemoryState:
    """The in-memory twin of `FileState`, for the simulator: same methods, nothing on disk."""

    def __init__(self):
        self._hard_state = EMPTY
        self._high_water_mark = 0
        self.faults = None  # a lab.ports.disk_faults.DiskFaults (the simulator's disk-full)

    def load(self) -> HardState:
        return self._hard_state

    def save(self, hard_state: HardState) -> None:
        _check(hard_state)
        if self.faults is not None:
            self.faults.before_write("saving the generation and vote")
        self._hard_state = hard_state

    def save_high_water_mark(self, n: int) -> None:
        _check_high_water_mark(n)
        if self.faults is not None and n != self._high_water_mark:
            self.faults.before_write("checkpointing the high-water mark")
        self._high_water_mark = n

    def load_high_water_mark(self) -> int:
        return self._high_water_mark

    def hint_high_water_mark(self, n: int) -> None:
        self.save_high_water_mark(n)

    def checkpoint(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"MemoryState({self._hard_state!r}, high_water_mark={self._high_water_mark})"


def next_boot(data_dir: str, trace: str | None = None) -> int:
    """The incarnation number: 1 at the first start in this data directory, +1 at every restart. A damaged boot file
    stops the node (boot numbers must never repeat in a trace), unless repairing: then it goes on after the last
    boot the node's trace records."""
    path = os.path.join(data_dir, "boot")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        boot = 1
    else:
        text = raw.decode("ascii", errors="replace").strip()
        if text.isdigit():
            boot = int(text) + 1
        elif trace is not None:
            boot = last_boot(trace) + 1
            log.warning("%s held %r, not a boot number; repaired: this is boot %d", path, text[:40], boot)
        else:
            raise ValueError(f"{path} holds {text[:40]!r}, not a boot number: restart the node with --repair to go "
                             f"on after the last boot its trace records")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(str(boot))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return boot


def last_boot(trace: str) -> int:
    last = 0
    try:
        with open(trace, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    last = max(last, int(parse_line(line).get("boot", 0)))
                except (ValueError, AttributeError, TypeError):
                    continue
    except FileNotFoundError:
        pass
    return last
