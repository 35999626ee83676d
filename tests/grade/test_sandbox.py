"""The grader's sandbox and the seeds it draws, without Spark: a student's exercise re-executed as an executor does
it (lab.grade.sandbox.one_submission.execute); hostile code gets a clear status and leaves nothing behind."""

import dataclasses
import os
import socket
import tempfile
from pathlib import Path

import pytest

from lab.grade.spark import reexec
from lab.grade.sandbox import one_submission
from lab.grade.sandbox import bubblewrap as sandbox
from lab.grade.inputs import seeds
from lab.grade.inputs import rubric as rubric_module

ROOT = Path(__file__).resolve().parents[2]
SECRET = b"a course secret of 32 bytes, ok."
needs_bwrap = pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")


def test_seeds_differ_between_students_and_stay_the_same_between_grades():
    alice = seeds.seeds(SECRET, "alice", 3, 4)
    assert alice == seeds.seeds(SECRET, "alice", 3, 4)  # a re-grade draws the same
    assert len(set(alice)) == 4
    assert set(alice).isdisjoint(seeds.seeds(SECRET, "bob", 3, 4))
    assert alice != seeds.seeds(SECRET, "alice", 2, 4)
    assert alice != seeds.seeds(b"another secret of 32 bytes, too!", "alice", 3, 4)
    assert all(0 <= s < seeds.SEED_RANGE for s in alice)


def test_the_course_secret_comes_from_a_file_or_the_environment(tmp_path):
    key = tmp_path / "course.key"
    key.write_text("0123456789abcdef0123\n")
    assert seeds.read_secret(str(key), environ={}) == b"0123456789abcdef0123"
    assert seeds.read_secret(None, environ={seeds.SECRET_FILE_ENV: str(key)}) == b"0123456789abcdef0123"
    assert seeds.read_secret(None, environ={seeds.SECRET_ENV: "x" * 20}) == b"x" * 20
    assert seeds.read_secret(None, environ={}) is None
    with pytest.raises(seeds.SecretError, match="shorter than 16 bytes"):
        seeds.read_secret(None, environ={seeds.SECRET_ENV: "short"})
    with pytest.raises(seeds.SecretError, match="cannot read"):
        seeds.read_secret(str(tmp_path / "missing.key"), environ={})


REFERENCE_READS = (ROOT / "solutions" / "reads.py").read_text()
LIMITS = {"wall_seconds": 30, "call_seconds": 0.3, "processes": 16, "memory_mb": 1024}


def rerun_reads(body: str, tmp_path: Path, monkeypatch, limits=LIMITS, top: str = "") -> dict:
    """Exercise 4 with check_read's body replaced, re-executed in the sandbox; the temporary folders it used are
    checked to be gone."""
    code = REFERENCE_READS.replace('    if index < 1:\n', body + '    if index < 1:\n', 1)
    code = top + code
    ex = dataclasses.replace(next(e for e in rubric_module.load(None).exercises if e.number == 4), seeds=1)
    task = one_submission.task("s1", ex, {"exercises/reads.py": code.encode()}, SECRET, sandbox.Limits.from_table(limits))
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    (result,) = one_submission.execute(one_submission.bundle("s1", [task]), limits, unsandboxed=False)
    assert list(scratch.iterdir()) == []  # the sandbox's folder is removed
    return result


@needs_bwrap
def test_the_reference_answer_runs_clean(tmp_path, monkeypatch):
    result = rerun_reads("", tmp_path, monkeypatch)
    assert result["status"] == "ok"
    assert [ok for _, ok, _ in result["result"]["rules"]] == [True, True, True]
    assert len(result["traces"]) == 1
    (files,) = result["traces"].values()
    assert {"trace.json", "events-A.jsonl", "events-cluster.jsonl"} <= set(files)


@needs_bwrap
def test_a_function_that_loops_forever_times_out(tmp_path, monkeypatch):
    result = rerun_reads("    while True:\n        pass\n", tmp_path, monkeypatch)
    assert result["status"] == "timeout"


@needs_bwrap
def test_a_file_that_loops_forever_at_import_hits_the_wall_clock(tmp_path, monkeypatch):
    result = rerun_reads("", tmp_path, monkeypatch, {**LIMITS, "wall_seconds": 3}, top="while True:\n    pass\n")
    assert result["status"] == "timeout" and result["result"] is None


@needs_bwrap
def test_ten_gigabytes_are_refused(tmp_path, monkeypatch):
    result = rerun_reads("    hoard = bytearray(10 * 1024 ** 3)\n", tmp_path, monkeypatch)
    assert result["status"] == "memory"


@needs_bwrap
def test_a_socket_reaches_nobody(tmp_path, monkeypatch):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        body = f"    import socket\n    socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'x')\n"
        result = rerun_reads(body, tmp_path, monkeypatch)
        with pytest.raises(socket.timeout):
            listener.accept()  # nothing came through
    assert result["status"].startswith("crashed: check_read(")
    assert "OSError" in result["status"] or "Error" in result["status"]


@needs_bwrap
def test_writing_outside_its_folder_fails(tmp_path, monkeypatch):
    # The lab's folder is not in the student's view at all, its own files are read-only, and /tmp is a private tmpfs
    # that goes with the process.
    target = ROOT / f"escaped-{os.getpid()}.txt"
    try:
        result = rerun_reads(f"    open({str(target)!r}, 'w').write('x')\n", tmp_path, monkeypatch)
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)
    assert result["status"].startswith("crashed: check_read(") and "No such file or directory" in result["status"]
    result = rerun_reads("    open('exercises/reads.py', 'a').write('# mine now')\n", tmp_path, monkeypatch)
    assert result["status"].startswith("crashed: check_read(")  # its own files are not its user's, and read-only
    assert "Read-only file system" in result["status"] or "Permission denied" in result["status"]
    in_tmp = tmp_path / "escaped.txt"
    result = rerun_reads(f"    open({str(in_tmp)!r}, 'w').write('x')\n", tmp_path, monkeypatch)
    assert result["status"].startswith("crashed: check_read(") and "No such file or directory" in result["status"]
    result = rerun_reads("    open('/tmp/mine.txt', 'w').write('x')\n", tmp_path, monkeypatch)
    assert not Path("/tmp/mine.txt").exists() and result["status"] == "ok"


@needs_bwrap
def test_a_thousand_processes_are_stopped(tmp_path, monkeypatch):
    body = ("    import os, time\n"
            "    for _ in range(1000):\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(30)\n"
            "            os._exit(0)\n")
    result = rerun_reads(body, tmp_path, monkeypatch)
    assert result["status"] == "processes" or "BlockingIOError" in result["status"]


def test_without_a_sandbox_tool_the_executor_refuses_unless_allowed(monkeypatch):
    monkeypatch.setattr(one_submission, "_TOOL", {"bwrap": None})
    with pytest.raises(sandbox.NoSandbox, match="--unsandboxed"):
        one_submission._tool(unsandboxed=False)
    assert one_submission._tool(unsandboxed=True) is None


def test_how_a_child_ended_is_named():
    import signal

    assert sandbox.classify(0, "") == "ok"
    assert sandbox.classify(-signal.SIGXCPU, "") == "timeout"
    assert sandbox.classify(sandbox.EXIT_MEMORY, "") == "memory"
    assert sandbox.classify(1, "Traceback ...\nValueError: boom\n") == "crashed: ValueError: boom"
    assert sandbox.classify(-signal.SIGSEGV, "") == "crashed: killed by SIGSEGV"
    assert sandbox.classify(-signal.SIGSYS, "") == sandbox.REFUSED_CALL and "system call" in sandbox.REFUSED_CALL
    from lab.grade.sandbox import privileges

    assert sandbox.classify(privileges.EXIT_PRIVILEGED, "") == sandbox.PRIVILEGED


def test_limits_come_from_the_rubric_and_are_checked():
    assert sandbox.Limits.from_table({"cpu_seconds": 5}).cpu_seconds == 5
    with pytest.raises(ValueError, match="not a limit"):
        sandbox.Limits.from_table({"disk": 5})
    with pytest.raises(ValueError, match="> 0"):
        sandbox.Limits.from_table({"memory_mb": 0})


RUBRIC = """
[rubric]
real_weight = 0.5
[sandbox]
cpu_seconds = 5
[exercises.3]
seeds = 3
explore = 0
points = { logs-agree = 6, match-acknowledged = 3, rules = 1 }
"""


def test_the_rubric_says_how_many_seeds_what_real_runs_weigh_and_the_limits():
    r = rubric_module.parse(RUBRIC)
    assert r.exercises[0].seeds == 3 and r.exercises[0].explore == 0 and r.real_weight == 0.5
    assert rubric_module.parse(RUBRIC.replace("explore = 0\n", "")).exercises[0].explore == 20  # walks by default
    assert sandbox.Limits.from_table(r.sandbox).cpu_seconds == 5
    with pytest.raises(rubric_module.RubricError, match="seeds must be an integer"):
        rubric_module.parse(RUBRIC.replace("seeds = 3", "seeds = -1"))
    with pytest.raises(rubric_module.RubricError, match="real_weight"):
        rubric_module.parse(RUBRIC.replace("real_weight = 0.5", "real_weight = 2"))


def test_a_probe_is_all_or_nothing_and_the_rules_follow_the_graders_count():
    r = rubric_module.parse(RUBRIC)
    runs = [("grader-a", 3, "s1"), ("grader-b", 3, "s1")]
    clean = rubric_module.score(r, runs, {}, {3: (8, 8)}, {(3, "match-acknowledged"): True})
    assert clean.total == 10
    caught = rubric_module.score(r, runs, {}, {3: (7, 8)}, {(3, "match-acknowledged"): False})
    assert caught.total == round(6 + 0 + 7 / 8, 2)
    # not probed (graded without re-execution): the share of the traced points, here half of them
    unprobed = rubric_module.score(r, runs, {("grader-a", "logs-agree"): 1}, {3: (8, 8)}, None)
    assert unprobed.total == 3 + 1.5 + 1


def test_a_real_run_weighs_what_the_rubric_says():
    r = rubric_module.parse(RUBRIC)
    runs = [("sim", 3, "s1"), ("real", 3, "s1")]
    broken_real = rubric_module.score(r, runs, {("real", "logs-agree"): 1}, {3: (1, 1)},
                                      {(3, "match-acknowledged"): True}, {"real": 0.5})
    assert broken_real.by_exercise[3] == round(6 * 1 / 1.5 + 3 + 1, 2)


def test_the_probe_finds_the_follower_that_answers_its_log_end():
    from dataclasses import replace

    from lab.core.guard import guarded
    from lab.core.impl import load
    from lab.core.interface import AppendResult
    from lab.grade.sandbox.function_probes import match_acknowledged

    reference = guarded(load("solutions"))
    assert match_acknowledged(reference) is None

    def log_end(log, prev_index, prev_generation, entries):
        right = reference.follower_append(log, prev_index, prev_generation, entries)
        if not right.success:
            return right
        kept = log.log_end if right.truncate_from is None else right.truncate_from - 1
        return AppendResult(success=True, truncate_from=right.truncate_from, append=right.append,
                            match_index=kept + len(right.append))
    found = match_acknowledged(replace(reference, follower_append=log_end))
    assert found is not None and "acknowledged match_index" in found


@needs_bwrap
def test_a_submission_cannot_hand_in_the_reference_answers(tmp_path, monkeypatch):
    code = "from solutions.reads import check_read  # noqa\n"
    ex = dataclasses.replace(next(e for e in rubric_module.load(None).exercises if e.number == 4), seeds=1)
    task = one_submission.task("s1", ex, {"exercises/reads.py": code.encode()}, SECRET, sandbox.Limits.from_table(LIMITS))
    (result,) = one_submission.execute(one_submission.bundle("s1", [task]), LIMITS, unsandboxed=False)
    no_module = "crashed: exercises/reads.py does not import: ModuleNotFoundError: No module named 'solutions'"
    assert result["status"] == no_module  # the student's process has no reference to import
    wrapped = "import importlib\ncheck_read = importlib.import_module('solutions').check_read\n"
    task = one_submission.task("s1", ex, {"exercises/reads.py": wrapped.encode()}, SECRET, sandbox.Limits.from_table(LIMITS))
    (result,) = one_submission.execute(one_submission.bundle("s1", [task]), LIMITS, unsandboxed=False)
    assert result["status"] == no_module


def test_with_the_instructors_flag_and_no_bubblewrap_the_limits_still_hold(tmp_path, monkeypatch):
    monkeypatch.setattr(one_submission, "_TOOL", {"bwrap": None})
    ex = dataclasses.replace(next(e for e in rubric_module.load(None).exercises if e.number == 4), seeds=1)
    for body, status in (("", "ok"), ("    hoard = bytearray(10 * 1024 ** 3)\n", "memory")):
        code = REFERENCE_READS.replace('    if index < 1:\n', body + '    if index < 1:\n', 1)
        task = one_submission.task("s1", ex, {"exercises/reads.py": code.encode()}, SECRET, sandbox.Limits.from_table(LIMITS))
        (result,) = one_submission.execute(one_submission.bundle("s1", [task]), LIMITS, unsandboxed=True)
        assert result["status"] == status


@needs_bwrap
def test_a_submitted_run_the_grader_cannot_simulate_again_counts_for_nothing(tmp_path, monkeypatch):
    import json
    import zipfile

    from lab.grade.inputs.archive import Limits
    from lab.grade.inputs.storage import LocalStorage
    from lab.grade.inputs.submissions import catalog
    from tests.studentcode import StudentCode

    from .helpers import rewrite_zip

    code = StudentCode(tmp_path / "code", name="exercises")
    subs = tmp_path / "subs"
    code.cli("submit", "--student", "s1", "--dir", str(tmp_path / "checks"), "--out", str(subs / "s1.zip"),
             cwd=tmp_path)
    with zipfile.ZipFile(subs / "s1.zip") as z:
        runs = [r["run"] for r in json.loads(z.read("manifest.json"))["runs"]]
    unseeded = next(r for r in runs if r.startswith("ex4-"))

    def drop_seed(name, data):
        if name != f"runs/{unseeded}/trace.json":
            return data
        meta = json.loads(data)
        del meta["seed"]
        return json.dumps(meta).encode()
    rewrite_zip(subs / "s1.zip", drop_seed)

    storage = LocalStorage()
    cat = catalog(storage, str(subs), str(tmp_path / "staging"))
    rubric = rubric_module.load(None)
    tasks, metas = reexec.plan(storage, str(subs), cat, rubric, SECRET, Limits())
    results = [r for t in tasks for r in one_submission.execute(t, rubric.sandbox, unsandboxed=False)]
    assert [r["status"] for r in results] == ["ok"] * 6
    reexec.apply(storage, cat, rubric, results, metas)
    (sub,) = cat.submissions
    kept = {r.run for r in sub.runs}
    assert unseeded not in kept and set(runs) - {unseeded} <= kept  # the others were reproduced byte for byte
    assert any(note.startswith(f"not reproducible: run {unseeded}") for note in sub.left_out)
    assert sum(r.startswith("grader-") for r in kept) == 18  # 9 scenarios of 6 exercises, 2 seeds each
    assert {f[2] for f in cat.files} == kept


def _sandbox_args(tmp_path):
    code, view, box = tmp_path / "code", tmp_path / "hwm", tmp_path / "box"
    spec = sandbox.Box.of(sandbox.Limits(), sandbox.STUDENT, "sized tmpfs")
    return (code, view, box, sandbox.student_command("bwrap", str(view), str(code), 3, spec, 9),
            sandbox.harness_command("bwrap", str(ROOT), str(box), 3, spec, 9))


def test_each_sandbox_is_given_folders_not_the_machine(tmp_path):
    """bubblewrap binds one folder at a time (never `/`): the student's sandbox the Python runtime, the lab's interface
    and the student's files; the harness's the lab and the reference, and its own folder to write in."""
    code, view, box, student, harness = _sandbox_args(tmp_path)
    python, runtime = sandbox.python_runtime()
    for argv in (student, harness):
        assert "--clearenv" in argv and "--die-with-parent" in argv
        binds = [(argv[i], argv[i + 1], argv[i + 2]) for i in range(len(argv) - 2)
                 if argv[i] in ("--ro-bind", "--bind")]
        assert ("--ro-bind", "/", "/") not in binds
        assert argv.index("--tmpfs") < argv.index("--ro-bind")  # what lives under /tmp is bound over the private one
    student_binds = {(a, b) for i, (kind, a, b) in enumerate(zip(student, student[1:], student[2:]))
                     if kind in ("--ro-bind", "--bind")}
    runtime_binds = {(runtime[i + 1], runtime[i + 2]) for i in range(len(runtime) - 2) if runtime[i] == "--ro-bind"}
    assert student_binds == runtime_binds | {(str(view), sandbox.LAB), (str(code), sandbox.CODE)}
    assert "--bind" not in student  # nothing writable but its private /tmp
    assert ["--bind", str(box), sandbox.BOX] == harness[harness.index("--bind"):harness.index("--bind") + 3]
    harness_sources = {harness[i + 1] for i in range(len(harness) - 2)
                       if harness[i] in ("--ro-bind", "--ro-bind-try", "--bind")}
    assert str(ROOT / "solutions") in harness_sources and str(ROOT / "exercises") not in harness_sources
    assert str(code) not in harness_sources  # the harness never sees the student's files
    assert (python, python) in runtime_binds


def _after(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


@pytest.mark.parametrize("euid", [0, 1000])
def test_each_sandbox_holds_no_privilege_whoever_runs_the_grader(tmp_path, monkeypatch, euid):
    """No capability, its own user, a new session, the seccomp filter, and scratch of a set size, under root and under
    an ordinary user alike; only the way to the box's user differs (lab.grade.sandbox.privileges)."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    _, _, _, student, harness = _sandbox_args(tmp_path)
    spec = sandbox.Box.of(sandbox.Limits(), sandbox.STUDENT, "sized tmpfs")
    for argv in (student, harness):
        assert "--new-session" in argv and _after(argv, "--seccomp") == ["9"]
        assert _after(argv, "--cap-drop") == ["ALL"]
        assert argv[argv.index("HWM_LAB_AS") + 1] == f"{spec.uid}:{spec.uid}"
        assert {"/tmp", "/dev/shm"} <= set(_after(argv, "--tmpfs"))
        assert _after(argv, "--size") == [str(spec.tmp_bytes), str(spec.shm_bytes)]
        assert "--unshare-net" in argv or "--unshare-all" in argv
        if euid == 0:  # no user namespace (its users would be root's); only the right to become the box's user
            assert "--unshare-user" not in argv and "--unshare-all" not in argv
            assert _after(argv, "--cap-add") == ["CAP_SETUID", "CAP_SETGID"]
        else:
            assert _after(argv, "--uid") == [str(spec.uid)] and "--disable-userns" in argv
            assert "--cap-add" not in argv
    assert spec.uid >= sandbox.UID_BASE and spec.tmp_bytes + spec.shm_bytes < sandbox.Limits().memory_mb * 2 ** 20
    assert spec.address_space(sandbox.Limits()) == sandbox.Limits().memory_mb * 2 ** 20 - spec.tmp_bytes - spec.shm_bytes


def test_the_folders_on_the_way_to_a_bind_are_open_to_the_boxs_user():
    made = sandbox._view(["--ro-bind", "/a/b/c", "/a/b/c", "--ro-bind", "/a/b/c/d/e", "/a/b/c/d/e",
                          "--symlink", "x", "/l/m", "--tmpfs", "/a/b/c/s"])
    dirs = _after(made, "--dir")
    assert dirs == ["/a", "/l", "/a/b"]  # shallow first; nothing under a bind (it is the bound folder's own)
    assert all(made[made.index("--dir", i) - 1] == "0755" for i in range(len(made)) if made[i] == "--dir")


def test_the_student_view_of_the_lab_is_its_interface_alone(tmp_path):
    view = Path(sandbox.student_lab(str(ROOT), str(tmp_path / "hwm")))
    found = sorted(str(p.relative_to(view)) for p in view.rglob("*.py"))
    assert found == sorted(sandbox.STUDENT_LAB)
    assert not (view / "solutions").exists() and not (view / "lab" / "sim").exists()
