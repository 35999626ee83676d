"""A grade's output folder, replaced whole: the new outputs are written aside (DIR/_new) and put in place once all
are written; an interrupted or failed grade leaves DIR as it was (a DIR it made is removed again)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading

from lab.grade.storage import join

NEW = "_new"  # the outputs being written
OLD = "_old"  # the previous outputs, while the new ones are put in place
MOVED = ".moved"  # in OLD: every previous output is in it (the new ones are being put in place)
INTERRUPTED_LOG = "spark-interrupted.log"  # Spark's log of a grade that did not finish
OURS = (NEW, OLD, INTERRUPTED_LOG)  # names of this module's in DIR (a grade's own outputs besides)
MADE = ".made-by-this-grade"  # in NEW: DIR held no grade before this one ("absent": there was no DIR; "empty")


def begin(storage, out: str) -> str:
    """Make DIR ready for a grade (finishing what an interrupted one left) and return the folder the new outputs
    go to; a DIR that does not exist yet, or is empty, is marked as made by this grade (see `abandon`)."""
    made = b"absent" if storage.kind(out) is None else b"" if storage.listdir(out) else b"empty"
    storage.makedirs(out)
    recover(storage, out)
    new = join(out, NEW)
    storage.remove(new)
    storage.makedirs(new)
    if made:
        storage.write(join(new, MADE), made)
    return new


def recover(storage, out: str) -> None:
    """DIR as the last complete grade left it, after a grade killed while it put its outputs in place."""
    old = join(out, OLD)
    if storage.kind(old) is None:
        return
    moved = storage.kind(join(old, MOVED)) is not None
    if moved and storage.kind(join(out, NEW)) is None:  # every new output was in place: that grade is the last
        storage.remove(old)
        return
    for name, _, _ in storage.listdir(out):
        if moved and name not in OURS:  # new outputs, part of them only: out they go
            storage.remove(join(out, name))
    for name, _, _ in storage.listdir(old):
        if name != MOVED:
            storage.rename(join(old, name), join(out, name))
    storage.remove(old)
    storage.remove(join(out, NEW))


def commit(storage, out: str) -> None:
    """Put the new outputs in place of the previous ones (of every file in DIR but this module's own; the log of
    an earlier grade that did not finish goes too: this grade is the one DIR holds now)."""
    new, old = join(out, NEW), join(out, OLD)
    with held_off():
        storage.remove(old)
        storage.makedirs(old)
        storage.remove(join(new, MADE))
        for name, _, _ in storage.listdir(out):
            if name not in OURS or name == INTERRUPTED_LOG:
                storage.rename(join(out, name), join(old, name))
        storage.write(join(old, MOVED), b"")
        for name, _, _ in storage.listdir(new):
            storage.rename(join(new, name), join(out, name))
        storage.remove(new)
        storage.remove(old)


def abandon(storage, out: str, log_file: str) -> str | None:
    """Leave DIR as it was: the new outputs removed, this grade's Spark log kept as INTERRUPTED_LOG (returned).
    A DIR that held no grade is left as it was (removed again if this grade made it), and the log kept in the
    temporary folder instead (a local DIR; on a Hadoop file system, DIR keeps it)."""
    new = join(out, NEW)
    made = storage.read(join(new, MADE)) if storage.kind(join(new, MADE)) is not None else b""
    local = bool(made) and not _is_uri(out)
    kept = None
    with contextlib.suppress(Exception):
        if storage.kind(join(new, log_file)) is not None:
            if local:
                fd, kept = tempfile.mkstemp(prefix="hwm-lab-grade-", suffix=".log")
                os.close(fd)
                shutil.move(join(new, log_file), kept)  # (the temporary folder may be another file system)
            else:
                kept = join(out, INTERRUPTED_LOG)
                storage.rename(join(new, log_file), kept)
    storage.remove(new)
    if local and made == b"absent" and not storage.listdir(out):
        storage.remove(out)
    return kept


def _is_uri(path: str) -> bool:
    from lab.grade.storage import is_uri

    return is_uri(path)


@contextlib.contextmanager
def held_off():
    """No Ctrl-C during the block (putting the outputs in place: DIR then holds one grade or the other, never half of
    each; or cleaning up after one); the handler before it is back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
