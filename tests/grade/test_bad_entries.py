"""No submission stops the class: beside two good submissions, one entry of every bad kind (a link, a folder of
links, a name with odd bytes, zips with odd members, a zip bomb, an unreadable file, a pipe, ...) is judged on its
own with a status, in every step (hashing, staging, re-execution, similarity), with a course secret and trusting the
traces; the good ones get the grades they get alone. A verbatim copy of solutions/ is listed against solutions/
either way."""

import csv
import json
import os
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path

import pytest

from lab.grade import job, sandbox
from lab.grade.storage import LocalStorage

from . import styles, synth
from .helpers import full_runs, rubric_without_exploring

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
SECRET = "the course secret of the bad entries' class"


def reference_files() -> dict[str, bytes]:
    return {f"exercises/{p.name}": p.read_bytes() for p in sorted((ROOT / "solutions").glob("*.py"))
            if p.name != "__init__.py"}


def good(folder: Path) -> None:
    """alice sends the reference answers verbatim (a zip), dora her own answers (an unpacked folder)."""
    synth.write_submission(folder, "alice", full_runs(), version=2, files=reference_files())
    synth.write_submission(folder, "dora", full_runs(), as_zip=False, version=2, files=styles.student_files(3))


def bad(folder: Path) -> dict[str, str]:
    """One entry of every bad kind; returns, per student id the grade gives it, the start of its status."""
    alice = folder / "alice.zip"
    (folder / "link.zip").symlink_to(alice)
    (folder / "linked").symlink_to(folder / "dora", target_is_directory=True)
    links = folder / "links"
    links.mkdir()
    for name in ("manifest.json", "runs", "files"):
        (links / name).symlink_to(folder / "dora" / name)
    odd = os.fsdecode(b"odd-\xff\n,\"name.zip")  # undecodable bytes, a newline, a comma and a quote
    synth.write_submission(folder / "made", "oddity", full_runs(), version=2, files=styles.student_files(5))
    shutil.move(folder / "made" / "oddity.zip", folder / odd)
    synth.write_submission(folder / "made", "members", full_runs(), version=2, files=styles.student_files(7))
    with zipfile.ZipFile(folder / "made" / "members.zip", "a") as z:  # odd but harmless members: left alone
        for name in ("files//etc/passwd", "files/exercises/deep/er.py", "files/exercises/ünï.py", "files/x"):
            z.writestr(name, "import os\n")
    shutil.move(folder / "made" / "members.zip", folder / "members.zip")
    shutil.copy(alice, folder / "escape.zip")
    with zipfile.ZipFile(folder / "escape.zip", "a") as z:
        z.writestr("files/../../escaped.py", "nothing\n")
    shutil.copy(alice, folder / "bomb.zip")
    with zipfile.ZipFile(folder / "bomb.zip", "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("runs/ex1-s1/events-A.jsonl.bak", b"\0" * (200 * 1024 * 1024))  # 200 MB in 200 kB
    synth.write_submission(folder / "made", "garbled", full_runs(), version=2, files=reference_files())
    data = bytearray((folder / "made" / "garbled.zip").read_bytes())
    start = data.index(b"files/exercises/high_water_mark.py") + 40  # inside that member's compressed bytes
    data[start:start + 64] = bytes(64)
    (folder / "garbled.zip").write_bytes(bytes(data))
    (folder / "notazip.zip").write_bytes(os.urandom(2000))
    shutil.copy(alice, folder / "locked.zip")
    os.chmod(folder / "locked.zip", 0)
    os.mkfifo(folder / "pipe.zip")
    fifo = folder / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "manifest.json")
    shutil.rmtree(folder / "made")
    return {"link": "unsafe folder: link.zip is a link", "linked": "unsafe folder: linked is a link",
            "links": "unsafe folder: manifest.json is a link", "oddity": "ok", "members": "ok",
            "escape": "unsafe archive: entry 'files/../../escaped.py'", "bomb": "too large",
            "garbled": "malformed: cannot read the submission", "notazip": "malformed: not a zip archive",
            "locked": "malformed: cannot read the submission (PermissionError",
            "fifo": "malformed: manifest.json is not a regular file"}


@pytest.fixture
def unreadable(monkeypatch):
    """A file of mode 0 cannot be read, also where the tests run as root (whom permissions do not stop)."""
    if os.geteuid() != 0:
        return

    def refuse(read):
        def guarded(self, path, *args):
            if stat.S_IMODE(os.stat(path).st_mode) == 0:
                raise PermissionError(13, "Permission denied", path)
            return read(self, path, *args)
        return guarded
    monkeypatch.setattr(LocalStorage, "read", refuse(LocalStorage.read))
    monkeypatch.setattr(LocalStorage, "open_zip", refuse(LocalStorage.open_zip))


def grade(spark, subs: Path, out: Path, mode: list[str]) -> dict[str, dict]:
    args = job.build_parser().parse_args([str(subs), "--out", str(out), *mode])
    assert job.run(args, spark) == 0
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


MODES = {"secret": ["--course-secret"], "trusted": ["--trust-traces"]}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")
def test_every_bad_entry_gets_a_status_and_the_good_ones_their_grades_alone(spark, tmp_path, mode, unreadable):
    key = tmp_path / "course.key"
    key.write_text(SECRET)
    flags = [MODES[mode][0], str(key)] if mode == "secret" else MODES[mode]
    # The statuses are the point, not the explorer's feedback: no walks (they are most of a re-executed pair's time).
    flags = [*flags, "--rubric", rubric_without_exploring(tmp_path)]
    alone, crowd = tmp_path / "alone", tmp_path / "crowd"
    good(alone)
    good(crowd)
    expected = bad(crowd)
    by_itself = grade(spark, alone, tmp_path / "out-alone", flags)
    graded = grade(spark, crowd, tmp_path / "out", flags)
    for student in ("alice", "dora"):
        assert graded[student] == by_itself[student]
    assert graded["alice"]["total"] == "60" and graded["alice"]["grading_status"] == "ok"
    for student, status in expected.items():
        assert graded[student]["grading_status"].startswith(status), (student, graded[student])
    out = tmp_path / "out"
    # A re-grade hashes the class again, link and pipe and all, and keeps what did not change.
    again = grade(spark, crowd, out, flags)
    assert again == graded
    state = json.loads((out / "grade-state.json").read_text())
    assert {"links", os.fsdecode(b"odd-\xff\n,\"name.zip")} <= set(state["entries"])
    for path in out.rglob("*"):  # every output is valid UTF-8, whatever the names in SUBMISSIONS
        if path.is_file() and path.suffix in (".csv", ".md", ".html", ".json"):
            path.read_text(encoding="utf-8")
    # Point 4: the verbatim copy of the reference is listed against solutions/, in both modes.
    with open(out / "similarity.csv", newline="") as f:
        pairs = {(r["scope"], r["student_a"], r["student_b"]) for r in csv.DictReader(f)}
    assert ("whole submission", "alice", "solutions/") in pairs
    assert not list(Path(tempfile.gettempdir()).glob(f"{sandbox.FOLDER_PREFIX}{os.getpid()}-*"))


def test_hashing_a_class_never_reads_a_link_or_a_pipe(tmp_path):
    from lab.grade import incremental

    good(tmp_path / "subs")
    folder = tmp_path / "subs" / "dora"
    (folder / "elsewhere").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe")
    (tmp_path / "subs" / "top.zip").symlink_to("/dev/zero")
    hashes = incremental.entry_hashes(LocalStorage(), str(tmp_path / "subs"), str(tmp_path / "out"))
    assert set(hashes) == {"alice.zip", "dora"}
    before = hashes["dora"]
    (folder / "elsewhere").unlink()
    assert incremental.entry_hashes(LocalStorage(), str(tmp_path / "subs"), str(tmp_path / "out"))["dora"] != before


@pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")
def test_every_entry_is_a_row_none_that_is_no_student_reaches_the_lms_and_the_report_lists_them_first(
        spark, tmp_path, capsys):
    key = tmp_path / "course.key"
    key.write_text(SECRET)
    subs = tmp_path / "subs"
    good(subs)
    synth.write_submission(subs, "vera", full_runs())  # format version 1: traces, no files to run
    zipfile.ZipFile(subs / "s10-empty.zip", "w").close()
    made = tmp_path / "made"
    synth.write_submission(made, "gus", full_runs(), version=2, files=styles.student_files(9))
    synth.write_submission(made, "李明", full_runs(), version=2, files=styles.student_files(4))
    synth.write_submission(made, "bad id", full_runs(), version=2, files=styles.student_files(6))
    with zipfile.ZipFile(subs / "bulk.zip", "w") as z:  # a zip of zips (an LMS's bulk download)
        z.write(made / "gus.zip", "gus_1001_submission-gus.zip")
        z.write(made / "李明.zip", "li_1002_submission.zip")
    shutil.copy(made / "bad id.zip", subs / "odd.zip")
    shutil.copy(subs / "alice.zip", subs / "alice-again.zip")  # the same submission twice
    (subs / "notes.txt").write_text("grading notes, not a submission\n")
    args = job.build_parser().parse_args([str(subs), "--out", str(tmp_path / "out"), "--course-secret", str(key),
                                          "--rubric", rubric_without_exploring(tmp_path), "--lms", "canvas"])
    assert job.run(args, spark) == 0
    out = tmp_path / "out"
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = [(r["student_id"], r["total"], r["grading_status"]) for r in csv.DictReader(f)]
    status = {s: st for s, _, st in rows}
    assert len(rows) == 9  # alice, dora, vera, s10-empty, gus, 李明, odd, alice-again, notes.txt
    assert [s for s, _, st in rows if st == "ok"] == ["alice", "dora", "gus", "李明"]
    assert status["vera"].startswith("not re-executable: format version 1 holds no exercise files")
    assert status["s10-empty"] == "missing manifest: the submission is empty"
    assert status["odd"].startswith("malformed: manifest.json student 'bad id' is not a valid student id")
    assert status["notes.txt"].startswith("not a submission")
    assert sorted(st for s, _, st in rows if s == "alice") == [
        "duplicate: alice.zip, also by alice, is graded instead (newer)", "ok"]
    # the gradebook gets the graded students only; the rest is listed beside it, with the reason
    with open(out / "lms" / "canvas.csv", newline="", encoding="utf-8") as f:
        assert [r[2] for r in list(csv.reader(f))[2:]] == ["alice", "dora", "gus", "李明"]
    with open(out / "lms" / "canvas-not-imported.csv", newline="", encoding="utf-8") as f:
        left = {r["entry"]: r["why"] for r in csv.DictReader(f)}
    assert set(left) == {"vera.zip", "s10-empty.zip", "odd.zip", "alice-again.zip", "notes.txt"}
    # report.html says them first, each by its entry; the progress lines too
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index("<h2>Not gradable (5)</h2>") < page.index("<h2>Students</h2>") < page.index("<h2>Scores</h2>")
    first = page.split("<h2>Students</h2>")[0]
    assert all(f"<td>{entry}</td>" in first for entry in left)
    said = capsys.readouterr().err
    assert "9 entries of" in said and all(f"not gradable: {entry} (" in said for entry in left)
    assert (out / "feedback" / "gus.html").exists() and not (out / "feedback" / "alice-again.html").exists()
