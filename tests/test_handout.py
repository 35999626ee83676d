"""`hwm-lab handout`: the students' repository holds no line of a reference answer (every file is searched for
each reference function's body), has a fresh git history, its README's two commands work on the student's code
(an exercise not started is shown as such), and a class graded from it gets the grades of the full repository."""

import ast
import contextlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from lab.core.interface import EXERCISES
from lab.student import handout

from tests.handoututil import ALL, ROOT, in_handout, made_handout, variant


def handout_python(folder, tmp_path) -> Path:
    """A Python that imports the lab from the handout only, as its own install would, in this process's children
    too (the demo's nodes): a venv that sees this one's packages but not its editable install of the course."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "handout.pth").write_text(f"{folder}\n{sysconfig.get_paths()['purelib']}\n")
    return python


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return made_handout(tmp_path_factory)


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_no_reference_answer_anywhere(made):
    assert not (made / "solutions").exists()
    bodies = []
    for path in sorted((ROOT / "solutions").glob("*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef):
                statements = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                body = "\n".join(ast.get_source_segment(source, s) for s in statements)
                bodies.append((f"{path.name}:{node.name}", _squash(body)))
    assert len(bodies) >= 7
    for path in (p for p in made.rglob("*") if p.is_file() and ".git" not in p.parts):
        try:
            text = _squash(path.read_text())
        except UnicodeDecodeError:
            continue
        for name, body in bodies:
            assert body not in text, f"{path.relative_to(made)} holds the body of {name}"


def test_the_handout_has_a_fresh_history_without_solutions(made):
    log = subprocess.run(["git", "-C", str(made), "log", "--oneline"], capture_output=True, text=True, check=True)
    assert len(log.stdout.splitlines()) == 1
    objects = subprocess.run(["git", "-C", str(made), "rev-list", "--objects", "--all"], capture_output=True,
                             text=True, check=True).stdout
    assert "solutions/" not in objects and "exercises/leader.py" in objects



def test_the_handouts_ci_runs_the_students_test_command_from_its_readme(made):
    """A class's CI runs the handout's .ci/run: the README's test command on the students' code, not the course's
    command (which tests solutions/, absent here)."""
    blocks = re.findall(r"```\n(.*?)\n```", (made / "README.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 2 and blocks[1].endswith("pytest --impl exercises"), blocks
    run = made / ".ci" / "run"
    assert run.read_text(encoding="utf-8").strip().splitlines()[-1] == blocks[1]
    assert os.access(run, os.X_OK)

def test_a_folder_that_is_not_empty_is_refused(tmp_path):
    (tmp_path / "x").write_text("mine")
    with pytest.raises(handout.HandoutError, match="not empty"):
        handout.make(tmp_path)
    assert (tmp_path / "x").read_text() == "mine"


def test_the_demo_on_the_students_code_shows_an_exercise_not_started(made, tmp_path):
    # What `hwm-lab demo` prints first, before the cluster and the dashboard start.
    said = in_handout(made, "lab.cli", "demo", "--help")
    assert said.returncode == 0
    shown = in_handout(made, "lab.student.handout")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "The nodes run your code (exercises):"
    assert sum("NOT STARTED" in line for line in lines) == 6
    # A node that reaches an exercise not started stops, and its reason names the exercise.
    sim = in_handout(made, "lab.cli", "simulate", "s1", "--out", str(tmp_path / "s1"))
    events = [json.loads(x) for x in (tmp_path / "s1" / "events-cluster.jsonl").read_text().splitlines()]
    reasons = [e["reason"] for e in events if e["type"] == "node_exited"]
    assert reasons and all(r.startswith("NotImplementedError: exercise ") for r in reasons), sim.stdout


def test_the_tests_run_against_the_students_code(made):
    run = in_handout(made, "pytest", "--impl", "exercises", "-q", "-p", "no:cacheprovider", timeout=600)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    assert "error" not in run.stdout.splitlines()[-1], run.stdout[-3000:]
    failed = re.findall(r"FAILED tests/test_exercises.py::test_exercise_keeps_every_rule\[exercise(\d)\]", run.stdout)
    assert sorted(failed) == [str(ex.number) for ex in EXERCISES], run.stdout[-3000:]
    assert "not started" in run.stdout
    assert len(re.findall(r"^FAILED", run.stdout, re.M)) == 6  # nothing else fails
    # The tests that need an exercise not started are skipped, naming it (the README says so).
    waiting = re.findall(r"^SKIPPED \[\d+\] tests/test_(?:high_water_mark|replica|wal)\.py.*needs exercise", run.stdout,
                         re.M)
    assert len(waiting) >= 3, run.stdout[-3000:]


def test_the_tests_all_pass_once_every_exercise_is_done(made, tmp_path):
    # The README's promise for the end: the handout's tests, with the reference answers written into exercises/.
    done = variant(made, tmp_path, **dict.fromkeys(ALL, "solutions"))
    run = in_handout(done, "pytest", "--impl", "exercises", "-q", "-p", "no:cacheprovider", timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    summary = run.stdout.splitlines()[-1]
    assert re.search(r"\d{2,} passed", summary) and "failed" not in summary and "error" not in summary, summary
    assert "needs exercise" not in run.stdout


def test_submit_in_a_copy_of_the_handout_packs_the_copys_exercises_and_says_so(made, tmp_path):
    """A student copies their handout (installed from the first folder) and works on in the copy: `hwm-lab submit`
    run in the copy checks and packs the copy's exercises/, not those of the folder the lab was installed from."""
    import zipfile

    python = handout_python(made, tmp_path)  # imports the lab, and `exercises`, from the first folder
    copy = variant(made, tmp_path, high_water_mark="solutions")  # exercise 1 written in the copy only
    script = tmp_path / "bin" / "hwm-lab"  # the console script pip writes: its folder, not the current one, on the path
    script.parent.mkdir()
    script.write_text("import sys\nfrom lab.cli import main\nsys.exit(main())\n")
    done = subprocess.run([str(python), str(script), "submit", "--student", "s1", "--out", "s1.zip"], cwd=copy,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "LANG": "C.UTF-8"})
    assert done.returncode == 1, done.stdout + done.stderr  # exercises 2 to 6 not started, in both folders
    assert f"checked and packed the files of {copy / 'exercises'}" in done.stdout, done.stdout
    with zipfile.ZipFile(copy / "s1.zip") as z:
        packed = z.read("files/exercises/high_water_mark.py").decode()
        manifest = json.loads(z.read("manifest.json"))
    assert packed == (copy / "exercises" / "high_water_mark.py").read_text() != \
        (made / "exercises" / "high_water_mark.py").read_text()
    assert [c["verdict"] for c in manifest["checks"]][:2] == ["passing", "not started"]
    assert not (made / ".hwm-lab").exists()  # the checks' traces went to the copy's own folder


@pytest.mark.spark
def test_a_class_graded_from_the_handout_gets_the_same_grades(made, spark, tmp_path):
    from lab.grade import job
    from tests.grade.helpers import make_class

    make_class(tmp_path / "subs")
    flags = ["--out", str(tmp_path / "handout"), "--max-file-mb", "1", "--trust-traces"]
    done = in_handout(made, "lab.grade", str(tmp_path / "subs"), *flags, "--master", "local[2]")
    assert done.returncode == 0, done.stderr[-3000:]
    # The full repository's grade: the same job, in the suite's own Spark session (one JVM fewer to start).
    flags[1] = str(tmp_path / "full")
    assert job.run(job.build_parser().parse_args([str(tmp_path / "subs"), *flags]), spark) == 0
    assert (tmp_path / "handout" / "grades.csv").read_text() == (tmp_path / "full" / "grades.csv").read_text()
    assert "alice,10,10,10,10,10,10,60,ok" in (tmp_path / "handout" / "grades.csv").read_text()


@pytest.mark.processes
def test_the_demo_serves_the_dashboard_where_a_node_stops_at_an_exercise_not_started(made, tmp_path):
    # The README's first command, after the set-up: the cluster and the dashboard come up on the stubs; a node that
    # needs an exercise not started is shown stopped, naming it; Ctrl-C stops every process the demo started.
    proc = subprocess.Popen([str(handout_python(made, tmp_path)), "-m", "lab.cli", "demo", "--port", "0",
                             "--dir", str(tmp_path / "demo")], cwd=made, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    said = []
    try:
        deadline = time.monotonic() + 90
        while not any("Ctrl-C stops" in line for line in said) and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                said.append(lines.get(timeout=1))
        url = next((m.group(1) for line in said if (m := re.search(r"dashboard: (http://127\.0\.0\.1:\d+/)", line))),
                   None)
        assert url, "".join(said)
        assert sum("NOT STARTED" in line for line in said) == 6
        with urllib.request.urlopen(url, timeout=10) as page:
            assert page.status == 200 and b"socket.io.min.js" in page.read()
        stopped = []
        while not stopped and time.monotonic() < deadline:
            with urllib.request.urlopen(url + "api/dashboard/state", timeout=10) as answer:
                nodes = json.loads(answer.read())["nodes"]
            stopped = [n for n in nodes if n["state"] == "exited"]
            time.sleep(0.5)
        assert stopped and all(n["exit_reason"].startswith("NotImplementedError: exercise ") for n in stopped), nodes
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        # Nothing it started is left: the cluster's daemon and nodes were in its process group.
        gone = time.monotonic() + 10
        while time.monotonic() < gone and _group_alive(proc.pid):
            time.sleep(0.2)
        assert not _group_alive(proc.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        shutil.rmtree(made / ".hwm-lab", ignore_errors=True)  # the demo's pointer to its cluster


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
