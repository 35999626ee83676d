"""An interrupted grade loses nothing: Ctrl-C at several moments of a re-grade (hashing, the JVM starting, the
re-execution in its sandboxes, after the checks) ends the grade in one line, with --out byte for byte as the
previous grade left it and no sandbox folder behind; a grade that fails says so the same way."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.grade import job, outdir, sandbox

from . import styles, synth
from .helpers import NO_EXPLORE, full_runs, rubric_without_exploring

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")]
ROOT = Path(__file__).resolve().parents[2]
SECRET = "the course secret of an interrupted class"


def files_of(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def sandboxes(tmp: Path) -> list[Path]:
    return list(tmp.glob(f"{sandbox.FOLDER_PREFIX}*"))


@pytest.fixture(scope="module")
def graded(spark, tmp_path_factory):
    """A class graded once (with a course secret), then one submission changed: what a re-grade finds."""
    root = tmp_path_factory.mktemp("interrupted")
    subs, key = root / "subs", root / "course.key"
    key.write_text(SECRET)
    for n, student in enumerate(("amy", "ben", "cat")):
        synth.write_submission(subs, student, full_runs(), version=2, files=styles.student_files(n))
    # Without the explorer's walks (most of a re-executed pair's time): what is interrupted is the grade's steps.
    rubric = rubric_without_exploring(root)
    args = job.build_parser().parse_args([str(subs), "--out", str(root / "out"), "--course-secret", str(key),
                                          "--rubric", rubric])
    assert job.run(args, spark) == 0
    synth.write_submission(subs, "cat", full_runs(), version=2, files=styles.student_files(11))
    return root


def interrupt(root: Path, when, timeout: float = 300) -> tuple[int, list[str], list[str]]:
    """A re-grade, sent Ctrl-C (SIGINT to its process group, as a terminal does) once `when(line)` holds for a
    progress line or, once the sandbox is proved, a submission's sandbox folder exists (when is None): (exit code,
    lines before, lines after)."""
    tmp = root / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp), "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "lab.grade", str(root / "subs"), "--out", str(root / "out"),
                             "--course-secret", str(root / "course.key"), "--master", "local[2]",
                             "--rubric", str(root / NO_EXPLORE)], cwd=ROOT,
                            env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
    before = []
    try:
        deadline = time.monotonic() + timeout
        if when is None:
            for line in proc.stderr:  # the proof's own sandbox comes and goes first
                before.append(line)
                if line.startswith("[grade] sandbox: proved") or time.monotonic() > deadline:
                    break
            while not sandboxes(tmp) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert sandboxes(tmp), "no sandbox folder appeared"
        else:
            for line in proc.stderr:
                before.append(line)
                if when(line) or time.monotonic() > deadline:
                    break
        os.killpg(proc.pid, signal.SIGINT)
        _, rest = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, before, rest.splitlines()


MOMENTS = {
    "proving the sandbox": lambda line: line.startswith("[grade] sandbox: held: capabilities"),
    "hashing": lambda line: line.startswith("[grade] hashed "),
    "the JVM starting": lambda line: line.startswith("[grade] starting Spark"),
    "re-executing": None,
    "after the checks": lambda line: line.startswith("[grade] check 14/14"),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_ctrl_c_at_any_moment_of_a_regrade_leaves_the_previous_grade(graded, moment):
    out, tmp = graded / "out", graded / "tmp"
    previous = {k: v for k, v in files_of(out).items() if k != outdir.INTERRUPTED_LOG}
    code, before, after = interrupt(graded, MOMENTS[moment])
    said = [line for line in after if line.strip() and not line.startswith("[grade] ")]
    assert code == 130, "".join(before) + "\n".join(after)
    assert len(said) == 1 and said[0].startswith(f"grade: interrupted; {out} is as it was before"), after
    assert not any(x in "\n".join(after) for x in ("Traceback", "py4j", "WARN", "Exception"))
    now = files_of(out)
    assert {k: v for k, v in now.items() if k != outdir.INTERRUPTED_LOG} == previous  # byte for byte
    assert sandboxes(tmp) == []


def test_a_failed_grade_leaves_the_previous_grade_and_says_so(graded, spark, monkeypatch, capsys):
    from lab.grade import reexec

    out = graded / "out"
    previous = {k: v for k, v in files_of(out).items() if k != outdir.INTERRUPTED_LOG}

    def broken(*args, **kwargs):
        raise RuntimeError("the executors are gone")
    monkeypatch.setattr(reexec, "execute_all", broken)
    args = job.build_parser().parse_args([str(graded / "subs"), "--out", str(out), "--course-secret",
                                          str(graded / "course.key"), "--rubric", str(graded / NO_EXPLORE)])
    assert job.run(args, spark) == 1
    said = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[grade] ")]
    assert len(said) == 1 and said[0].startswith(
        f"grade: failed (RuntimeError: the executors are gone); {out} is as it was before (this grade's log: ")
    assert "Traceback" in (out / outdir.INTERRUPTED_LOG).read_text()  # kept for the instructor, not printed
    assert {k: v for k, v in files_of(out).items() if k != outdir.INTERRUPTED_LOG} == previous


def test_a_ctrl_c_that_py4j_turns_into_its_own_error_is_still_an_interruption():
    from lab.grade import edges

    class Py4JLike(Exception):
        pass

    def call_into_the_jvm():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:  # py4j cancels the call, and raises its own error when it cannot
            raise Py4JLike("Gateway must be connected to send cancel cmd.")

    with pytest.raises(Py4JLike) as caught:
        call_into_the_jvm()
    assert isinstance(edges.interruption(caught.value), KeyboardInterrupt)
    assert edges.interruption(RuntimeError("the executors are gone")) is None
    try:
        raise RuntimeError("a failure") from ValueError("its cause")
    except RuntimeError as exc:
        assert edges.interruption(exc) is None
