"""A grade's output folder, replaced whole: the new outputs are written aside (DIR/_new) and put in place once all
are written; an interrupted or failed grade leaves DIR as it was."""

from __future__ import annotations

import contextlib
import signal
import threading

from lab.grade.storage import join

NEW = "_new"  # the outputs being written
OLD = "_old"  # the previous outputs, while the new ones are put in place
MOVED = ".moved"  # in OLD: every previous output is in it (the new ones are being put in place)
INTERRUPTED_LOG = "spark-interrupted.log"  # Spark's log of a grade that did not finish
OURS = (NEW, OLD, INTERRUPTED_LOG)  # names of this module's in DIR (a grade's own outputs besides)


def begin(storage, out: str) -> str:
    """Make DIR ready for a grade (finishing what an interrupted one left) and return the folder the new outputs
    go to."""
    storage.makedirs(out)
    recover(storage, out)
    new = join(out, NEW)
    storage.remove(new)
    storage.makedirs(new)
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
    """Put the new outputs in place of the previous ones (of every file in DIR but this module's own)."""
    new, old = join(out, NEW), join(out, OLD)
    with held_off():
        storage.remove(old)
        storage.makedirs(old)
        for name, _, _ in storage.listdir(out):
            if name not in OURS:
                storage.rename(join(out, name), join(old, name))
        storage.write(join(old, MOVED), b"")
        for name, _, _ in storage.listdir(new):
            storage.rename(join(new, name), join(out, name))
        storage.remove(new)
        storage.remove(old)


def abandon(storage, out: str, log_file: str) -> str | None:
    """Leave DIR as it was: the new outputs removed, this grade's Spark log kept as INTERRUPTED_LOG (returned)."""
    new = join(out, NEW)
    kept = None
    with contextlib.suppress(Exception):
        if storage.kind(join(new, log_file)) is not None:
            kept = join(out, INTERRUPTED_LOG)
            storage.rename(join(new, log_file), kept)
    storage.remove(new)
    return kept


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
