"""The first act of every process the grader sandboxes (the harness, the student's): become the sandbox's own
unprivileged user, with no capability left, before anything else runs (docs/security.md). Under a grader run by
an ordinary user, bubblewrap has made it that user already; under root, bubblewrap leaves it only the right to
change its user, which this gives up."""

from __future__ import annotations

import ctypes
import os

AS = "HWM_LAB_AS"  # "uid:gid", set by lab.grade.sandbox.bubblewrap
EXIT_PRIVILEGED = 72  # the process could not shed its privileges: it runs nothing


def drop(environ=os.environ) -> None:
    """Become AS's user and group for good; exit with EXIT_PRIVILEGED if that does not hold."""
    said = environ.get(AS)
    if not said:
        return
    try:
        uid, gid = (int(x) for x in said.split(":"))
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        held = os.getresuid() == (uid, uid, uid) and os.getresgid() == (gid, gid, gid) and uid != 0 and gid != 0
        held = held and _no_capabilities()
    except (ValueError, OSError):
        held = False
    if held:
        try:
            os.setuid(0)
            held = False  # it could become root again: it keeps a privilege
        except OSError:
            pass
    if not held:
        os._exit(EXIT_PRIVILEGED)


def _no_capabilities() -> bool:
    """Clear what the user change leaves (bubblewrap's inheritable set), and check that nothing is left."""
    libc = ctypes.CDLL(None, use_errno=True)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    libc.capset(header, (ctypes.c_uint32 * 6)())
    data = (ctypes.c_uint32 * 6)()
    return libc.capget(header, data) == 0 and not any(data)
