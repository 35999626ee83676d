"""The whole job: a small class of generated submissions (correct, planted bugs, malformed) graded end to end,
the same class through Spark's Hadoop file systems, and real simulator traces."""

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab.grade import job, session
from . import synth

from .helpers import full_runs, make_class

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

# Worked out by hand from the default rubric (lab/grade/rubric.toml) and what each planted bug breaks. These are
# version 1 submissions (no rule results), so each exercise's `rules` point is the share of its other nine points
# that the traces earned (7 of 9: 0.78); graded without a course secret, nothing is re-executed, so exercise 3's
# probe `match-acknowledged` (3 points) earns the share of its traced points too (5 of 6: 2.5, then rules 0.83):
# bob's leader commits alone, which shows in S1 (ex. 1 and 5: everything but logs-agree fails there);
# carol serves one index above the HWM (ex. 4 read-above-hwm, and S1's "e4 never served" in ex. 1 and 5);
# dave's HWM steps back (ex. 2 hwm-monotonic); erin's followers stop learning the HWM after the last fault
# (ex. 2 liveness, and S1's "HWM 4 everywhere"); frank drops a committed entry on restart (L1 runs:
# truncation-safe in ex. 3 and 6); gina's scenario expectations fail (2 points in every exercise, 1 in ex. 3);
# mia's torn last line is skipped with a warning; olga only submitted exercises 1 and 4; README.txt is no
# submission, and a row that says so.
EXPECTED = """\
student_id,exercise_1,exercise_2,exercise_3,exercise_4,exercise_5,exercise_6,total,grading_status
README.txt,0,0,0,0,0,0,0,not a submission: neither a zip nor a folder that holds a manifest.json
alice,10,10,10,10,10,10,60,ok
bob,0,10,10,10,4.44,10,44.44,ok
carol,7.78,10,10,4.44,7.78,10,50,ok
dave,10,7.78,10,10,10,10,57.78,ok
erin,7.78,7.78,10,10,7.78,10,53.34,ok
frank,10,10,8.33,10,10,7.78,56.11,ok
gina,7.78,7.78,8.33,7.78,7.78,8.89,48.34,ok
hank,0,0,0,0,0,0,0,missing manifest
ivan,0,0,0,0,0,0,0,malformed: runs/ex1-s1/events-B.jsonl line 3 is not JSON
judy,0,0,0,0,0,0,0,edited: runs/ex4-l1/events-A.jsonl line 5 has seq 6 after seq 4 (events out of sequence)
ken,0,0,0,0,0,0,0,unsafe archive: entry '../../escaped.txt' points outside the archive
liz,0,0,0,0,0,0,0,too large: runs/ex1-s1/events-cluster.jsonl.big is 3.0 MB uncompressed (limit 1 MB per file)
mia,10,10,10,10,10,10,60,ok
nick,0,0,0,0,0,0,0,malformed: runs/ex2-l1/events-C.jsonl line 7: field seq has the wrong type
olga,10,0,0,10,0,0,20,ok
"""


def grade(spark, submissions, out, *extra) -> int:
    args = job.build_parser().parse_args([str(submissions), "--out", str(out), "--max-file-mb", "1", "--trust-traces",
                                          *extra])
    return job.run(args, spark)


@pytest.fixture(scope="module")
def graded(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    make_class(root / "submissions")
    assert grade(spark, root / "submissions", root / "out") == 0
    return root


def test_grades_csv_matches_the_expectation_exactly(graded):
    assert (graded / "out" / "grades.csv").read_text() == EXPECTED


def test_every_output_is_written_and_nothing_else(graded):
    out = graded / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(["feedback", "gradescope", "grades.csv", "report.html",
                                                            "violations.csv", "violations.parquet", "similarity.csv",
                                                            "grade-state.json"])
    students = [line.split(",")[0] for line in EXPECTED.splitlines()[1:]]
    names = sorted(p.name for p in (out / "feedback").iterdir())
    played = [n for n in names if re.fullmatch(r"[a-z]+-ex\d\.html", n)]  # a failing run to play, by exercise
    assert sorted(set(names) - set(played)) == sorted(f"{s}.{ext}" for s in students for ext in ("html", "md"))
    assert played and all(f'href="{n}"' in (out / "feedback" / f"{n.split('-ex')[0]}.html").read_text()
                          for n in played)
    assert sorted(p.name for p in (out / "gradescope").iterdir()) == sorted(students)
    # ken's archive tried to write two levels up: nothing escaped.
    assert not list(graded.parent.rglob("escaped.txt"))
    assert sorted(p.name for p in graded.iterdir()) == ["out", "submissions"]


def test_violations_have_their_context(spark, graded):
    with open(graded / "out" / "violations.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["submission", "run", "exercise", "scenario", "check", "node", "index", "detail",
                             "seq", "time", "graded"]
    assert {r["submission"] for r in rows} == {"bob", "carol", "dave", "erin", "frank", "gina"}
    parquet = spark.read.parquet(str(graded / "out" / "violations.parquet"))
    assert parquet.count() == len(rows)
    bob = [r for r in rows if r["submission"] == "bob" and r["check"] == "hwm-majority"]
    assert [(r["run"], r["node"], r["index"]) for r in bob] == [("ex1-s1", "A", "4"), ("ex5-s1", "A", "4")]


def test_feedback_explains_the_first_violation_with_the_trace_around_it(graded):
    md = (graded / "out" / "feedback" / "bob.md").read_text()
    assert "Total: **44.44 / 60**" in md
    assert "### Exercise 1: high_water_mark: the majority rule, 0 / 10" in md
    assert "#### The HWM never exceeds what a majority held (`hwm-majority`), 0 / 4 points" in md
    assert "First violation (run ex1-s1, node A, t=0.15): A raised its HWM from 3 to 4 in generation 1, but only " \
           "1 of 3 nodes held index 4 (a majority is 2)" in md
    assert '>> {"v":1,"seq":43,' in md and '"type":"hwm_changed"' in md
    html = (graded / "out" / "feedback" / "bob.html").read_text()
    assert "<span class=\"here\">" in html and "The rule:" in html
    assert "could not be graded: **missing manifest**" in (graded / "out" / "feedback" / "hank.md").read_text()
    assert "was cut off, as when a node is killed while writing it: it was skipped" in \
        (graded / "out" / "feedback" / "mia.md").read_text()
    assert "Every check passed on every run" in (graded / "out" / "feedback" / "alice.md").read_text()


def test_gradescope_results_follow_the_autograder_format(graded):
    result = json.loads((graded / "out" / "gradescope" / "carol" / "results.json").read_text())
    assert result["score"] == 50
    assert len(result["tests"]) == 39  # one per (exercise, rubric entry), and each exercise's progress
    for t in result["tests"]:
        assert set(t) == {"name", "score", "max_score", "status", "output", "visibility"}
        assert t["status"] in ("passed", "failed") and t["visibility"] == "visible"
    failed = [t for t in result["tests"] if t["status"] == "failed"]
    assert [(t["name"].split(":")[0], t["name"].rsplit("[", 1)[1], t["score"], t["max_score"]) for t in failed] == [
        ("Exercise 1 (high_water_mark", "scenario]", 0, 2), ("Exercise 1 (high_water_mark", "rules]", 0.78, 1),
        ("Exercise 4 (check_read", "read-above-hwm]", 0, 5), ("Exercise 4 (check_read", "rules]", 0.44, 1),
        ("Exercise 5 (plan_truncation", "scenario]", 0, 2), ("Exercise 5 (plan_truncation", "rules]", 0.78, 1)]
    bad = json.loads((graded / "out" / "gradescope" / "ken" / "results.json").read_text())
    assert bad["score"] == 0 and bad["tests"][0]["status"] == "failed"


def test_the_class_report_has_its_pictures_and_tables(graded):
    html = (graded / "out" / "report.html").read_text()
    assert html.count("<svg") == 4  # histogram, per rule, per exercise, common failures
    for heading in ("Students", "Scores", "Failure rate per rule", "Pass rate per exercise",
                    "Most common failure messages", "Not gradable (7)"):
        assert f"<h2>{heading}</h2>" in html
    assert html.index("Not gradable") < html.index("<h2>Students</h2>") < html.index("<h2>Scores</h2>")
    # Each rule's failure rate is a real share of the graded students of grades.csv, and a rule of one exercise
    # fails no more students than lost points on that exercise there.
    with open(graded / "out" / "grades.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["grading_status"] == "ok"]
    table = html.split("<h2>Failure rate per rule</h2>")[1].split("</table>")[0]
    rates = {m[0]: (int(m[1]), int(m[2]), m[3]) for m in
             re.findall(r"<tr><td>([a-z-]+)</td><td>(\d+)</td><td>(\d+)</td><td>([\d.]+)%</td>", table)}
    assert len(rates) >= 14 and {g for _, g, _ in rates.values()} == {len(rows)}
    for check, (failing, of, rate) in rates.items():
        assert rate == f"{100 * failing / of:.1f}"
    for check, exercise in (("read-above-hwm", 4), ("hwm-monotonic", 2), ("liveness", 2), ("wal-truncation", 5)):
        assert rates[check][0] <= sum(1 for r in rows if float(r[f"exercise_{exercise}"]) < 10)
    assert rates["read-above-hwm"][0] == 1  # carol, who serves one index above the HWM
    assert "students per failure message, relative to the most common" not in html  # bars are real shares
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")  # no CDN, no external asset


def test_the_same_class_through_spark_file_systems(spark, graded, tmp_path):
    # URIs go through Hadoop's FileSystem API (what hdfs:// or s3a:// use on a cluster).
    out = tmp_path / "uri-out"
    assert grade(spark, "file://" + str(graded / "submissions"), "file://" + str(out)) == 0
    assert (out / "grades.csv").read_text() == EXPECTED


def test_real_simulator_traces_of_the_reference_solution_get_full_marks(spark, tmp_path):
    from lab.harness.scenario import simulate

    student = tmp_path / "subs" / "ref"
    runs = []
    for exercise, scenario in enumerate(["s1", "k1", "k2", "f8", "n4", "l1"], 1):
        verdict = simulate(scenario, seed=7, out=student / "runs" / scenario)
        assert verdict.passed
        runs.append({"run": scenario, "exercise": exercise, "scenario": scenario, "seed": 7, "source": "sim",
                     "dir": f"runs/{scenario}"})
    (student / "manifest.json").write_text(json.dumps(
        {"format": "hwm-lab-submission", "version": 1, "student": "ref", "lab_version": "0.1.0",
         "created": "2026-11-22T10:00:00Z", "files_sha256": {}, "exercises": [1, 2, 3, 4, 5, 6], "runs": runs}))
    assert grade(spark, tmp_path / "subs", tmp_path / "out") == 0
    assert (tmp_path / "out" / "grades.csv").read_text().splitlines()[1] == "ref,10,10,10,10,10,10,60,ok"


def test_help_does_not_start_spark():
    code = ("import sys, lab.grade.job, lab.grade.cli, lab.grade.rubric, lab.grade.report;"
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    out = subprocess.run([sys.executable, "-m", "lab.grade", "--help"], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=60)
    assert "SUBMISSIONS" in out.stdout and "--master" in out.stdout and "--rubric" in out.stdout


def test_a_missing_submissions_folder_is_a_usage_error(tmp_path):
    args = job.build_parser().parse_args([str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")])
    assert job.run(args) == 2
    assert not (tmp_path / "out").exists()


def test_without_a_course_secret_the_grader_refuses_unless_told_to_trust_the_traces(tmp_path, monkeypatch, capsys):
    for name in ("HWM_LAB_COURSE_SECRET", "HWM_LAB_COURSE_SECRET_FILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "subs").mkdir()
    args = job.build_parser().parse_args([str(tmp_path / "subs"), "--out", str(tmp_path / "out")])
    assert job.run(args) == 2
    err = capsys.readouterr().err
    assert "no course secret" in err and "--course-secret" in err and "--trust-traces" in err
    assert not (tmp_path / "out").exists()


def test_the_class_report_says_where_its_runs_came_from():
    from lab.grade import report
    from lab.grade.rubric import load

    trusted = report.class_report(load(None), [], [], {}, 0, trusted=True)
    checked = report.class_report(load(None), [], [], {}, 0)
    assert "--trust-traces" in trusted and "nothing was re-executed" in trusted
    assert "run again by the grader in its sandbox" in checked and "--trust-traces" not in checked


def test_a_large_class_gets_a_partition_per_128_mb_and_is_cached_on_disk(spark):
    cores = spark.sparkContext.defaultParallelism  # local mode: one partition per core for a small class
    assert session.partitions_for(spark, None, 0) == cores
    assert session.partitions_for(spark, None, 20 * session.PARTITION_BYTES + 1) == max(cores, 21)
    assert session.partitions_for(spark, 3, 20 * session.PARTITION_BYTES) == 3  # --shuffle-partitions wins
    assert not session.on_disk(250 * 2**20) and session.on_disk(2500 * 2**20)


def test_a_small_local_class_gets_a_jvm_that_compiles_with_c1_only(tmp_path, monkeypatch):
    import zipfile

    subs = tmp_path / "subs"
    (subs / "ann" / "runs").mkdir(parents=True)
    (subs / "ann" / "runs" / "events-A.jsonl").write_bytes(b"x" * 1000)
    with zipfile.ZipFile(subs / "bob.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("runs/r1/events-A.jsonl", b"y" * 50_000)  # counted by what it unpacks to, not its own size
    assert session.class_bytes(str(subs)) == 51_000

    def args(*extra):
        return job.build_parser().parse_args([str(subs), "--out", str(tmp_path / "out"), "--trust-traces", *extra])

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert session.quick_jit(args()) and session.quick_jit(args("--master", "local[2]"))
    assert session.quick_jit(args("--master", "spark://127.0.0.1:7077"))  # the driver and a cluster's executors
    assert not session.quick_jit(job.build_parser().parse_args(["s3a://bucket/subs", "--out", str(tmp_path / "o")]))
    monkeypatch.setattr(session, "QUICK_JIT_BYTES", 50_999)
    assert not session.quick_jit(args())  # a large class: C2's compilations pay off
    # A re-grade where bob's zip is unchanged grades ann's folder only: a small part, C1 again.
    assert session.class_bytes(str(subs), {"bob.zip"}) == 1000 and session.class_bytes(str(subs), {"ann"}) == 50_000
    monkeypatch.setattr(session, "QUICK_JIT_BYTES", 49_999)
    assert session.quick_jit(args(), {"bob.zip"}) and not session.quick_jit(args(), {"ann"})
    quick = session.session_conf(quick=True, java_options=[])
    assert quick["spark.driver.extraJavaOptions"] == quick["spark.executor.defaultJavaOptions"] == "-XX:TieredStopAtLevel=1"
    assert not {"spark.driver.extraJavaOptions", "spark.executor.defaultJavaOptions"} & set(session.session_conf(java_options=[]))


def test_the_progress_line_names_the_jvms_that_compile_with_c1_only():
    # Under spark-submit the driver's JVM runs already: with a local master no JVM of the job's own is left to
    # start, so nothing is said of C1; on a cluster, its executors.
    assert job.compiling(True, set(), False, None) == "; the class is small: the JVM compiles with C1 only"
    assert job.compiling(True, {"bob.zip"}, False, "spark://h:7077") == (
        "; the part to grade is small: the driver and the executors compile with C1 only")
    assert job.compiling(True, set(), True, "spark://h:7077") == (
        "; the class is small: the cluster's executors compile with C1 only")
    assert job.compiling(True, set(), True, "local[2]") == ""
    assert job.compiling(False, set(), False, None) == ""
