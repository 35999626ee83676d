"""LMS export: the Canvas and Moodle import files have the columns docs/grading.md documents, the grades of
grades.csv under the LMS's ids, and a bad mapping file is a usage error before Spark starts."""

import csv
import io
import re
from pathlib import Path

import pytest

from lab.grade.spark import job
from lab.grade.outputs import feedback, lms
from lab.grade.inputs.rubric import load, score

DOCS = (Path(__file__).resolve().parents[2] / "docs" / "grading.md").read_text()


def documented_header(lms_name: str) -> list[str]:
    """The header line in the code block that follows `**<LMS>**` in docs/grading.md."""
    section = DOCS.split(f"**{lms_name}**", 1)[1]
    block = re.search(r"```\n(.*?)\n```", section, re.S).group(1)
    return next(csv.reader([block.splitlines()[0]]))


def results():
    rubric = load(None)
    runs = [(f"ex{n}", n, "l1") for n in range(1, 7)]
    full = score(rubric, runs, {})
    half = score(rubric, runs, {("ex1", "hwm-majority"): 3})  # 4 points of ex. 1, and 4/9 of its `rules` point
    return rubric, [feedback.StudentResult("s1", "s1.zip", "ok", full, runs),
                    feedback.StudentResult("s2", "s2.zip", "ok", half, runs),
                    feedback.StudentResult("s3", "s3.zip", "missing manifest", None, [])]


MAPPING = "student_id,lms_id,name,section\ns1,1001,\"Lovelace, Ada\",01\ns2,1002,Alan Turing,02\n"


def test_the_canvas_file_has_the_documented_columns_and_the_grades():
    rubric, rs = results()
    text, unmapped = lms.canvas_csv(rubric, rs, lms.parse_map(MAPPING))
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == documented_header("Canvas") == [*lms.CANVAS_COLUMNS, "HWM Lab"]
    assert rows[1] == ["Points Possible", "", "", "", "", "60"]
    assert rows[2:] == [["Lovelace, Ada", "", "1001", "", "01", "60"], ["Alan Turing", "", "1002", "", "02", "55.56"]]
    assert unmapped == []  # s3 was not graded: no student of the gradebook, mapped or not


def test_the_moodle_file_has_the_documented_columns_and_the_grades():
    rubric, rs = results()
    text, unmapped = lms.moodle_csv(rubric, rs, lms.parse_map(MAPPING))
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == documented_header("Moodle") == [lms.MOODLE_ID, "HWM Lab"]
    assert rows[1:] == [["1001", "60"], ["1002", "55.56"]] and unmapped == []
    # Without a mapping every graded student is there under their own id; an entry not graded never is (a 0 in the
    # gradebook would be a grade for someone who may be no student at all: `s9-empty.zip`, `README.txt`).
    text, unmapped = lms.moodle_csv(rubric, rs)
    assert [r[0] for r in csv.reader(io.StringIO(text))][1:] == ["s1", "s2"] and not unmapped


def test_what_the_import_file_leaves_out_is_listed_beside_it_with_the_reason():
    rubric, rs = results()
    rows = list(csv.reader(io.StringIO(lms.left_out(rs, ["s2"]))))
    assert rows == [["entry", "student_id", "why"], ["s2.zip", "s2", "not in the mapping file (--lms-map)"],
                    ["s3.zip", "s3", "not graded: missing manifest"]]


def test_the_assignment_is_named_from_the_rubric(tmp_path):
    rubric, rs = results()
    from dataclasses import replace

    text, _ = lms.canvas_csv(replace(rubric, name="Replication lab 2"), rs)
    assert text.splitlines()[0].endswith(",Replication lab 2")


@pytest.mark.parametrize("text, why", [
    ("student,lms\ns1,1\n", "missing student_id, lms_id"),
    ("student_id,lms_id\ns1,\n", "line 2: student_id and lms_id must both be given"),
    ("student_id,lms_id\ns1,1\ns1,2\n", "line 3: student s1 is mapped twice"),
])
def test_a_bad_mapping_file_is_a_usage_error_before_spark_starts(tmp_path, capsys, text, why):
    (tmp_path / "map.csv").write_text(text)
    (tmp_path / "subs").mkdir()
    args = job.build_parser().parse_args([str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--lms",
                                          "canvas", "--lms-map", str(tmp_path / "map.csv")])
    assert job.run(args) == 2
    assert why in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
