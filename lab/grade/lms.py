"""Gradebook import files for an LMS (`--lms canvas|moodle`): the class's totals under the rubric's assignment name,
each student under the id the LMS knows them by, from a mapping file (docs/grading.md, "Into an LMS")."""

from __future__ import annotations

import csv
import io

from lab.grade.rubric import Rubric, fmt

KINDS = ("canvas", "moodle")
# Canvas's gradebook CSV: these five columns identify a student, each assignment is a column after them, and an
# optional second row gives each assignment's points possible.
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
# Moodle's grade import CSV: one column identifies the user (mapped at import to "ID number"), one per grade item.
MOODLE_ID = "ID number"
MAP_COLUMNS = ("student_id", "lms_id")  # required; `name` and `section` are optional


class MappingError(Exception):
    pass


def parse_map(text: str, name: str = "mapping") -> dict[str, dict[str, str]]:
    """student_id -> {lms_id, name, section}, from a CSV with the header student_id,lms_id[,name][,section]."""
    rows = list(csv.DictReader(io.StringIO(text)))
    header = rows[0].keys() if rows else csv.DictReader(io.StringIO(text)).fieldnames or []
    missing = [c for c in MAP_COLUMNS if c not in header]
    if missing:
        raise MappingError(f"{name}: the header must name {', '.join(MAP_COLUMNS)} (missing {', '.join(missing)})")
    mapping: dict[str, dict[str, str]] = {}
    for n, row in enumerate(rows, 2):
        student, lms_id = (row.get("student_id") or "").strip(), (row.get("lms_id") or "").strip()
        if not student or not lms_id:
            raise MappingError(f"{name} line {n}: student_id and lms_id must both be given")
        if student in mapping:
            raise MappingError(f"{name} line {n}: student {student} is mapped twice")
        mapping[student] = {"lms_id": lms_id, "name": (row.get("name") or "").strip(),
                            "section": (row.get("section") or "").strip()}
    return mapping


def lms_mapping(args):
    """The LMS mapping file of the grade's arguments, read before Spark starts so that a bad one is a usage error
    (ValueError; a local path only)."""
    path = getattr(args, "lms_map", None)
    if path and not getattr(args, "lms", None):
        raise ValueError("--lms-map needs --lms canvas or --lms moodle")
    try:
        return load_map(path)
    except MappingError as exc:
        raise ValueError(str(exc)) from None


def load_map(path: str | None, read=None) -> dict[str, dict[str, str]] | None:
    if path is None:
        return None
    data = read(path) if read else open(path, "rb").read()
    return parse_map(data.decode("utf-8-sig"), path)


def _who(results, mapping):
    """(student, their LMS record, total) of every graded student in the mapping (or every graded student, by
    their own id, without one), and the students the mapping leaves out. An entry that was not graded is no
    student of the gradebook: left out (`left_out`)."""
    rows, unmapped = [], []
    for r in sorted((r for r in results if r.score), key=lambda r: r.student):
        total = r.score.total
        if mapping is None:
            rows.append((r.student, {"lms_id": r.student, "name": "", "section": ""}, total))
        elif r.student in mapping:
            rows.append((r.student, mapping[r.student], total))
        else:
            unmapped.append(r.student)
    return rows, unmapped


def left_out(results, unmapped: list[str]) -> str:
    """The entries the import file leaves out, and why, for the instructor (lms/<lms>-not-imported.csv)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["entry", "student_id", "why"])
    for r in sorted(results, key=lambda r: (r.student, r.source)):
        if not r.score:
            w.writerow([r.source, r.student, f"not graded: {r.status}"])
        elif r.student in unmapped:
            w.writerow([r.source, r.student, "not in the mapping file (--lms-map)"])
    return buf.getvalue()


def canvas_csv(rubric: Rubric, results, mapping=None) -> tuple[str, list[str]]:
    rows, unmapped = _who(results, mapping)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*CANVAS_COLUMNS, rubric.name])
    w.writerow(["Points Possible", "", "", "", "", fmt(rubric.max_total)])
    for student, rec, total in rows:
        w.writerow([rec["name"] or student, "", rec["lms_id"], "", rec["section"], fmt(total)])
    return buf.getvalue(), unmapped


def moodle_csv(rubric: Rubric, results, mapping=None) -> tuple[str, list[str]]:
    rows, unmapped = _who(results, mapping)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([MOODLE_ID, rubric.name])
    for _, rec, total in rows:
        w.writerow([rec["lms_id"], fmt(total)])
    return buf.getvalue(), unmapped


def write(storage, out: str, kind: str, rubric: Rubric, results, mapping, say) -> None:
    from lab.grade.storage import join

    text, unmapped = (canvas_csv if kind == "canvas" else moodle_csv)(rubric, results, mapping)
    storage.write(join(out, "lms", f"{kind}.csv"), text.encode("utf-8", "backslashreplace"))
    storage.write(join(out, "lms", f"{kind}-not-imported.csv"),
                  left_out(results, unmapped).encode("utf-8", "backslashreplace"))
    graded = [r for r in results if r.score]
    say(f"lms/{kind}.csv: {len(graded) - len(unmapped)} graded students under the assignment {rubric.name!r}")
    if unmapped:
        say(f"  not in the mapping file, so not in lms/{kind}.csv: {', '.join(unmapped)}")
    if len(graded) < len(results):
        say(f"  {len(results) - len(graded)} entries not graded are not in lms/{kind}.csv: "
            f"lms/{kind}-not-imported.csv lists them")
