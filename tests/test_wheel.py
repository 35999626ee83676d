"""The lab installed as a wheel (`pip install .`, not editable) holds every file it reads at run time: the wheel is
built from the repository's files, installed into a fresh virtual environment, and there it grades a class of two
(re-executing their code), writes a run as one HTML file and serves the dashboard in Spanish, every asset of it."""

from __future__ import annotations

import contextlib
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
import zipfile
from pathlib import Path

import pytest

from lab.grade.sandbox import bubblewrap as sandbox
from tests.studentcode import StudentCode

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lab", "web", "exercises", "solutions")
pytestmark = [pytest.mark.spark, pytest.mark.processes]


def tracked(root: Path = ROOT) -> list[str]:
    """The repository's files (git's list; without git, every file but caches)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True, timeout=60)
        return sorted(f for f in out.stdout.decode().split("\0") if f and (root / f).is_file())
    except (OSError, subprocess.CalledProcessError):
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                      and not {".git", ".venv", "__pycache__", ".hwm-lab"} & set(p.relative_to(root).parts))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The wheel, built offline from a copy of the repository's files, installed alone into a fresh venv whose other
    packages (flask, pyspark, ...) come from this one's site-packages, without this one's editable install."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    for name in tracked():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(tmp / "dist"), str(source)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    [wheel] = (tmp / "dist").glob("hwm_lab-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # after the wheel's own
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env.update(PYSPARK_PYTHON=str(python), LANG="C.UTF-8")
    return {"wheel": wheel, "venv": venv, "python": python, "site": site, "tmp": tmp, "env": env,
            "hwm-lab": venv / "bin" / "hwm-lab"}


def run(installed, *args, cwd: Path, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """`hwm-lab ARGS` as the installed console script, away from the repository."""
    return subprocess.run([str(installed["hwm-lab"]), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**installed["env"], **(env or {})})


def test_the_wheel_holds_every_file_of_the_labs_packages(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    wanted = [f for f in tracked() if f.split("/")[0] in PACKAGES]
    assert len(wanted) > 150 and [f for f in wanted if f not in names] == []
    assert {"web/static/favicon.svg", "web/static/vendor/socket.io/socket.io.min.js.map"} <= names
    # and the installed lab is that one, not the repository's
    where = subprocess.run([str(installed["python"]), "-c", "import lab; print(lab.__file__)"], cwd=installed["tmp"],
                           capture_output=True, text=True, check=True, env=installed["env"]).stdout
    assert where.startswith(str(installed["site"]))


@pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")
def test_the_installed_lab_grades_a_class_of_two(installed):
    tmp = installed["tmp"]
    subs = tmp / "subs"
    subs.mkdir()
    # ana hands in the reference answers; ben exercise 1 as the article writes it (wrong for 4 nodes)
    for student, mistake in (("ana", None), ("ben", ("    return sorted(match_indexes, reverse=True)[majority - 1]",
                                                      "    return sorted(match_indexes)[len(match_indexes) // 2]"))):
        code = StudentCode(tmp / f"code-{student}", name="exercises")
        if mistake:
            code.edit("high_water_mark.py", *mistake)
        done = run(installed, "submit", "--student", student, "--out", str(subs / f"{student}.zip"),
                   cwd=code.root, env={"PYTHONPATH": str(code.root)})
        assert (subs / f"{student}.zip").exists(), done.stdout + done.stderr
    (tmp / "course.key").write_text("the course secret of an installed lab")
    rubric = tmp / "rubric.toml"  # the shipped rubric without the explorer's walks (most of a pair's time)
    rubric.write_text(re.sub(r"^(\[exercises\.\d+\])$", r"\1\nexplore = 0",
                             (installed["site"] / "lab" / "grade" / "inputs" / "rubric.toml").read_text(), flags=re.M))
    done = run(installed, "grade", str(subs), "--out", str(tmp / "out"), "--course-secret", str(tmp / "course.key"),
               "--rubric", str(rubric), "--master", "local[2]", cwd=tmp, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    grades = (tmp / "out" / "grades.csv").read_text().splitlines()
    assert grades[1].startswith("ana,10,10,10,10,10,10,60,") and grades[2].startswith("ben,")
    assert float(grades[2].split(",")[1]) < 10
    played = (tmp / "out" / "feedback" / "ben-ex1.html").read_text()  # the page packed from the installed files
    assert 'id="hwm-run"' in played and "data:image/svg+xml;base64," in played  # its icon: favicon.svg
    assert "<table" in (tmp / "out" / "report.html").read_text()


def test_the_installed_lab_writes_a_run_as_one_file_and_serves_the_dashboard_in_spanish(installed):
    tmp = installed["tmp"]
    assert run(installed, "simulate", "s1", "--out", str(tmp / "s1"), cwd=tmp).returncode == 0
    done = run(installed, "replay", str(tmp / "s1"), "--html", str(tmp / "s1.html"), cwd=tmp)
    assert done.returncode == 0, done.stderr
    page = (tmp / "s1.html").read_text()
    assert "hwm-run" in page and not re.search(r'(?:src|href)="/static/', page)  # one file: nothing to fetch
    proc = subprocess.Popen([str(installed["hwm-lab"]), "replay", str(tmp / "s1"), "--port", "0", "--lang", "es"],
                            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=installed["env"])
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    said: list[str] = []
    try:
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(queue.Empty):
                said.append(lines.get(timeout=1))
                found = re.search(r"(http://127\.0\.0\.1:\d+/)", said[-1])  # (the dashboard's line, in Spanish)
                url = found.group(1) if found else None
        assert url, "".join(said)
        with urllib.request.urlopen(url, timeout=10) as answer:
            html = answer.read().decode()
        assert 'lang="es"' in html, html[:300]
        assets = sorted(set(re.findall(r'(?:src|href)="(/static/[^"]+)"', html)))
        assert "/static/favicon.svg" in assets and "/static/vendor/socket.io/socket.io.min.js" in assets
        static = ROOT / "web" / "static"
        every = [f"/static/{p.relative_to(static).as_posix()}" for p in static.rglob("*") if p.is_file()]
        for name in [*assets, *every]:
            with urllib.request.urlopen(url.rstrip("/") + name, timeout=10) as answer:
                assert answer.status == 200 and answer.read(), name
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
