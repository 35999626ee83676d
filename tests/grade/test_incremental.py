"""Re-grading only what changed: unchanged submissions keep their results, changed ones are graded again, and the
outputs are those of a full grade; a changed rubric grades everything; no stale file survives; a folder of other
files is refused without --force."""

import csv
import shutil

import pytest

from lab.grade.outputs import incremental
from lab.grade.spark import job
from lab.grade.outputs import outdir
from lab.grade.spark import session

from . import synth
from .helpers import full_runs, make_class



def grade(spark, subs, out, *extra, capsys=None) -> int:
    args = job.build_parser().parse_args([str(subs), "--out", str(out), "--max-file-mb", "1", "--trust-traces",
                                          *extra])
    return job.run(args, spark)


def violations(path):
    with open(path, newline="") as f:
        return sorted(tuple(r) for r in csv.reader(f))


def outputs(out):
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if "violations.parquet" not in str(p))


@pytest.mark.spark
def test_a_re_grade_reuses_unchanged_submissions_and_equals_a_full_grade(spark, tmp_path, capsys):
    subs = tmp_path / "subs"
    make_class(subs)
    assert grade(spark, subs, tmp_path / "out") == 0
    # Two students change their submissions: bob fixes his bug, alice breaks hers; erin leaves the class.
    synth.write_submission(subs, "bob", full_runs())
    synth.write_submission(subs, "alice", full_runs(frozenset({"hwm-back"})))
    (subs / "erin.zip").unlink()
    capsys.readouterr()
    assert grade(spark, subs, tmp_path / "out") == 0
    err = capsys.readouterr().err
    assert "12 unchanged submissions keep their previous results; 2 graded now" in err

    shutil.copytree(subs, tmp_path / "subs2")
    assert grade(spark, tmp_path / "subs2", tmp_path / "full") == 0  # a full grade of the same class
    out, full = tmp_path / "out", tmp_path / "full"
    for name in ("grades.csv", "report.html"):
        assert (out / name).read_text() == (full / name).read_text().replace(str(tmp_path / "subs2"),
                                                                              str(subs)), name
    assert violations(out / "violations.csv") == violations(full / "violations.csv")
    for student in ("bob", "carol", "alice", "mia"):
        assert (out / "feedback" / f"{student}.md").read_text() == (full / "feedback" / f"{student}.md").read_text()
    assert outputs(out) == outputs(full)
    assert not (out / "feedback" / "erin.md").exists() and not (out / "gradescope" / "erin").exists()
    assert "alice,10,7.78," in (out / "grades.csv").read_text() and "bob,10,10,10" in (out / "grades.csv").read_text()


@pytest.mark.spark
def test_a_changed_rubric_grades_everything_and_leaves_nothing_stale(spark, tmp_path, capsys):
    subs = tmp_path / "subs"
    synth.write_submission(subs, "alice", full_runs())
    synth.write_submission(subs, "erin", full_runs(frozenset({"stall"})))
    out = tmp_path / "out"
    assert grade(spark, subs, out, "--lms", "moodle") == 0
    (subs / "erin.zip").unlink()
    rubric = tmp_path / "rubric.toml"
    rubric.write_text((job.rubric_module.default_text()).replace('name = "HWM Lab"', 'name = "Lab 2"'))
    capsys.readouterr()
    assert grade(spark, subs, out, "--rubric", str(rubric)) == 0
    err = capsys.readouterr().err
    assert "another rubric" in err and "graded now" not in err.split("another rubric")[0]
    assert not (out / "feedback" / "erin.md").exists() and not (out / "gradescope" / "erin").exists()
    assert not (out / "lms").exists()  # not asked for this time: the previous file is gone
    assert [r.split(",")[0] for r in (out / "grades.csv").read_text().splitlines()] == ["student_id", "alice"]


@pytest.mark.spark
def test_a_folder_of_other_files_is_refused_without_force(spark, tmp_path, capsys):
    subs = tmp_path / "subs"
    synth.write_submission(subs, "alice", full_runs()[:1])
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert grade(spark, subs, out) == 2
    assert "holds files the grader did not write (notes.txt)" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine"
    assert grade(spark, subs, out, "--force") == 0
    assert not (out / "notes.txt").exists() and (out / "grades.csv").exists()


def test_the_fingerprint_is_the_same_in_every_process():
    """A re-grade is another process: the fingerprint must not depend on its string hashing (a set's order)."""
    import os
    import subprocess
    import sys

    code = ("from lab.grade.inputs import rubric; from lab.grade.outputs import incremental; "
            "from lab.grade.spark import job; "
            "a = job.build_parser().parse_args(['s', '--out', 'o']); "
            "print(incremental.fingerprint(rubric.load(None), a))")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2, 3)}
    assert len(seen) == 1 and len(incremental.grader_version()) == 16


def test_a_grade_with_another_course_secret_or_none_reuses_nothing():
    from types import SimpleNamespace

    from lab.grade.inputs.rubric import load

    def fp(secret):
        return incremental.fingerprint(load(None), SimpleNamespace(secret=secret, max_file_mb=1, max_submission_mb=1))

    trusted, one, other = fp(None), fp(b"a course secret, long enough"), fp(b"another secret, long enough")
    assert trusted["runs"] == "submitted" and one["runs"].startswith("re-executed ")
    assert len({str(trusted), str(one), str(other)}) == 3  # other seeds, other runs: nothing carries over
    assert one == fp(b"a course secret, long enough")  # the same secret: the same grade, reusable
    assert "course secret" not in str(one) and "a course" not in one["runs"]  # the secret itself is never kept


def test_a_re_grade_of_a_few_changed_submissions_gets_a_jvm_that_compiles_with_c1_only(tmp_path, monkeypatch):
    """The JIT is chosen from the part to grade, not from the whole class: hashes come before the JVM starts."""
    import zipfile

    from lab.grade.inputs.storage import LocalStorage

    subs, out = tmp_path / "subs", tmp_path / "out"
    (subs / "ann" / "runs").mkdir(parents=True)
    (subs / "ann" / "runs" / "events-A.jsonl").write_bytes(b"x" * 1000)
    with zipfile.ZipFile(subs / "bob.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("runs/r1/events-A.jsonl", b"y" * 50_000)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setattr(session, "QUICK_JIT_BYTES", 10_000)
    quick, said = [], []
    monkeypatch.setattr(job, "spark_session", lambda *a, **k: quick.append(k["quick"]))
    args = job.build_parser().parse_args([str(subs), "--out", str(out)])
    args.hashes = incremental.entry_hashes(LocalStorage(), str(subs), str(out))
    args.new = outdir.begin(LocalStorage(), str(out))  # where the grade writes, as job.run sets it
    job._start(args, said.append)  # no previous grade: the whole class, large
    args.previous = incremental.Previous(entries={"bob.zip": {"hash": args.hashes["bob.zip"], "student": "bob"}})
    job._start(args, said.append)  # bob's zip is unchanged: only ann's folder is graded
    args.previous.entries["bob.zip"]["hash"] = "0" * 64
    job._start(args, said.append)  # bob's zip changed
    assert quick == [False, True, False]
    assert "the part to grade is small: the JVM compiles with C1 only" in said[1]


def test_a_submission_is_changed_by_its_content_not_its_size_or_time(tmp_path):
    """The hashes are of the content, computed alike by every thread: a byte changed with the same size and
    modification time is a change; an entry that is neither a zip nor a folder, or the output folder, is none."""
    import hashlib
    import os
    import zipfile

    from lab.grade.inputs.storage import LocalStorage

    subs = tmp_path / "subs"
    for i in range(12):
        (subs / f"s{i:02d}" / "runs").mkdir(parents=True)
        (subs / f"s{i:02d}" / "runs" / "events-A.jsonl").write_bytes(b"x" * (1000 + i))
    with zipfile.ZipFile(subs / "bob.zip", "w") as z:
        z.writestr("manifest.json", b"{}")
    (subs / "notes.txt").write_text("not a submission")
    (subs / "out").mkdir()
    storage = LocalStorage()
    before = incremental.entry_hashes(storage, str(subs), str(subs / "out"))
    assert sorted(before) == ["bob.zip", *[f"s{i:02d}" for i in range(12)]]
    assert before["bob.zip"] == hashlib.sha256((subs / "bob.zip").read_bytes()).hexdigest()
    assert len(set(before.values())) == 13
    events = subs / "s05" / "runs" / "events-A.jsonl"
    stat = events.stat()
    events.write_bytes(b"x" * 1004 + b"y")
    os.utime(events, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert events.stat().st_size == stat.st_size and events.stat().st_mtime_ns == stat.st_mtime_ns
    after = incremental.entry_hashes(storage, str(subs), str(subs / "out"))
    assert {n for n in before if before[n] != after[n]} == {"s05"}
