"""The grader's seccomp filter: the system calls a student's functions (and the harness) never need, refused by the
kernel for every process of a sandbox (bubblewrap's --seccomp). A classic BPF program, built here from a table, so
that no library is needed on the grading machine (docs/security.md).

A refused call kills the process that made it (SIGSYS): the executor says so in the student's status. clone3 is
answered "not implemented" instead, as container runtimes do: the C library then uses clone, whose flags the filter
can read (clone3's are behind a pointer), and a clone that asks for a new namespace is refused."""

from __future__ import annotations

import os
import platform
import struct

# Refused on every architecture: (name, x86_64 number, generic number as arm64 and riscv64 use; None: no such call)
REFUSED = (
    ("mount", 165, 40), ("umount2", 166, 39), ("pivot_root", 155, 41), ("chroot", 161, 51),
    ("open_tree", 428, 428), ("move_mount", 429, 429), ("fsopen", 430, 430), ("fsconfig", 431, 431),
    ("fsmount", 432, 432), ("fspick", 433, 433), ("mount_setattr", 442, 442),
    ("unshare", 272, 97), ("setns", 308, 268),
    ("ptrace", 101, 117), ("process_vm_readv", 310, 270), ("process_vm_writev", 311, 271),
    ("pidfd_getfd", 438, 438), ("kcmp", 312, 272),
    ("keyctl", 250, 219), ("add_key", 248, 217), ("request_key", 249, 218),
    ("bpf", 321, 280), ("perf_event_open", 298, 241), ("userfaultfd", 323, 282), ("fanotify_init", 300, 262),
    ("io_uring_setup", 425, 425), ("io_uring_enter", 426, 426), ("io_uring_register", 427, 427),
    ("kexec_load", 246, 104), ("kexec_file_load", 320, 294),
    ("init_module", 175, 105), ("finit_module", 313, 273), ("delete_module", 176, 106),
    ("clock_settime", 227, 112), ("clock_adjtime", 305, 266), ("settimeofday", 164, 170), ("adjtimex", 159, 171),
    ("swapon", 167, 224), ("swapoff", 168, 225), ("reboot", 169, 142), ("acct", 163, 89),
    ("quotactl", 179, 60), ("quotactl_fd", 443, 443), ("sethostname", 170, 161), ("setdomainname", 171, 162),
    ("name_to_handle_at", 303, 264), ("open_by_handle_at", 304, 265), ("lookup_dcookie", 212, 18),
    ("vhangup", 153, 58), ("syslog", 103, 116), ("nfsservctl", 180, 42),
    ("iopl", 172, None), ("ioperm", 173, None), ("uselib", 134, None), ("_sysctl", 156, None),
)
CLONE, CLONE3 = (56, 220), (435, 435)
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: a clone that makes a namespace
NEW_NAMESPACE = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

# The architectures (as the kernel names them in seccomp_data.arch) and which column of REFUSED is theirs.
ARCHES = {"x86_64": (0xC000003E, 0), "amd64": (0xC000003E, 0), "aarch64": (0xC00000B7, 1), "arm64": (0xC00000B7, 1),
          "riscv64": (0xC00000F3, 1)}
X32_BIT = 0x40000000  # x86_64's x32 calls: another table of numbers, refused whole

# Classic BPF, as the kernel reads it (linux/filter.h, linux/seccomp.h).
LD_W_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
KILL_PROCESS, ALLOW, ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
ENOSYS = 38
NR, ARCH, ARG0 = 0, 4, 16  # offsets in seccomp_data (ARG0: the low word of the first argument, little-endian)


class Unsupported(Exception):
    """The grader has no table of system call numbers for this machine's architecture."""


def refused_names(machine: str | None = None) -> list[str]:
    column = _arch(machine)[1]
    return [name for name, *numbers in REFUSED if numbers[column] is not None]


def _arch(machine: str | None) -> tuple[int, int]:
    machine = (machine or platform.machine()).lower()
    if machine not in ARCHES:
        raise Unsupported(f"no seccomp table for the {machine} architecture (the grader knows "
                          f"{', '.join(sorted(set(ARCHES)))})")
    return ARCHES[machine]


def program(machine: str | None = None) -> bytes:
    """The filter as bubblewrap's --seccomp reads it: an array of struct sock_filter."""
    audit, column = _arch(machine)
    numbers = sorted({row[1 + column] for row in REFUSED if row[1 + column] is not None})
    clone, clone3 = CLONE[column], CLONE3[column]
    # Each instruction: (code, k, jump if true, jump if false), jumps named by label and resolved below.
    code: list[tuple[int, int, str | int, str | int]] = [
        (LD_W_ABS, ARCH, 0, 0),
        (JEQ, audit, 0, "kill"),  # another architecture's numbers (i386 by int 0x80, ...): refused
        (LD_W_ABS, NR, 0, 0),
    ]
    if column == 0:
        code.append((JSET, X32_BIT, "kill", 0))
    code += [(JEQ, n, "kill", 0) for n in numbers]
    code += [
        (JEQ, clone3, "enosys", 0),
        (JEQ, clone, 0, "allow"),
        (LD_W_ABS, ARG0, 0, 0),
        (JSET, NEW_NAMESPACE, "kill", "allow"),
    ]
    labels = {"allow": len(code), "kill": len(code) + 1, "enosys": len(code) + 2}
    code += [(RET, ALLOW, 0, 0), (RET, KILL_PROCESS, 0, 0), (RET, ERRNO | ENOSYS, 0, 0)]
    out = bytearray()
    for at, (op, k, jt, jf) in enumerate(code):
        out += struct.pack("=HBBI", op, _jump(jt, at, labels), _jump(jf, at, labels), k)
    return bytes(out)


def _jump(target, at: int, labels: dict[str, int]) -> int:
    if isinstance(target, int):
        return target
    offset = labels[target] - at - 1
    if not 0 <= offset <= 255:  # pragma: no cover - the table would have to grow fourfold
        raise ValueError("a seccomp jump longer than 255 instructions")
    return offset


def memfd(machine: str | None = None) -> int:
    """A file descriptor holding the filter, at its start, for bubblewrap's --seccomp (the caller closes it)."""
    fd = os.memfd_create("hwm-lab-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program(machine))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
