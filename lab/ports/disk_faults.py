"""Storage faults: how a node names the disk error that stops it (fail-stop with a reason, never a retried fsync),
and the faults the lab injects into its storage ports (`disk-full`, `disk-ok`, `fsync-fail` of
lab.ports.fault_vocabulary).

Why a failed fsync is never retried: after a failed fsync the kernel may have dropped the dirty pages it could not
write, and marked them clean. A second fsync then finds nothing to write and reports success for data that is gone
(PostgreSQL's "fsyncgate", 2018). The only safe answer is to stop, and to recover from what was synced.
"""

from __future__ import annotations

import errno
import os

from lab.core import reasons
from lab.core.reasons import Reason

__all__ = ["DiskFaults", "FsyncFailed", "failure", "mark", "EXIT_KINDS", "EXIT_REASONS", "STORAGE_ERRNOS"]

# The errors of a disk that fails a node; any other OSError is a bug, reported as one.
STORAGE_ERRNOS = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk full", errno.EIO: "disk error",
                  errno.EROFS: "disk read-only"}
# Each one's name in a reason: a phrase of the catalogue (reasons.OS_ERRORS), said in the reader's language; the
# system's own text (os.strerror, in the node's locale) goes to node.log only.
OS_ERROR = dict(zip((errno.ENOSPC, errno.EIO, errno.EROFS, errno.EDQUOT), reasons.OS_ERRORS))
EXIT_DISK_FULL = 73
EXIT_FSYNC_FAILED = 74
EXIT_DISK_ERROR = 75
EXIT_KINDS = {EXIT_DISK_FULL: "disk full", EXIT_FSYNC_FAILED: "fsync failed", EXIT_DISK_ERROR: "disk error"}
_EXIT_OF = {"disk full": EXIT_DISK_FULL, "fsync failed": EXIT_FSYNC_FAILED}
_REASON_OF = {"fsync failed": reasons.FSYNC_FAILED, "disk full": reasons.DISK_FULL_AT, "disk error": reasons.DISK_ERROR,
              "disk read-only": reasons.DISK_READ_ONLY}
EXIT_REASONS = {EXIT_DISK_FULL: reasons.DISK_FULL_EXIT, EXIT_FSYNC_FAILED: reasons.FSYNC_FAILED_EXIT,
                EXIT_DISK_ERROR: reasons.DISK_ERROR_EXIT}  # why a node stopped, said from its exit code alone


class FsyncFailed(OSError):
    """An fsync that failed: what it was to make durable may be gone, and a second fsync would not say so."""


def mark(exc: BaseException, where: str) -> BaseException:
    """Note on a storage error which write of the node failed ("appending to the write-ahead log"), once."""
    if isinstance(exc, OSError) and not getattr(exc, "lab_where", None):
        exc.lab_where = where
    return exc


def failure(exc: BaseException) -> tuple[Reason, int] | None:
    """(reason, exit code) when `exc` (or its cause) is a storage fault, e.g. ("disk full: appending to the
    write-ahead log (No space left on device)", 73); None for any other error."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
            kind = "fsync failed" if isinstance(exc, FsyncFailed) else STORAGE_ERRNOS[exc.errno]
            where = getattr(exc, "lab_where", None) or "a write to disk"
            return (Reason(_REASON_OF[kind], where=where, os_error=OS_ERROR[exc.errno]),
                    _EXIT_OF.get(kind, EXIT_DISK_ERROR))
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


class DiskFaults:
    """The faults injected into one node's storage ports (its write-ahead log and durable state).

    `full`: every write fails with ENOSPC until cleared (`disk-ok`). `fsync_fail`: the next fsync fails with EIO, and
    the port drops what that fsync was to make durable, as a kernel drops the dirty pages it could not write."""

    def __init__(self, full: bool = False):
        self.full = full
        self.fsync_fail = False

    def before_write(self, where: str) -> None:
        if self.full:
            raise mark(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), where)

    def take_fsync_failure(self) -> bool:
        """Whether this fsync is the one that fails (it fails once)."""
        if self.fsync_fail:
            self.fsync_fail = False
            return True
        return False

    def fsync_error(self, where: str) -> FsyncFailed:
        return mark(FsyncFailed(errno.EIO, os.strerror(errno.EIO)), where)

    def __repr__(self) -> str:
        return f"DiskFaults(full={self.full}, fsync_fail={self.fsync_fail})"
