"""The grader proves its sandbox before it grades (`hwm-lab grade --check-sandbox`, and at the start of every grade
that re-executes): the lab's own escape attempts (lab.grade.sandbox.escapes) run in a student's sandbox made exactly as the
class's are, the grader looks at that sandbox from outside too, and the reference answers are re-executed once as a
submission, which also sets each submission's time budget (docs/security.md)."""

from __future__ import annotations

import os
import shutil
import socket
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from lab.grade.sandbox import bubblewrap, cgroups, pair, seccomp

READY_SECONDS, DONE_SECONDS = 60.0, 120.0
PROOF_MEMORY_MB = 256  # the attempts' sandbox: the class's limits, but its scratch fills this much, not a GiB


@dataclass
class Probe:
    name: str
    held: bool
    detail: str


@dataclass
class Proof:
    probes: list[Probe] = field(default_factory=list)
    counted: str = cgroups.TMPFS  # how a sandbox's memory is counted here
    reference_seconds: float | None = None  # the reference answers' re-execution, as one submission
    budget_seconds: float | None = None  # each submission's, for all its exercises together

    @property
    def held(self) -> bool:
        return bool(self.probes) and all(p.held for p in self.probes)

    def failed(self) -> list[Probe]:
        return [p for p in self.probes if not p.held]


# What the grading machine must give for a probe to hold (docs/security.md, "What the grading machine needs").
NEEDS = {
    "bubblewrap": "Debian's bubblewrap (0.8 or later), able to make its namespaces",
    "user": "bubblewrap's --uid and --gid (0.4 or later), or a grader run as root",
    "capabilities": "bubblewrap's --cap-drop (0.3 or later)",
    "no new privileges, seccomp": "bubblewrap's --seccomp, and a kernel with seccomp filters",
    "remount": "bubblewrap's read-only binds, no capability and the seccomp filter",
    "write into": "bubblewrap's read-only binds",
    "new user namespace": "the seccomp filter, and bubblewrap's --disable-userns under an ordinary user",
    "new mount namespace": "the seccomp filter",
    "clone into": "the seccomp filter",
    "ptrace": "the seccomp filter",
    "scratch": "a memory control group the grader may make (cgroup v2 delegated to its user, or v1 under root), "
               "or bubblewrap's --size (0.8 or later)",
    "network": "network namespaces (bubblewrap's --unshare-net)",
    "other processes": "PID namespaces (bubblewrap's --unshare-pid)",
    "the grader's files": "bubblewrap's binds of one folder at a time",
    "outside": "a grader run as root that can change the sandbox's user, or an ordinary user",
    "reference": "the lab's own answers (solutions/) and the harness's sandbox",
}


def need_of(probe: Probe) -> str:
    return next((need for key, need in NEEDS.items() if probe.name.startswith(key)), "")


def prove(limits: bubblewrap.Limits, tool: str | None, outside_files: list[str] = (), rubric=None,
          grade: str = "proof") -> Proof:
    """Every probe, and (with a rubric) the reference's re-execution and the budget it sets."""
    proof = Proof(counted=cgroups.mechanism())
    if tool is None:
        proof.probes.append(Probe("bubblewrap", False, "not installed, or it cannot make its namespaces here"))
        return proof
    proof.probes += attempts(replace(limits, memory_mb=min(limits.memory_mb, PROOF_MEMORY_MB)), tool,
                             list(outside_files), grade)
    if rubric is not None:
        proof.reference_seconds, problem = reference(rubric, tool, grade)
        proof.probes.append(Probe("reference answers re-executed as a submission", problem is None,
                                  problem or f"in {proof.reference_seconds:.1f} s"))
        proof.budget_seconds = round(max(limits.budget_seconds,
                                         limits.budget_factor * (proof.reference_seconds or 0.0)), 1)
    return proof


def attempts(limits: bubblewrap.Limits, tool: str, outside_files: list[str], grade: str) -> list[Probe]:
    """The escape attempts in a student's sandbox, and what the grader sees of it from outside."""
    import lab

    root = str(Path(lab.__file__).resolve().parents[1])
    workdir = tempfile.mkdtemp(prefix=f"{bubblewrap.FOLDER_PREFIX}{grade}-")
    group = pair.group(limits, tool, f"{grade}-proof")
    listener = socket.socket()
    process, ours = None, None
    try:
        code = Path(workdir, "code", "exercises")
        code.mkdir(parents=True)
        planted = code / "planted.py"
        planted.write_text("answer = 42\n")
        Path(workdir, "grader-only.txt").write_text("the sandbox's folder, outside its view\n")
        view = bubblewrap.student_lab(root, os.path.join(workdir, "hwm"))
        shutil.copyfile(os.path.join(root, "lab", "grade", "sandbox", "escapes.py"),
                        os.path.join(view, "lab/grade/sandbox/escapes.py"))
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        box = bubblewrap.Box.of(limits, bubblewrap.STUDENT, group.kind)
        ours, theirs = socket.socketpair()
        filter_fd = seccomp.memfd()
        try:
            argv = bubblewrap.student_command(tool, view, str(code.parent), theirs.fileno(), box, filter_fd,
                                           module="lab.grade.sandbox.escapes")
            env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
            process = bubblewrap.start(argv, str(code.parent), limits, os.path.join(workdir, "stderr.txt"), env,
                                    (theirs.fileno(), filter_fd), box, group)
        finally:
            theirs.close()
            os.close(filter_fd)
        found = _converse(ours, process, limits, listener.getsockname()[1], workdir, outside_files)
        found.append(_listener_probe(listener))
        unchanged = planted.read_text() == "answer = 42\n" and [p.name for p in code.iterdir()] == ["planted.py"]
        found.append(Probe("the student's files unchanged", unchanged, "as planted" if unchanged else "changed"))
        return found
    finally:
        if ours is not None:
            ours.close()
        if process is not None:
            bubblewrap.kill(process)
        listener.close()
        group.remove()
        shutil.rmtree(workdir, ignore_errors=True)


def _converse(ours: socket.socket, process, limits: bubblewrap.Limits, port: int, workdir: str,
              outside_files: list[str]) -> list[Probe]:
    from lab.grade.sandbox import wire

    channel = wire.Channel(ours)
    try:
        ready = channel.receive(time.monotonic() + READY_SECONDS)
    except (EOFError, TimeoutError, wire.Garbage) as exc:
        said = bubblewrap.classify(process.poll(), "") if process.poll() is not None else type(exc).__name__
        return [Probe("the sandbox starts", False, f"it said nothing ({said})")]
    found = [_outside(process)]
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    python, _ = bubblewrap.python_runtime()
    dynload = os.path.realpath(sysconfig.get_config_var("DESTSHARED") or os.path.join(stdlib, "lib-dynload"))
    channel.send({"binds": [bubblewrap.CODE, bubblewrap.LAB, stdlib, dynload, python, "/"], "port": port,
                  "outside_pid": os.getpid(), "memory_bytes": limits.memory_mb * bubblewrap.MiB,
                  "file_bytes": limits.file_mb * bubblewrap.MiB,
                  "outside_files": [*outside_files, os.path.join(workdir, "grader-only.txt"), "/etc/passwd",
                                    "/proc/1/environ"]})
    deadline = time.monotonic() + DONE_SECONDS
    while True:
        try:
            message = channel.receive(deadline)
        except (EOFError, TimeoutError, wire.Garbage) as exc:
            ended = process.poll()
            found.append(Probe("the attempts run to their end", False,
                               f"they stopped ({bubblewrap.classify(ended, '') if ended is not None else exc})"))
            return found
        if message == ["done"]:
            return found
        if type(message) is list and len(message) == 4 and message[0] == "probe":
            found.append(Probe(str(message[1]), bool(message[2]), str(message[3])))


def _outside(process) -> Probe:
    """The sandbox's processes as the machine sees them: their users and capabilities (bubblewrap's own two
    processes aside: they end with the sandbox and run nothing of the student's)."""
    tree = bubblewrap._tree(process.pid, 64) or []
    seen = []
    for pid in tree[2:] if len(tree) > 2 else []:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        seen.append((int(fields["Uid"].split()[0]), int(fields["CapEff"].strip(), 16)))
    held = bool(seen) and all(uid != 0 and caps == 0 for uid, caps in seen)
    users = sorted({uid for uid, _ in seen})
    return Probe("outside: the sandbox's processes hold no privilege", held,
                 f"{len(seen)} process(es) of user(s) {users}, capabilities "
                 f"{sorted({hex(c) for _, c in seen})}" if seen else "none found")


def _listener_probe(listener: socket.socket) -> Probe:
    try:
        listener.accept()[0].close()
    except BlockingIOError:
        return Probe("nothing reached the grader's port", True, "no connection came")
    return Probe("nothing reached the grader's port", False, "a connection came through")


def reference(rubric, tool: str, grade: str) -> tuple[float, str | None]:
    """The reference answers re-executed as one submission, in the class's sandboxes: (seconds, a problem or None)."""
    from lab.grade.sandbox import one_submission
    from lab.student.checks import exercise

    import lab

    root = Path(lab.__file__).resolve().parents[1]
    files = {}
    for ex in rubric.exercises:
        module = exercise(ex.number).module
        source = root / "solutions" / Path(module).name
        if source.is_file():
            files[module] = source.read_bytes()
    limits = bubblewrap.Limits.from_table(rubric.sandbox)
    parts = [one_submission.task("the reference", ex, files, b"the reference's own seeds, not a course's", limits)
             for ex in rubric.exercises]
    started = time.monotonic()
    results = one_submission.execute(one_submission.bundle("the reference", parts), rubric.sandbox, tool is None, grade)
    seconds = time.monotonic() - started
    bad = [f"exercise {r['exercise']}: {r['status']}" for r in results if r["status"] != "ok"]
    return seconds, ("; ".join(bad) if bad else None)


def lines(proof: Proof) -> list[str]:
    """One line per probe, then what it means."""
    out = [f"{'held' if p.held else 'DID NOT HOLD'}: {p.name}: {p.detail}" for p in proof.probes]
    out.append(f"memory counted by: {proof.counted}")
    if proof.budget_seconds is not None:
        out.append(f"each submission's time budget: {proof.budget_seconds:g} s for all its exercises "
                   f"(the reference took {proof.reference_seconds:.1f} s here)")
    for probe in proof.failed():
        need = need_of(probe)
        if need:
            out.append(f"to hold '{probe.name}', the grading machine needs: {need}")
    return out


def _outside_files(secret: str | None, out: str | None, submissions: str | None = None) -> list[str]:
    """The grader's own files a sandbox must not reach: the course secret, the class, the grade's folder."""
    from lab.grade.inputs import seeds
    from lab.grade.inputs.storage import is_uri

    named = [secret or os.environ.get(seeds.SECRET_FILE_ENV), out, submissions]
    return [os.path.abspath(p) for p in named if p and not is_uri(p)]


def check(rubric, secret: str | None, out: str | None) -> int:
    """`hwm-lab grade --check-sandbox`: every probe on stdout, one line each; 0 if all held, else 2."""
    limits = bubblewrap.Limits.from_table(rubric.sandbox)
    found = prove(limits, bubblewrap.bwrap(), _outside_files(secret, out), rubric)
    for line in lines(found):
        print(line, flush=True)
    print("the sandbox holds on this machine" if found.held else
          f"the sandbox does not hold on this machine: {len(found.failed())} probe(s) failed", flush=True)
    return 0 if found.held else 2


def before_grading(args, rubric, say) -> Proof | None:
    """The proof a grade starts with: its lines as progress; None (the grade does not start) if a probe did not
    hold, unless --unsafe-sandbox."""
    import sys

    limits = bubblewrap.Limits.from_table(rubric.sandbox)
    started = time.monotonic()
    found = prove(limits, bubblewrap.bwrap(), _outside_files(getattr(args, "course_secret", None), args.out,
                                                          args.submissions), rubric, args.grade)
    for line in lines(found):
        say(f"sandbox: {line}")
    say(f"sandbox: {'proved' if found.held else 'NOT proved'}: {len(found.probes)} probes in "
        f"{time.monotonic() - started:.1f} s")
    if found.held or getattr(args, "unsafe_sandbox", False):
        return found
    failed = "; ".join(f"{p.name} ({p.detail})" for p in found.failed())
    needs = "; ".join(dict.fromkeys(need_of(p) for p in found.failed() if need_of(p)))
    print(f"grade: refusing to grade: the sandbox does not hold on this machine: {failed}. The machine needs: "
          f"{needs}. (`hwm-lab grade --check-sandbox` shows every probe; --unsafe-sandbox grades anyway, and "
          f"report.html says so.)", file=sys.stderr)
    return None


def summary(found: Proof | None) -> str:
    """What report.html says of the sandbox the class was graded in."""
    if found is None:
        return ""
    budget = f"; each submission had {found.budget_seconds:g} s for all its exercises" \
        if found.budget_seconds is not None else ""
    if found.held:
        return (f"Sandbox proved before grading: {len(found.probes)} escape probes held; memory counted by "
                f"{found.counted}{budget}.")
    failed = ", ".join(p.name for p in found.failed())
    return (f"UNSAFE: graded with --unsafe-sandbox although these probes of the sandbox did not hold: {failed}. "
            f"A submission may have reached what they guard{budget}.")
