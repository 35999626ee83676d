"""The lab's own escape attempts, made from inside a student's sandbox exactly as students get one (lab.grade.sandbox.proof
starts it, asks, and judges what comes back): each tries what a cheating submission would and says what happened.
An attempt the kernel may answer by killing its process (the seccomp filter, the memory limit) runs in a child.

    python -S -B -m lab.grade.sandbox.escapes FD      (FD: its socket to the grader)
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import time

from lab.grade.sandbox import privileges, wire

MS_REMOUNT, MS_BIND = 32, 4096
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
PR_GET_SECCOMP, PR_GET_NO_NEW_PRIVS = 21, 39
CHILD_SECONDS = 30.0

_libc = ctypes.CDLL(None, use_errno=True)


def _errno_of(ret: int) -> str:
    code = ctypes.get_errno()
    return f"refused ({os.strerror(code)})" if ret != 0 else "it succeeded"


def in_child(attempt) -> tuple[bool, str]:
    """attempt() in a child of its own: (held, what happened); a child the kernel killed held."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            held, said = attempt()
            os.write(write, f"{int(held)}{said}"[:1000].encode())
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + CHILD_SECONDS
    status = None
    while status is None and time.monotonic() < deadline:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = raw
        else:
            time.sleep(0.005)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as f:
        said = f.read().decode(errors="replace")
    if status is None:
        return False, "it was still running after 30 s"
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        why = {"SIGSYS": "the seccomp filter killed it", "SIGKILL": "the kernel killed it"}.get(name, name)
        return True, f"{why} ({name})"
    return (said[:1] == "1"), said[1:] or "it said nothing"


def user(asked) -> tuple[bool, str]:
    uids, gids = os.getresuid(), os.getresgid()
    return 0 not in uids + gids and not os.getgroups(), f"uid {uids[0]}, gid {gids[0]}, groups {os.getgroups()}"


def capabilities(asked) -> tuple[bool, str]:
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    if _libc.capget(header, data) != 0:
        return False, f"capget failed ({os.strerror(ctypes.get_errno())})"
    effective, permitted, inheritable = data[0] | data[3] << 32, data[1] | data[4] << 32, data[2] | data[5] << 32
    return effective == permitted == inheritable == 0, \
        f"effective {effective:#x}, permitted {permitted:#x}, inheritable {inheritable:#x}"


def flags(asked) -> tuple[bool, str]:
    no_new = _libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
    mode = _libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0)
    return no_new == 1 and mode == 2, f"no_new_privs {no_new}, seccomp mode {mode} (2: a filter)"


def remount(path: str):
    def attempt() -> tuple[bool, str]:
        ret = _libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND, None)
        return ret != 0, _errno_of(ret)
    return lambda asked: in_child(attempt)


def write_into(path: str):
    def attempt(asked) -> tuple[bool, str]:
        if os.path.isfile(path):  # opened for writing is enough: nothing is written into a file of the machine's
            try:
                os.close(os.open(path, os.O_WRONLY))
            except OSError as exc:
                return True, f"refused ({exc.strerror})"
            return False, f"it opened {path} for writing"
        target = os.path.join(path, "sitecustomize.py")  # what a later Python process would run
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except OSError as exc:
            return True, f"refused ({exc.strerror})"
        os.unlink(target)
        return False, f"it made {target}"
    return attempt


def namespace(flag: int, name: str):
    def attempt() -> tuple[bool, str]:
        ret = _libc.unshare(flag)
        return ret != 0, _errno_of(ret)

    def cloned() -> tuple[bool, str]:
        pid = _libc.syscall(56 if os.uname().machine == "x86_64" else 220, flag | signal.SIGCHLD, 0, 0, 0, 0)
        if pid == 0:
            os._exit(0)
        if pid > 0:
            os.waitpid(pid, 0)
        return pid < 0, _errno_of(0 if pid > 0 else -1)
    return lambda asked: in_child(attempt if name == "unshare" else cloned)


def ptrace(asked) -> tuple[bool, str]:
    def attempt() -> tuple[bool, str]:
        ret = _libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME
        return ret != 0, _errno_of(ret)
    return in_child(attempt)


def scratch(folder: str):
    """Fill `folder` with files under the file-size limit until it holds more than the memory limit."""
    def attempt(limit: int, file_bytes: int) -> tuple[bool, str]:
        ballast = bytearray(48 << 20)  # touched: of the sandbox's processes, the kernel stops this one first
        chunk = b"\0" * (1 << 20)
        written = 0
        try:
            for n in range(100_000):
                with open(os.path.join(folder, f"fill-{n}"), "wb") as f:
                    for _ in range(max(1, file_bytes // len(chunk) - 1)):
                        f.write(chunk)
                        written += len(chunk)
                        if written > limit + (64 << 20):
                            return False, f"it wrote {written >> 20} MiB, past the limit of {limit >> 20} MiB"
        except OSError as exc:
            return written <= limit, f"refused at {written >> 20} MiB ({exc.strerror})"
        finally:
            del ballast
        return False, "it never stopped"

    def probe(asked) -> tuple[bool, str]:
        try:
            return in_child(lambda: attempt(asked["memory_bytes"], asked["file_bytes"]))
        finally:
            for name in os.listdir(folder) if os.path.isdir(folder) else []:
                if name.startswith("fill-"):
                    os.unlink(os.path.join(folder, name))
    return probe


def network(asked) -> tuple[bool, str]:
    names = [name for _, name in socket.if_nameindex()]
    try:
        socket.create_connection(("127.0.0.1", asked["port"]), timeout=2).close()
    except OSError as exc:
        return names == ["lo"], f"refused ({exc.strerror or exc}); interfaces {names}"
    return False, "it reached the grader's port"


def processes(asked) -> tuple[bool, str]:
    try:
        os.kill(asked["outside_pid"], 0)
    except ProcessLookupError:
        seen = "no /proc" if not os.path.isdir("/proc") else f"/proc lists {len(os.listdir('/proc'))} entries"
        return True, f"the grader's process is not there ({seen})"
    except PermissionError:
        return True, "refused"
    return False, "it can signal the grader's process"


def files(asked) -> tuple[bool, str]:
    opened = []
    for path in asked["outside_files"]:
        try:
            os.close(os.open(path, os.O_RDONLY))
            opened.append(path)
        except OSError:
            pass
    return not opened, f"it opened {', '.join(opened)}" if opened else \
        f"none of {len(asked['outside_files'])} found"


def attempts(asked) -> list[tuple[str, object]]:
    """(name, attempt) in the order they run; the names are those lab.grade.sandbox.proof reports."""
    found: list[tuple[str, object]] = [("user", user), ("capabilities", capabilities),
                                       ("no new privileges, seccomp", flags)]
    found += [(f"remount {path} read-write", remount(path)) for path in asked["binds"]]
    found += [(f"write into {path}", write_into(path)) for path in asked["binds"]]
    found += [("new user namespace", namespace(CLONE_NEWUSER, "unshare")),
              ("new mount namespace", namespace(CLONE_NEWNS, "unshare")),
              ("clone into a new user namespace", namespace(CLONE_NEWUSER, "clone")), ("ptrace", ptrace)]
    found += [(f"scratch beyond the memory limit in {folder}", scratch(folder)) for folder in ("/tmp", "/dev/shm")]
    found += [("network", network), ("other processes", processes), ("the grader's files", files)]
    return found


def main(argv: list[str]) -> int:
    privileges.drop()
    channel = wire.Channel(socket.socket(fileno=int(argv[0])))
    channel.send(["ready", os.getpid()])
    asked = channel.receive(time.monotonic() + 60)
    for name, attempt in attempts(asked):
        try:
            held, said = attempt(asked)
        except Exception as exc:  # noqa: BLE001 - an attempt that could not even be tried says why
            held, said = False, f"the attempt failed: {type(exc).__name__}: {exc}"
        channel.send(["probe", name, bool(held), str(said)[:500]])
    channel.send(["done"])
    return 0


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
