"""A class in one archive (no Spark): a zip of zips and the bulk downloads of Canvas, Moodle and Gradescope, in their
documented layouts, zipped as they come or unpacked, are read as a class: each submission in them an entry of its
own, named by its path, judged alone; what is no submission is said so; an empty SUBMISSIONS is refused."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from lab.grade import job
from lab.grade.archive import Limits, class_entries, open_box
from lab.grade.storage import LocalStorage
from lab.grade.submissions import NOT_A_SUBMISSION, catalog

from . import synth
from .helpers import full_runs


@pytest.fixture(scope="module")
def zips(tmp_path_factory) -> dict[str, Path]:
    made = tmp_path_factory.mktemp("made")
    return {s: synth.write_submission(made, s, full_runs()[:2]) for s in ("ana", "ben", "cy", "dee", "eve")}


def statuses(folder: Path, tmp_path: Path) -> dict[str, tuple[str, str, int]]:
    cat = catalog(LocalStorage(), str(folder), str(tmp_path / "staging"))
    return {s.source: (s.student, s.status, len(s.runs)) for s in [*cat.submissions, *cat.set_aside]}


def canvas(zips, path: Path) -> None:
    """Canvas's Download Submissions: one zip, every student's file at its top, renamed lastfirst_[late_]ids_name."""
    with zipfile.ZipFile(path, "w") as z:
        z.write(zips["ana"], "perezana_12345_67890_submission-ana.zip")
        z.write(zips["ben"], "leeben_late_12346_67891_submission-ben.zip")


def moodle(zips, path: Path) -> None:
    """Moodle's Download all submissions, "in folders": a folder per participant and plugin; an online text is an
    HTML file of its own."""
    with zipfile.ZipFile(path, "w") as z:
        z.write(zips["cy"], "Cy Young_101_assignsubmission_file_/submission-cy.zip")
        z.writestr("Cy Young_101_assignsubmission_onlinetext_/onlinetext.html", "<p>done</p>")


def gradescope(zips, path: Path) -> None:
    """Gradescope's Export Submissions: assignment_N_export/ with submission_metadata.yml and a folder per
    submission, the uploaded zip unpacked in it."""
    with zipfile.ZipFile(zips["dee"]) as src, zipfile.ZipFile(path, "w") as z:
        z.writestr("assignment_77_export/submission_metadata.yml", "submission_1:\n  :submitters: []\n")
        for name in src.namelist():
            z.writestr(f"assignment_77_export/submission_1/{name}", src.read(name))


def test_the_bulk_downloads_of_three_lmss_are_read_as_a_class(zips, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    canvas(zips, subs / "canvas.zip")
    moodle(zips, subs / "moodle.zip")
    gradescope(zips, subs / "gradescope.zip")
    with zipfile.ZipFile(subs / "zip-of-zips.zip", "w") as z:  # a zip of zips, as an instructor makes one
        z.write(zips["eve"], "eve.zip")
        z.writestr("broken.zip", b"not a zip at all")
        z.writestr("../escaped.zip", b"x")
        z.writestr("__MACOSX/._eve.zip", b"resource fork")
    got = statuses(subs, tmp_path)
    assert got == {
        "canvas.zip/perezana_12345_67890_submission-ana.zip": ("ana", "ok", 2),
        "canvas.zip/leeben_late_12346_67891_submission-ben.zip": ("ben", "ok", 2),
        "moodle.zip/Cy Young_101_assignsubmission_file_/submission-cy.zip": ("cy", "ok", 2),
        "moodle.zip/Cy Young_101_assignsubmission_onlinetext_/onlinetext.html": ("onlinetext.html", NOT_A_SUBMISSION,
                                                                                 0),
        "gradescope.zip/assignment_77_export/submission_1": ("dee", "ok", 2),
        "zip-of-zips.zip/eve.zip": ("eve", "ok", 2),
        "zip-of-zips.zip/broken.zip": ("broken", "malformed: not a zip archive", 0),
        "zip-of-zips.zip/../escaped.zip": ("escaped", "unsafe archive: entry '../escaped.zip' points outside the "
                                                      "archive", 0)}
    # Each opens again by its name, as re-execution, similarity and the runs to play read it.
    for source in ("canvas.zip/perezana_12345_67890_submission-ana.zip", "gradescope.zip/assignment_77_export/"
                   "submission_1"):
        box = open_box(LocalStorage(), str(subs), source, Limits())
        assert box.read("manifest.json", 10 ** 6) == zipfile.ZipFile(zips["ana" if "ana" in source else "dee"]).read(
            "manifest.json")


def test_the_same_downloads_unpacked_are_read_the_same(zips, tmp_path):
    zipped, unpacked = tmp_path / "zipped", tmp_path / "unpacked"
    zipped.mkdir()
    for name, make in (("canvas", canvas), ("moodle", moodle), ("gradescope", gradescope)):
        make(zips, zipped / f"{name}.zip")
        with zipfile.ZipFile(zipped / f"{name}.zip") as z:
            z.extractall(unpacked / name)
    a, b = statuses(zipped, tmp_path / "a"), statuses(unpacked, tmp_path / "b")
    assert {k.replace(".zip/", "/", 1): v for k, v in a.items()} == b and len(b) == 5


def test_a_submission_of_its_own_is_never_taken_for_a_class():
    assert class_entries(["manifest.json", "files/exercises/a.zip", "runs/x/events-A.jsonl"]) is None
    assert class_entries(["README.txt", "notes/x.txt"]) is None  # no zip, no submission folder: one bad submission
    assert class_entries(["a/b/c/d/s.zip"]) is None  # deeper than a bulk download goes


def test_a_duplicate_is_a_row_that_names_the_submission_graded(zips, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(zips["ana"], subs / "ana.zip")
    shutil.copy(zips["ana"], subs / "ana-again.zip")
    cat = catalog(LocalStorage(), str(subs), str(tmp_path / "staging"))
    assert [s.source for s in cat.submissions] == ["ana.zip"]
    [aside] = cat.set_aside
    assert (aside.source, aside.student) == ("ana-again.zip", "ana")
    assert aside.status == "duplicate: ana.zip, also by ana, is graded instead (newer)"


def test_an_empty_submissions_folder_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / ".DS_Store").write_text("")  # not an entry: names starting with '.' are not read
    args = job.build_parser().parse_args([str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--trust-traces"])
    assert job.run(args) == 2
    assert "holds no submission" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
