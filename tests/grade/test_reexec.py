"""The re-executing grade end to end: submissions made with `hwm-lab submit` from a student's own code, graded
with a course secret so that the grader runs every submission's code in its sandbox on Spark."""

import csv
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from lab.grade import job, reexec, sandbox
from lab.grade.archive import Limits
from lab.grade.storage import LocalStorage
from lab.grade.submissions import catalog
from lab.grade import rubric as rubric_module
from tests.studentcode import StudentCode

from .helpers import rewrite_zip, rubric_without_exploring

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")]

SECRET = "a course secret that is long enough"
# The classic mistake of exercise 3: answering the follower's log end instead of prev_index + len(entries).
LOG_END = ("match_index=prev_index + len(entries),",
           "match_index=log.log_end + len(new) - (0 if truncate_from is None else log.log_end - truncate_from + 1),")
NOT_STARTED = b"    raise NotImplementedError(\"exercise 4\")\n    if index < 1:"  # as the handout's stub
# Exercise 1 as the article writes it: wrong for even cluster sizes (scenario N4 has four nodes).
ARTICLE = ("    return", "    return sorted(match_indexes)[len(match_indexes) // 2]\n    return")


def submit(tmp: Path, student: str, edit=None, file: str = "") -> Path:
    code = StudentCode(tmp / f"code-{student}", name="exercises")
    if edit:
        text = (code.path / file).read_text()
        first = text.index(edit[0], text.index("def "))
        (code.path / file).write_text(text[:first] + edit[1] + text[first + len(edit[0]):])
    out = tmp / "zips" / f"{student}.zip"
    done = code.cli("submit", "--student", student, "--dir", str(tmp / f"checks-{student}"), "--out", str(out),
                    cwd=tmp)
    assert out.exists(), done.stdout + done.stderr
    return out


def manifest_edit(path: Path, change) -> None:
    def rewrite(name, data):
        if name != "manifest.json":
            return data
        m = json.loads(data)
        change(m)
        return json.dumps(m).encode()
    rewrite_zip(path, rewrite)


def claim_every_rule_ok(m):
    for check in m["checks"]:
        for rule in check["rules"]:
            rule["ok"] = True


def copy_as(src: Path, folder: Path, student: str, *, files_from: Path | None = None, version: int = 2) -> Path:
    """A copy of a submission under another student's name; with files_from, that submission's exercise files
    in place of its own, and every hash in the manifest edited to match them."""
    dst = folder / f"{student}.zip"
    shutil.copy(src, dst)
    import zipfile

    theirs = {}
    if files_from:
        with zipfile.ZipFile(files_from) as z:
            theirs = {n: z.read(n) for n in z.namelist() if n.startswith("files/")}
    rewrite_zip(dst, lambda n, d: theirs.get(n, d))
    hashes = {n[len("files/"):]: hashlib.sha256(d).hexdigest() for n, d in theirs.items()}

    def change(m):
        m["student"], m["version"] = student, version
        m["files_sha256"].update(hashes)
        for run in m["runs"]:
            run["files_sha256"] = {k: hashes.get(k, v) for k, v in run["files_sha256"].items()}
        if version == 1:
            del m["checks"]
    manifest_edit(dst, change)
    return dst


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("made")
    return {"honest": submit(tmp, "alice"),
            "log_end": submit(tmp, "lena", LOG_END, "follower.py"),
            "article": submit(tmp, "carl", ARTICLE, "high_water_mark.py"),
            "tmp": tmp}


def grade(spark, subs: Path, out: Path, *extra) -> dict:
    args = job.build_parser().parse_args([str(subs), "--out", str(out), *extra])
    assert job.run(args, spark) == 0
    with open(out / "grades.csv", newline="") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(spark, made, tmp_path_factory, monkeypatch_module):
    root = tmp_path_factory.mktemp("class")
    subs = root / "subs"
    subs.mkdir()
    shutil.copy(made["honest"], subs / "alice.zip")
    lena = shutil.copy(made["log_end"], subs / "lena.zip")
    manifest_edit(Path(lena), claim_every_rule_ok)
    # carl sends the reference's runs, made from other code, with the hashes edited to match his own files
    copy_as(made["honest"], subs, "carl", files_from=made["article"])
    # vic sends carl's code honestly, but as version 1: graded from the grader's runs only
    copy_as(made["article"], subs, "vic", version=1)
    # lou's exercise 2 loops forever, and exercise 4 is not started
    lou = copy_as(made["honest"], subs, "lou")
    rewrite_zip(lou, lambda n, d: d.replace(b"    # Responses", b"    while True:\n        pass\n    # Responses", 1)
                if n == "files/exercises/leader.py" else d.replace(b"    if index < 1:", NOT_STARTED, 1)
                if n == "files/exercises/reads.py" else d)
    manifest_edit(lou, lambda m: None)
    monkeypatch_module.setenv("HWM_LAB_COURSE_SECRET", SECRET)
    first = grade(spark, subs, root / "out")
    again = grade(spark, subs, root / "again")
    # the same code sent honestly by carl and vic, each under their own name (their own seeds)
    honest = root / "honest"
    honest.mkdir()
    shutil.copy(made["article"], honest / "carl.zip")
    copy_as(made["article"], honest, "vic")
    # (scores do not depend on the explorer, whose feedback `first` and `again` show: no walks here)
    honest_out = grade(spark, honest, root / "honest-out", "--rubric", rubric_without_exploring(made["tmp"]))
    # a re-grade into the first grade's folder: nothing changed, so every result is reused
    return {"first": first, "again": again, "honest": honest_out, "root": root,
            "regrade": grade(spark, subs, root / "out")}


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def row(grades, student):
    return [grades[student][f"exercise_{n}"] for n in range(1, 7)] + [grades[student]["total"]]


def test_the_reference_answers_earn_full_marks(graded):
    assert row(graded["first"], "alice") == ["10"] * 6 + ["60"]


def test_the_log_end_follower_loses_three_points_of_exercise_3_whatever_its_manifest_says(graded):
    g = graded["first"]["lena"]
    assert float(g["exercise_3"]) <= 7
    feedback = (graded["root"] / "out" / "feedback" / "lena.md").read_text()
    assert "match-acknowledged" in feedback and "acknowledged match_index" in feedback


def test_runs_made_from_other_code_earn_what_the_students_own_code_earns(graded):
    first, honest = graded["first"], graded["honest"]
    assert float(first["carl"]["exercise_1"]) < 10
    assert row(first, "carl") == row(honest, "carl")
    assert row(first, "vic") == row(honest, "vic")
    feedback = (graded["root"] / "out" / "feedback" / "carl.md").read_text()
    assert ("Your run ex1-n4-generation-sim-seed7 (exercise 1) was not graded: the grader ran it again from its own "
            "seed with exercises/high_water_mark.py, the files it was made from, and got other events") in feedback
    assert "version 1" in (graded["root"] / "out" / "feedback" / "vic.md").read_text()
    # reexec.csv, per submitted run (here after a re-grade that reused every result): what re-simulating it gave
    with open(graded["root"] / "out" / "reexec.csv", newline="") as f:
        runs = [r for r in csv.DictReader(f) if r["run"]]
    said = {(r["student"], r["run"]): (r["reproduction"], r["counts"]) for r in runs}
    alice = {v for (s, _), v in said.items() if s == "alice"}
    assert alice == {("matched", "yes")} and sum(1 for s, _ in said if s == "alice") >= 9
    assert said[("carl", "ex1-n4-generation-sim-seed7")] == ("differed", "no")
    assert {r["reproduction"] for r in runs if r["student"] == "vic"} == {"not tried"}
    assert all(r["why"].startswith("format version 1") for r in runs if r["student"] == "vic")


def test_a_submission_that_loops_forever_gets_a_status_and_the_class_is_graded(graded):
    g = graded["first"]
    assert g["lou"]["grading_status"] == "ok" and g["lou"]["exercise_2"] == "0" == g["lou"]["exercise_4"]
    assert [g["lou"][f"exercise_{n}"] for n in (1, 3, 5, 6)] == ["10"] * 4
    with open(graded["root"] / "out" / "reexec.csv", newline="") as f:
        statuses = {(r["student"], r["exercise"]): r["status"] for r in csv.DictReader(f) if not r["run"]}
    assert statuses[("lou", "2")] == "timeout" and statuses[("lou", "4")] == "not started"
    assert statuses[("alice", "2")] == "ok"
    lou = (graded["root"] / "out" / "feedback" / "lou.md").read_text()
    assert "- Exercise 2 ran past a time limit of the grader" in lou


def test_two_grades_of_the_same_class_are_identical(graded):
    assert graded["first"] == graded["again"]
    out = graded["root"]
    assert (out / "out" / "grades.csv").read_bytes() == (out / "again" / "grades.csv").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["again", "honest", "honest-out", "out", "subs"]


def test_a_regrade_reuses_the_graders_own_findings_not_the_manifests(graded):
    from lab.grade import incremental

    assert graded["regrade"] == graded["first"]  # lena keeps the points her re-executed runs and probe cost her
    state = json.loads((graded["root"] / "out" / incremental.STATE).read_text())
    assert state["fingerprint"]["runs"].startswith("re-executed ")
    lena = next(e for e in state["entries"].values() if e["student"] == "lena")
    assert lena["reexecuted"] and [3, "match-acknowledged", False] in lena["probes"]
    assert "match-acknowledged" in (graded["root"] / "out" / "feedback" / "lena.md").read_text()


def test_each_student_gets_their_own_seeds(made, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(made["honest"], subs / "alice.zip")
    copy_as(made["honest"], subs, "bob")
    storage = LocalStorage()
    cat = catalog(storage, str(subs), str(tmp_path / "staging"))
    rubric = rubric_module.load(None)

    def drawn():
        tasks, _ = reexec.plan(storage, str(subs), cat, rubric, SECRET.encode(), Limits())
        return {(t["student"], p["exercise"]): [r["seed"] for r in p["runs"]] for t in tasks for p in t["exercises"]}
    seeds = drawn()
    assert seeds == drawn()
    for number in range(1, 7):
        assert set(seeds[("alice", number)]).isdisjoint(seeds[("bob", number)])


def test_the_graders_exploration_puts_a_shrunk_counterexample_in_the_feedback(graded):
    feedback = graded["root"] / "out" / "feedback"

    def said(student):
        return "\n".join(p.read_text(encoding="utf-8") for p in sorted(feedback.glob(f"{student}.*"))
                         if p.suffix in (".md", ".txt", ".html", ".json"))

    carl = said("carl")  # the article's sorted(m)[n // 2]: found on 4 nodes, named by the lab's own rule
    assert "What the explorer found" in carl and "<ol><li>" in carl
    assert "The HWM never exceeds what a majority held" in carl and "high_water_mark(" in carl
    assert "explorer found" not in said("alice")


def test_the_feedback_says_what_broke_with_its_input_and_links_a_run_to_play(graded):
    """Each broken rule with its input and the values expected and returned; an exercise not started said so; each
    exercise that lost points on a failing run gets that run as one HTML file beside the feedback, linked from it,
    named in results.json, kept by a re-grade (the same bytes as a full grade's)."""
    import base64
    import gzip
    import re

    out, again = graded["root"] / "out", graded["root"] / "again"  # out: re-graded, every result reused
    lena = (out / "feedback" / "lena.md").read_text()
    assert re.search(r"- [^\n]*: log generations \[[^\n]*expected match_index \d+[^\n]*; got AppendResult\(", lena)
    lou = (out / "feedback" / "lou.md").read_text()
    assert "## Notes" in lou and "\n- Exercise 4 is not started" in lou and "no runs for exercise 4" not in lou
    assert "Not started: the functions of exercise 4 still raise NotImplementedError" in lou
    for folder in (out, again):
        carl = (folder / "feedback" / "carl.html").read_text()
        assert 'href="carl-ex1.html"' in carl and "`" not in carl
        results = json.loads((folder / "gradescope" / "carl" / "results.json").read_text())
        assert results["extra_data"] == {"runs_to_play": {"1": "feedback/carl-ex1.html"}}
    played = (out / "feedback" / "carl-ex1.html").read_bytes()
    assert played == (again / "feedback" / "carl-ex1.html").read_bytes() and len(played) < 1024 * 1024
    blob = re.search(rb'id="hwm-run">([^<]*)<', played).group(1)
    info = json.loads(gzip.decompress(base64.b64decode(blob)))["info"]["en"]
    assert info["events"] > 10 and info["broken"]["n"] <= info["events"]  # where the rule broke, marked
    files = sorted(p.name for p in (out / "feedback").iterdir())
    assert files == sorted(p.name for p in (again / "feedback").iterdir())
    # (lena: exercise 3 wrong; her runs fail where her follower_append breaks its rule, lab.core.judges)
    played = [f for f in files if f.endswith(".html") and "-ex" in f]
    assert played == ["carl-ex1.html", "lena-ex3.html", "vic-ex1.html"]
    assert not any(p.name.startswith("_") for p in out.iterdir())  # nothing the grade put aside stays
