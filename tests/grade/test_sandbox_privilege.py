"""The sandbox holds whoever runs the grader (issue 49): a submission that tries to remount a bind read-write, write
into /code, /hwm, the interpreter or its standard library, make a namespace, ptrace, plant code for a later process,
or fill its scratch beyond its memory earns what its own functions earn and changes nothing of the grading
machine's; as root (a real grade, then the machine's files looked at) and as an ordinary user (an executor's
re-execution run as `nobody` with Debian's Python)."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from lab.grade.spark import job
from lab.grade.sandbox import proof
from lab.grade.sandbox import one_submission
from lab.grade.sandbox import bubblewrap as sandbox
from lab.grade.inputs import rubric as rubric_module

from . import synth
from .helpers import full_runs, rubric_without_exploring
from .test_secrets import article, reference_files

ROOT = Path(__file__).resolve().parents[2]
SECRET = b"a course secret of 32 bytes, ok."
needs_bwrap = pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="these attempts are made under a grader run as root")
STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"])

# Attempts made at import, each in a child of its own (a refused call kills the process that made it), so that the
# file then answers as its own functions do: the article's formula, the same as a student who tried nothing.
ATTEMPTS = '''
import ctypes, os, signal, sys
_libc = ctypes.CDLL(None, use_errno=True)
_TARGETS = ["/code", "/hwm", "/hwm/lab", STDLIB, os.path.realpath(sys.executable), "/"]


def _in_child(fn):
    pid = os.fork()
    if pid == 0:
        try:
            fn()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _remount():
    for path in _TARGETS:
        _libc.mount(None, path.encode(), None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND: read-write again
        try:
            open(os.path.join(path, "sitecustomize.py"), "w").write("PLANTED = True\\n")
        except OSError:
            pass


def _plant():
    for folder in sys.path + _TARGETS:
        for name in ("sitecustomize.py", "usercustomize.py", "hwm_lab_planted.pth"):
            try:
                open(os.path.join(folder, name), "w").write("import os\\n")
            except OSError:
                pass
    try:
        open(os.path.realpath(sys.executable), "r+b").close()
    except OSError:
        pass


for _attempt in (_remount, _plant, lambda: _libc.unshare(0x10000000), lambda: _libc.unshare(0x00020000),
                 lambda: _libc.ptrace(0, 0, None, None), lambda: _libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)):
    _in_child(_attempt)
'''.replace("STDLIB", repr(STDLIB))

# Made at call time, in the student's own exercise process: what it meets is its status.
CALLS = {
    "unsharer": "    import ctypes\n    ctypes.CDLL(None).unshare(0x10000000)\n",
    "tracer": "    import ctypes\n    ctypes.CDLL(None).ptrace(0, 0, None, None)\n",
    "capper": ("    import ctypes, os\n    h = (ctypes.c_uint32 * 2)(0x20080522, 0)\n    d = (ctypes.c_uint32 * 6)()\n"
               "    ctypes.CDLL(None).capget(h, d)\n"
               "    raise ValueError(f'uid {os.getuid()} gid {os.getgid()} caps {list(d)}')\n"),
    "filler": ("    for n in range(64):\n        with open(f'/tmp/fill-{n}', 'wb') as f:\n"
               "            f.write(b'x' * (32 << 20))\n"),
    "shmfiller": ("    for n in range(64):\n        with open(f'/dev/shm/fill-{n}', 'wb') as f:\n"
                  "            f.write(b'x' * (32 << 20))\n"),
}


def reads_with(body: str) -> str:
    text = (ROOT / "solutions" / "reads.py").read_text()
    return text.replace("    if index < 1:\n", body + "    if index < 1:\n", 1)


def snapshot() -> dict[str, str]:
    """What a submission would change to reach a later process: the standard library's folder, the interpreter,
    the lab and the reference (names, sizes and contents' hashes)."""
    found = {}
    for folder in (STDLIB, str(ROOT / "lab"), str(ROOT / "solutions"), os.path.dirname(os.path.realpath(sys.executable))):
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not name.endswith(".pyc"):
                found[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            else:
                found[path] = "folder"
    return found


@pytest.fixture(scope="module")
def graded(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("privilege")
    (root / "course.key").write_text("course-secret-of-the-privilege-test")
    subs = root / "subs"
    students = {"alice": reference_files(), "carl": reference_files(high_water_mark=article()),
                "attempts": reference_files(high_water_mark=ATTEMPTS + article())}
    students.update({name: reference_files(reads=reads_with(body)) for name, body in CALLS.items()})
    for student, files in students.items():
        synth.write_submission(subs, student, full_runs(), version=2, files=files)
    before, modules = snapshot(), fresh_modules()
    out = root / "out"
    rubric = Path(rubric_without_exploring(root))  # (a call may take 30 s: filling 1 GiB of scratch, on a busy
    rubric.write_text(rubric.read_text().replace("call_seconds = 1\n", "call_seconds = 30\n"))  # machine)
    args = job.build_parser().parse_args([str(subs), "--out", str(out), "--course-secret", str(root / "course.key"),
                                          "--rubric", str(rubric)])
    assert job.run(args, spark) == 0
    with open(out / "grades.csv", newline="") as f:
        grades = {r["student_id"]: r for r in csv.DictReader(f)}
    with open(out / "reexec.csv", newline="") as f:
        statuses = {(r["student"], int(r["exercise"])): r["status"] for r in csv.DictReader(f) if not r["run"]}
    return {"grades": grades, "statuses": statuses, "before": before, "after": snapshot(), "out": out,
            "modules": (modules, fresh_modules())}


def fresh_modules() -> list[str]:
    """The modules a new Python process of this machine starts with (a planted sitecustomize would be one)."""
    return subprocess.run([sys.executable, "-c", "import sys; print(sorted(sys.modules))"], capture_output=True,
                          text=True, check=True).stdout.split()


def row(grades, student):
    return [grades[student][f"exercise_{n}"] for n in range(1, 7)]


@needs_bwrap
@needs_root
@pytest.mark.spark
def test_as_root_the_attempts_change_nothing_and_earn_what_the_functions_earn(graded):
    assert graded["after"] == graded["before"]  # no file of the machine's changed, none was added
    before, after = graded["modules"]
    assert after == before  # a later Python process starts as it did
    g = graded["grades"]
    assert row(g, "alice") == ["10"] * 6
    assert row(g, "attempts") == row(g, "carl") and float(g["carl"]["exercise_1"]) < 10
    report = (graded["out"] / "report.html").read_text()
    assert "Sandbox proved before grading" in report and "UNSAFE" not in report


@needs_bwrap
@needs_root
@pytest.mark.spark
def test_as_root_a_namespace_or_ptrace_kills_the_call_and_says_why(graded):
    for student in ("unsharer", "tracer"):
        status = graded["statuses"][(student, 4)]
        assert status.startswith("crashed: check_read(") and "SIGSYS" in status and "system call" in status
        assert row(graded["grades"], student)[:3] == ["10"] * 3  # the other exercises earn what they earn


@needs_bwrap
@needs_root
@pytest.mark.spark
def test_as_root_the_students_process_is_its_own_user_with_no_capability(graded):
    status = graded["statuses"][("capper", 4)]
    uid = int(status.split("uid ", 1)[1].split()[0])
    assert uid >= sandbox.UID_BASE and f"gid {uid} " in status and "caps [0, 0, 0, 0, 0, 0]" in status


@needs_bwrap
@needs_root
@pytest.mark.spark
def test_as_root_scratch_beyond_the_memory_limit_is_memory(graded):
    assert graded["statuses"][("filler", 4)] == "memory"
    assert graded["statuses"][("shmfiller", 4)] == "memory"


LIMITS = {"wall_seconds": 60, "call_seconds": 5, "processes": 16, "memory_mb": 512}


def rerun_reads(body: str) -> dict:
    ex = dataclasses.replace(next(e for e in rubric_module.load(None).exercises if e.number == 4), seeds=1,
                             explore=0)
    task = one_submission.task("s1", ex, {"exercises/reads.py": reads_with(body).encode()}, SECRET,
                       sandbox.Limits.from_table(LIMITS))
    (result,) = one_submission.execute(one_submission.bundle("s1", [task]), LIMITS, unsandboxed=False)
    return result


@needs_bwrap
@needs_root
def test_the_memory_a_sandbox_holds_stays_within_its_limit():
    """Its scratch counts: the group's peak, which the kernel measures, stays at the limit (512 MiB here)."""
    result = rerun_reads(CALLS["filler"])
    assert result["status"] == "memory"
    assert 0 < result["student_peak_bytes"] <= LIMITS["memory_mb"] * 2 ** 20


# ---- as an ordinary user -------------------------------------------------------------------------------------

DEBIAN_PYTHON = "/usr/bin/python3"
needs_user = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists(DEBIAN_PYTHON),
                                reason="needs root to become `nobody`, setpriv, and Debian's Python")

AS_USER = '''
import json, sys
from lab.grade.sandbox import proof
from lab.grade.sandbox import one_submission
from lab.grade.inputs import rubric
from lab.grade.sandbox import bubblewrap as sandbox
asked = json.loads(sys.argv[1])
if asked["what"] == "proof":
    found = proof.prove(sandbox.Limits(), sandbox.bwrap(), [], None)
    print(json.dumps([[p.name, p.held, p.detail] for p in found.probes] + [found.counted]))
else:
    ex = next(e for e in rubric.load(None).exercises if e.number == 4)
    import dataclasses
    ex = dataclasses.replace(ex, seeds=1, explore=0)
    task = one_submission.task("s1", ex, {"exercises/reads.py": asked["code"].encode()}, b"x" * 32,
                       sandbox.Limits.from_table(asked["limits"]))
    (r,) = one_submission.execute(one_submission.bundle("s1", [task]), asked["limits"], unsandboxed=False)
    print(json.dumps([r["status"], r["student_peak_bytes"]]))
'''


@pytest.fixture(scope="module")
def as_user():
    """Run the executor's side as `nobody`: the lab copied where that user can read it, Debian's Python."""
    home = Path(tempfile.mkdtemp(prefix="hwm-lab-as-user-"))
    try:
        for package in ("lab", "solutions"):
            shutil.copytree(ROOT / package, home / package, ignore=shutil.ignore_patterns("__pycache__"))
        scratch = home / "tmp"
        scratch.mkdir()
        for path in [home, *home.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        os.chmod(scratch, 0o1777)

        def run(asked: dict) -> list:
            done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", DEBIAN_PYTHON,
                                   "-c", AS_USER, json.dumps(asked)], capture_output=True, text=True, timeout=300,
                                  cwd=home, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(home),
                                                 "TMPDIR": str(scratch), "HOME": str(scratch)})
            assert done.returncode == 0, done.stderr[-3000:]
            return json.loads(done.stdout.splitlines()[-1])
        yield run
    finally:
        shutil.rmtree(home, ignore_errors=True)


@needs_bwrap
@needs_user
def test_as_an_ordinary_user_every_probe_holds(as_user):
    *probes, counted = as_user({"what": "proof"})
    assert counted == "sized tmpfs"  # no control group is this user's to make: the scratch is sized instead
    assert [p for p in probes if not p[1]] == []
    names = {p[0] for p in probes}
    assert {"user", "capabilities", "ptrace", "new user namespace", "scratch beyond the memory limit in /tmp",
            "write into /code", "remount /hwm read-write"} <= names


@needs_bwrap
@needs_user
def test_as_an_ordinary_user_the_attempts_fail_as_under_root(as_user):
    before = snapshot()
    limits = {**LIMITS, "memory_mb": 512}
    status, _ = as_user({"what": "reads", "code": reads_with(CALLS["unsharer"]), "limits": limits})
    assert "SIGSYS" in status
    status, _ = as_user({"what": "reads", "code": reads_with(CALLS["filler"]), "limits": limits})
    assert status == "memory"  # its /tmp is a quarter of its memory: full, it is out of memory
    status, _ = as_user({"what": "reads", "code": reads_with(CALLS["capper"]), "limits": limits})
    assert "caps [0, 0, 0, 0, 0, 0]" in status and int(status.split("uid ", 1)[1].split()[0]) >= sandbox.UID_BASE
    status, _ = as_user({"what": "reads", "code": ATTEMPTS + (ROOT / "solutions" / "reads.py").read_text(),
                         "limits": limits})
    assert status == "ok"
    assert snapshot() == before


# ---- the proof, and a grade that refuses to start --------------------------------------------------------------

@needs_bwrap
def test_check_sandbox_prints_every_probe_and_exits_0(capsys):
    assert job.main(["--check-sandbox"]) == 0
    said = capsys.readouterr().out.splitlines()
    probes = [line for line in said if line.startswith(("held: ", "DID NOT HOLD: "))]
    assert len(probes) >= 20 and all(line.startswith("held: ") for line in probes)
    assert said[-1] == "the sandbox holds on this machine"
    assert any(line.startswith("each submission's time budget: ") for line in said)


@needs_bwrap
def test_a_weakened_sandbox_stops_the_grade_before_it_starts(tmp_path, monkeypatch, capsys):
    """Without its seccomp filter (bubblewrap given an empty one), the grade refuses and names what failed."""
    from lab.grade.sandbox import seccomp

    monkeypatch.setattr(seccomp, "program", lambda machine=None: b"\x06\x00\x00\x00\x00\x00\xff\x7f")  # allow all
    subs = tmp_path / "subs"
    synth.write_submission(subs, "alice", full_runs(), version=2, files=reference_files())
    (tmp_path / "course.key").write_text("course-secret-of-the-weak-test")
    args = job.build_parser().parse_args([str(subs), "--out", str(tmp_path / "out"), "--course-secret",
                                          str(tmp_path / "course.key")])
    assert job.run(args) == 2
    said = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("grade: "))
    assert said.startswith("grade: refusing to grade: the sandbox does not hold on this machine: ")
    assert "new user namespace (it succeeded)" in said and "ptrace (it succeeded)" in said
    assert not (tmp_path / "out").exists()  # nothing was started, nothing written
    assert proof.NEEDS["ptrace"] in said


def test_the_seccomp_filter_is_the_table_for_this_machine():
    from lab.grade.sandbox import seccomp

    for machine in ("x86_64", "aarch64"):
        code = seccomp.program(machine)
        assert len(code) % 8 == 0 and len(code) // 8 < 256
        names = seccomp.refused_names(machine)
        assert {"mount", "umount2", "pivot_root", "unshare", "setns", "ptrace", "process_vm_readv", "pidfd_getfd",
                "keyctl", "bpf", "perf_event_open", "kexec_load", "init_module", "clock_settime", "swapon", "reboot",
                "chroot"} <= set(names)
    with pytest.raises(seccomp.Unsupported, match="no seccomp table"):
        seccomp.program("sparc")
    headers = {"x86_64": "/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "aarch64": "/usr/include/asm-generic/unistd.h"}
    for column, (machine, header) in enumerate(headers.items()):
        if not os.path.exists(header):
            continue
        defined = dict(re.findall(r"^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$", Path(header).read_text(), re.M))
        for name, *numbers in seccomp.REFUSED:
            if numbers[column] is not None:  # the table's numbers are the kernel's own
                assert defined.get(name) == str(numbers[column]), name


def test_report_html_says_what_was_proved_and_an_unsafe_grade_at_the_top():
    from lab.grade.outputs import report

    held = proof.Proof([proof.Probe("ptrace", True, "refused")], "cgroup v1", 2.0, 30.0)
    weak = proof.Proof([proof.Probe("ptrace", False, "it succeeded"), proof.Probe("user", True, "uid 5")],
                       "sized tmpfs", 2.0, 30.0)
    assert proof.summary(held) == ("Sandbox proved before grading: 1 escape probes held; memory counted by cgroup v1; "
                                   "each submission had 30 s for all its exercises.")
    said = proof.summary(weak)
    assert said.startswith("UNSAFE: graded with --unsafe-sandbox") and "ptrace" in said and "user" not in said
    page = report.class_report(rubric_module.load(None), [], [], {}, 0, sandbox=said)
    assert '<p class="sandbox unsafe">UNSAFE: graded with --unsafe-sandbox' in page
    assert page.index("sandbox unsafe") < page.index("<h2>")  # at the top, before the scores
    assert proof.summary(None) == "" and 'class="sandbox' not in report.class_report(
        rubric_module.load(None), [], [], {}, 0)
