"""The explorer's branch in a process of its own (`python -m lab.explore.worker`), for the dashboard: the student's
functions run here, in this process's main thread, where the guard's time limit works, never in the dashboard's."""

from __future__ import annotations

import os
import pickle
import struct
import sys

from lab.explore.branch import Branch
from lab.i18n import say

_LENGTH = struct.Struct("<I")
MAX_FRAME = 64 * 1024 * 1024


def write_frame(fd: int, message) -> None:
    """One message: its length, then its pickle (the dashboard and its own worker only: the same user's code on
    both sides, as with `hwm-lab explore`)."""
    data = pickle.dumps(message)
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def read_exactly(fd: int, size: int) -> bytes | None:
    """`size` bytes from `fd`, or None when it closed first."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def answer(branch: Branch | None, action: str, args: dict) -> tuple[Branch | None, dict]:
    """Do one request of the dashboard's (web.explorer): open, go, take, save, trace; the branch and the answer."""
    saved = None
    if action == "open":
        branch = Branch.open(args["dir"])
        if args.get("at") is not None:
            branch.go(args["at"])
    elif branch is None:
        raise ValueError(say("no counterexample is open: open one with hwm-lab replay DIR --explore"))
    elif action == "go":
        branch.go(args["at"])
    elif action == "take":
        branch.take(tuple(args["words"]))
    elif action == "save":
        saved = str(branch.save())
    elif action == "trace":
        branch.trace(args["out"])
    return branch, {"ok": True, "view": branch.view(), "saved": saved}


def main() -> int:
    requests, answers = sys.stdin.fileno(), sys.stdout.fileno()
    sys.stdout = sys.stderr  # what the student's functions print must not mix with the answers
    branch = None
    while True:
        head = read_exactly(requests, _LENGTH.size)
        if head is None:
            return 0
        (size,) = _LENGTH.unpack(head)
        if size > MAX_FRAME:
            return 2
        action, args = pickle.loads(read_exactly(requests, size) or pickle.dumps(("stop", {})))
        if action == "stop":
            return 0
        try:
            branch, said = answer(branch, action, args)
        except ValueError as exc:
            said = {"ok": False, "error": exc.args[0] if exc.args else str(exc)}
        write_frame(answers, said)


if __name__ == "__main__":
    sys.exit(main())
