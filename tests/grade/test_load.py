"""Reading submissions safely, before Spark: every bad archive gets a readable grading_status and nothing is
written outside the staging folder. No Spark here, so these run in milliseconds."""

import json
import unicodedata
import os
import stat
import zipfile

import pytest

from lab.grade import archive, storage, submissions
from . import synth

from .helpers import full_runs, rewrite_zip


def catalog(tmp_path, **limits):
    staging = tmp_path / "out" / "_staging"
    return submissions.catalog(storage.LocalStorage(), str(tmp_path / "subs"), str(staging), archive.Limits(**limits))


def status_of(tmp_path, **limits) -> dict:
    return {s.student: s.status for s in catalog(tmp_path, **limits).submissions}


@pytest.fixture
def subs(tmp_path):
    path = tmp_path / "subs"
    synth.write_submission(path, "good", [(synth.s1_run("ex1-s1"), 1)])
    return path


def test_a_sound_zip_is_staged_file_by_file(tmp_path, subs):
    cat = catalog(tmp_path)
    [sub] = cat.submissions
    assert sub.ok and [r.run for r in sub.runs] == ["ex1-s1"]
    assert sorted(node for *_, node, _ in cat.files) == ["A", "B", "C", "cluster"]
    staged = sorted(os.listdir(cat.events_dir))
    assert staged == [f"f{i:07d}.jsonl" for i in range(4)]


def test_missing_manifest(tmp_path, subs):
    rewrite_zip(subs / "good.zip", lambda n, d: None if n == "manifest.json" else d)
    assert status_of(tmp_path) == {"good": "missing manifest"}


@pytest.mark.parametrize("name", ["../evil.txt", "/etc/evil", "runs/../../evil", "C:/evil"])
def test_paths_leaving_the_archive_are_refused(tmp_path, subs, name):
    with zipfile.ZipFile(subs / "good.zip", "a") as z:
        z.writestr(name, "x")
    [(student, status)] = status_of(tmp_path).items()
    assert status.startswith("unsafe archive: entry ") and "points outside the archive" in status
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "out" / "evil.txt").exists()


def test_links_in_an_archive_are_refused(tmp_path, subs):
    with zipfile.ZipFile(subs / "good.zip", "a") as z:
        info = zipfile.ZipInfo("runs/ex1-s1/events-D.jsonl")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    assert status_of(tmp_path) == {"good": "unsafe archive: entry 'runs/ex1-s1/events-D.jsonl' is a link"}


def test_links_in_a_folder_are_refused(tmp_path):
    synth.write_submission(tmp_path / "subs", "good", [(synth.s1_run("ex1-s1"), 1)], as_zip=False)
    target = tmp_path / "subs" / "good" / "runs" / "ex1-s1" / "events-A.jsonl"
    target.unlink()
    target.symlink_to("/etc/hostname")
    assert status_of(tmp_path) == {"good": "unsafe folder: runs/ex1-s1/events-A.jsonl is a link"}


@pytest.mark.parametrize("student, valid", [
    ("s042", True), ("ana.garcia_2-b", True), ("_x", True), ("a" * 64, True), ("", False), (".hidden", False),
    ("..", False), ("../escaped", False), ("x/y", False), ("a b", False), ("a@b", False), ("a" * 65, False),
    # letters of any alphabet, as the message says ("letters"), and nothing invisible or pictured
    ("zoë", True), ("zoe\u0308", True), ("李明", True), ("ñandú-2", True), ("\u0308e", False), ("a\u200bb", False),
    ("a😀", False), ("a\u00a0b", False), ("ë" * 64, True), ("ë" * 65, False),
])
def test_the_grader_takes_exactly_the_student_ids_submit_takes(tmp_path, subs, student, valid):
    from lab.student.submit import NothingToSubmit, check_student_id

    rewrite_zip(subs / "good.zip", lambda n, d: json.dumps({**json.loads(d), "student": student}).encode()
                if n == "manifest.json" else d)
    [sub] = catalog(tmp_path).submissions
    assert sub.ok == valid, sub.status
    if valid:
        check_student_id(student)
        assert sub.student == unicodedata.normalize("NFC", student)  # one id, whichever keyboard typed it
    else:
        assert "is not a valid student id" in sub.status
        with pytest.raises(NothingToSubmit, match="is not a valid student id"):
            check_student_id(student)


@pytest.mark.parametrize("secret", ["secret", "cluster.json"])
@pytest.mark.parametrize("as_zip", [True, False])
def test_a_submission_that_holds_a_clusters_secret_is_refused_and_says_why(tmp_path, secret, as_zip):
    synth.write_submission(tmp_path / "subs", "good", [(synth.s1_run("ex1-s1"), 1)], as_zip=as_zip)
    if as_zip:
        with zipfile.ZipFile(tmp_path / "subs" / "good.zip", "a") as z:
            z.writestr(f"runs/ex1-s1/{secret}", "0123abcd")
    else:
        (tmp_path / "subs" / "good" / "runs" / "ex1-s1" / secret).write_text("0123abcd")
    assert status_of(tmp_path) == {"good": f"unsafe: runs/ex1-s1/{secret} is a running cluster's secret, which never "
                                           f"belongs in a hand-in; make the submission again with `hwm-lab submit`, "
                                           f"which leaves it out"}


def test_a_huge_member_is_refused_before_extraction(tmp_path, subs):
    with zipfile.ZipFile(subs / "good.zip", "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("runs/ex1-s1/padding.bin", b"\0" * (3 * 1024 * 1024))
    assert status_of(tmp_path, max_file_bytes=1024 * 1024) == {
        "good": "too large: runs/ex1-s1/padding.bin is 3.0 MB uncompressed (limit 1 MB per file)"}


def test_a_zip_bomb_is_refused_by_total_size(tmp_path, subs):
    with zipfile.ZipFile(subs / "good.zip", "a", zipfile.ZIP_DEFLATED) as z:
        for i in range(5):
            z.writestr(f"pad/{i}.bin", b"\0" * (1024 * 1024))
    assert status_of(tmp_path, max_submission_bytes=4 * 1024 * 1024) == {
        "good": "too large: the archive unpacks to more than 4 MB"}


def test_a_zip_whose_header_lies_about_sizes_is_stopped_while_extracting(tmp_path, subs):
    # Claim a small size for a large member: extraction counts the bytes it writes and stops.
    path = subs / "good.zip"
    with zipfile.ZipFile(path) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    big = b'{"v":1}\n' * 200_000
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(name, big if name.endswith("events-A.jsonl") else data)
    status = status_of(tmp_path, max_file_bytes=1024 * 1024)
    assert status["good"].startswith("too large: runs/ex1-s1/events-A.jsonl")
    assert not any(p.stat().st_size > 1024 * 1024 for p in (tmp_path / "out").rglob("*") if p.is_file())


def test_not_a_zip(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    assert status_of(tmp_path) == {"broken": "malformed: not a zip archive"}


@pytest.mark.parametrize("change, status", [
    (lambda m: {**m, "format": "other"}, "malformed: manifest.json format is 'other', not 'hwm-lab-submission'"),
    (lambda m: {**m, "version": 3}, "malformed: submission format version 3 is newer than this grader (2)"),
    (lambda m: {**m, "student": "../x"}, "malformed: manifest.json student '../x' is not a valid student id "
                                         "(letters, digits, '.', '_' and '-', 1 to 64 characters, not starting with "
                                         "'.')"),
    (lambda m: {**m, "runs": [{"run": "ex1-s1", "exercise": 1, "dir": "runs/nowhere"}]},
     "malformed: runs/nowhere/trace.json is missing"),
    (lambda m: {**m, "runs": [{"run": "ex1-s1", "exercise": 1, "dir": "../runs/ex1-s1"}]},
     "unsafe archive: manifest.json run 'ex1-s1' dir '../runs/ex1-s1' points outside the submission"),
    (lambda m: {**m, "runs": [{"run": "ex1-s1", "dir": "runs/ex1-s1"}]},
     "malformed: manifest.json run 'ex1-s1' has no integer exercise"),
])
def test_manifest_problems(tmp_path, subs, change, status):
    rewrite_zip(subs / "good.zip", lambda n, d: json.dumps(change(json.loads(d))).encode()
                if n == "manifest.json" else d)
    assert list(status_of(tmp_path).values()) == [status]


def test_manifest_that_is_not_json(tmp_path, subs):
    rewrite_zip(subs / "good.zip", lambda n, d: b"{oops" if n == "manifest.json" else d)
    assert list(status_of(tmp_path).values())[0].startswith("malformed: manifest.json is not JSON")


def test_trace_json_from_a_newer_format_is_refused(tmp_path, subs):
    rewrite_zip(subs / "good.zip", lambda n, d: json.dumps({**json.loads(d), "version": 2}).encode()
                if n.endswith("trace.json") else d)
    assert status_of(tmp_path) == {
        "good": "malformed: runs/ex1-s1/trace.json trace format version 2 is not supported (1)"}


def test_a_bad_submission_does_not_stop_the_others(tmp_path, subs):
    synth.write_submission(subs, "other", full_runs())
    (subs / "junk.zip").write_bytes(b"nope")
    assert status_of(tmp_path) == {"good": "ok", "other": "ok", "junk": "malformed: not a zip archive"}


def test_the_newer_of_two_submissions_by_one_student_counts(tmp_path, subs):
    synth.write_submission(subs / "late", "good", [(synth.s1_run("ex1-s1"), 1)])
    os.replace(subs / "late" / "good.zip", subs / "good-v2.zip")
    os.rmdir(subs / "late")
    rewrite_zip(subs / "good-v2.zip", lambda n, d: json.dumps({**json.loads(d), "created": "2026-12-01T00:00:00Z"})
                .encode() if n == "manifest.json" else d)
    cat = catalog(tmp_path)
    assert [(s.student, s.source) for s in cat.submissions] == [("good", "good-v2.zip")]
    assert "good.zip was also submitted by good" in cat.submissions[0].warnings[0]


# ---- version 2: the student's files, stale runs; incomplete runs ------------------------------------------

def v2(tmp_path, **kwargs):
    path = tmp_path / "subs"
    runs = [(synth.s1_run("ex1-s1"), 1), (synth.l1_run("ex4-l1"), 4)]
    synth.write_submission(path, "vic", runs, version=2, **kwargs)
    return path / "vic.zip"


def test_a_version_2_submission_counts_runs_made_from_its_files_and_reads_its_rule_results(tmp_path):
    v2(tmp_path, rules={1: [True, True, False], 4: [True, True]})
    [sub] = catalog(tmp_path).submissions
    assert sub.ok and sub.version == 2
    assert [r.run for r in sub.runs] == ["ex1-s1", "ex4-l1"] and sub.left_out == []
    assert sub.rules == {1: (2, 3), 4: (2, 2)}


def test_a_run_made_from_another_version_of_a_file_is_stale(tmp_path):
    v2(tmp_path, made_from={"ex1-s1": {"exercises/high_water_mark.py": synth.sha256(b"an older version")}})
    [sub] = catalog(tmp_path).submissions
    assert sub.ok and [r.run for r in sub.runs] == ["ex4-l1"]
    assert sub.left_out == ["stale: run ex1-s1 (exercise 1) counts for nothing: it was made from another version "
                            "of exercises/high_water_mark.py than the one submitted"]


def test_the_grader_hashes_the_files_itself(tmp_path):
    # The manifest's own list of hashes says the file is unchanged; the file in the zip says otherwise.
    path = v2(tmp_path)
    rewrite_zip(path, lambda n, d: b"# edited after the checks ran\n" if n == "files/exercises/reads.py" else d)
    [sub] = catalog(tmp_path).submissions
    assert [r.run for r in sub.runs] == ["ex1-s1"]
    assert sub.left_out[0].startswith("stale: run ex4-l1 (exercise 4) counts for nothing: it was made from another "
                                      "version of exercises/reads.py")


def test_a_run_naming_a_file_the_submission_lacks_is_stale(tmp_path):
    path = v2(tmp_path)
    rewrite_zip(path, lambda n, d: None if n == "files/exercises/high_water_mark.py" else d)
    [sub] = catalog(tmp_path).submissions
    assert sub.left_out == ["stale: run ex1-s1 (exercise 1) counts for nothing: it was made from "
                            "exercises/high_water_mark.py, which the submission does not hold"]


def test_malformed_rule_results_make_the_submission_malformed(tmp_path):
    path = v2(tmp_path)
    rewrite_zip(path, lambda n, d: json.dumps({**json.loads(d), "checks": [{"exercise": 1, "rules": [{}]}]}).encode()
                if n == "manifest.json" else d)
    assert status_of(tmp_path) == {"vic": "malformed: manifest.json checks[0] has a rule without a true/false ok"}


@pytest.mark.parametrize("change, why", [
    (lambda n, d: None if n == "runs/ex1-s1/events-B.jsonl" else d, "events-B.jsonl is missing"),
    (lambda n, d: b"" if n == "runs/ex1-s1/events-B.jsonl" else d, "events-B.jsonl is empty"),
    (lambda n, d: b"\n\n" if n == "runs/ex1-s1/events-C.jsonl" else d, "events-C.jsonl is empty"),
    (lambda n, d: None if n == "runs/ex1-s1/events-cluster.jsonl" else d, "events-cluster.jsonl is missing"),
])
def test_a_run_without_the_events_of_a_node_is_incomplete(tmp_path, subs, change, why):
    synth.write_submission(subs, "good", [(synth.s1_run("ex1-s1"), 1), (synth.s1_run("ex5-s1"), 5)])
    rewrite_zip(subs / "good.zip", change)
    [sub] = catalog(tmp_path).submissions
    assert sub.ok and [r.run for r in sub.runs] == ["ex5-s1"]
    assert sub.left_out == [f"incomplete: run ex1-s1 (exercise 1) counts for nothing: {why}"]


def test_a_node_that_never_started_needs_no_events(tmp_path, subs):
    # The supervisor saw C's process end on its own (the student's code raised at start): C wrote nothing.
    def change(name, data):
        if name == "runs/ex1-s1/events-C.jsonl":
            return None
        if name == "runs/ex1-s1/events-cluster.jsonl":
            lines = data.decode().splitlines()
            exited = {"v": 1, "seq": len(lines) + 1, "time": 9.0, "node": "cluster", "boot": 0, "gen": 0,
                      "type": "node_exited", "target": "C", "code": 1}
            return ("\n".join([*lines, json.dumps(exited)]) + "\n").encode()
        return data
    rewrite_zip(subs / "good.zip", change)
    [sub] = catalog(tmp_path).submissions
    assert sub.ok and [r.run for r in sub.runs] == ["ex1-s1"] and sub.left_out == []
