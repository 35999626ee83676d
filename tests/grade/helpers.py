"""Build small traces for the grader tests: inline events as DataFrames, and trace directories and submission
zips written exactly as docs/trace-format.md and docs/submission-format.md say."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

from .synth import digest


def entry(index: int, generation: int, payload: str) -> list:
    return [index, generation, digest(payload)]


class Events:
    """Inline events of one run, numbered per node like real files: ev.add("A", "hwm_changed", t=0.1, ...)."""

    def __init__(self, submission="s1", run="r1", scenario=None, cluster_size=3, liveness_bound=5.0):
        self.context = {"submission": submission, "run": run, "scenario": scenario, "cluster_size": cluster_size,
                        "liveness_bound": liveness_bound}
        self.rows: list[dict] = []
        self.seq = defaultdict(lambda: itertools.count(1))

    def add(self, node: str, type: str, t: float, *, boot: int | None = None, gen: int = 0, **fields) -> "Events":
        if boot is None:
            boot = 0 if node == "cluster" else 1
        self.rows.append({**self.context, "v": 1, "seq": next(self.seq[node]), "time": t, "node": node,
                          "boot": boot, "gen": gen, "type": type, **fields})
        return self

    def df(self, spark):
        return to_events_df(spark, self.rows)


def to_events_df(spark, rows: list[dict]):
    from lab.grade.spark.schema import EVENTS

    # Fields of the trace format that no check reads (src, dst, next_index, ...) are left out, as the job's
    # parser leaves them out.
    names = EVENTS.fieldNames()
    tuples = [tuple(_cast(row.get(n), EVENTS[n].dataType) for n in names) for row in rows]
    return spark.createDataFrame(tuples, EVENTS)


def _cast(value, data_type):
    from pyspark.sql.types import ArrayType, StringType

    if value is None:
        return None
    if isinstance(data_type, ArrayType) and isinstance(data_type.elementType, ArrayType):
        return [[str(x) for x in e] for e in value]
    if isinstance(data_type, ArrayType) and isinstance(data_type.elementType, StringType):
        return [str(x) for x in value]
    if isinstance(data_type, StringType) and not isinstance(value, str):
        return json.dumps(value)
    return value


def rows(df) -> list[dict]:
    return [r.asDict() for r in df.orderBy("submission", "run", "check", "node", "index", "seq").collect()]


# ---- a small class ------------------------------------------------------------------------------------------

def full_runs(bugs=frozenset()) -> list:
    """One run per exercise of the default rubric, as `hwm-lab submit` would pack them."""
    from . import synth

    return [(synth.s1_run("ex1-s1", bugs), 1), (synth.l1_run("ex2-l1", bugs=bugs), 2),
            (synth.l1_run("ex3-l1", bugs=bugs), 3), (synth.l1_run("ex4-l1", bugs=bugs), 4),
            (synth.s1_run("ex5-s1", bugs), 5), (synth.l1_run("ex6-l1", bugs=bugs), 6)]


def rewrite_zip(path, change) -> None:
    """Rewrite a submission zip; change(name, data) returns new data, or None to drop the member."""
    import zipfile

    with zipfile.ZipFile(path) as z:
        members = [(i.filename, z.read(i)) for i in z.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            new = change(name, data)
            if new is not None:
                z.writestr(name, new)


def make_class(root) -> None:
    """Correct students, students with one planted bug each, and bad submissions of every kind."""
    import zipfile

    from . import synth

    root.mkdir(parents=True, exist_ok=True)
    synth.write_submission(root, "alice", full_runs())
    for student, bug in [("bob", "majority"), ("dave", "hwm-back"), ("erin", "stall"),
                         ("frank", "truncate-committed"), ("gina", "expect")]:
        synth.write_submission(root, student, full_runs(frozenset({bug})))
    synth.write_submission(root, "carol", full_runs(frozenset({"read"})), as_zip=False)
    synth.write_submission(root, "olga", [r for r in full_runs() if r[1] in (1, 4)], as_zip=False)

    # Bad submissions: each must get its own grading_status, and the rest of the class must be graded.
    synth.write_submission(root, "hank", full_runs())
    rewrite_zip(root / "hank.zip", lambda n, d: None if n == "manifest.json" else d)

    def lines(fn):
        return lambda n, d: fn(d.decode().split("\n")) if n.endswith(fn.__name__) else d

    synth.write_submission(root, "ivan", full_runs())

    def garble(ls):
        ls[2] = "not json"
        return "\n".join(ls).encode()
    garble.__name__ = "ex1-s1/events-B.jsonl"
    rewrite_zip(root / "ivan.zip", lines(garble))

    synth.write_submission(root, "judy", full_runs())

    def swap(ls):
        ls[4], ls[5] = ls[5], ls[4]
        return "\n".join(ls).encode()
    swap.__name__ = "ex4-l1/events-A.jsonl"
    rewrite_zip(root / "judy.zip", lines(swap))

    synth.write_submission(root, "nick", full_runs())

    def wrong_type(ls):
        ls[6] = ls[6].replace('"seq":7', '"seq":"seven"')
        return "\n".join(ls).encode()
    wrong_type.__name__ = "ex2-l1/events-C.jsonl"
    rewrite_zip(root / "nick.zip", lines(wrong_type))

    synth.write_submission(root, "ken", full_runs())
    with zipfile.ZipFile(root / "ken.zip", "a") as z:
        z.writestr("../../escaped.txt", "I should never be written")

    synth.write_submission(root, "liz", full_runs())
    with zipfile.ZipFile(root / "liz.zip", "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("runs/ex1-s1/events-cluster.jsonl.big", b"x" * (3 * 1024 * 1024))

    # A torn last line (a node killed mid-write) is skipped with a warning: mia is graded in full.
    synth.write_submission(root, "mia", full_runs())
    rewrite_zip(root / "mia.zip", lambda n, d: d + b'{"v":1,"seq":99,"ti' if n.endswith("ex3-l1/events-C.jsonl")
                else d)
    (root / "README.txt").write_text("not a submission\n")



NO_EXPLORE = "rubric-no-explore.toml"  # the file rubric_without_exploring writes


def rubric_without_exploring(folder, keep=()) -> str:
    """The default rubric with `explore = 0` in every exercise but those in `keep`, written into `folder`: for the
    tests whose point is not the explorer's feedback (its walks cost most of a re-executed pair's time). Scores do
    not depend on it."""
    import re
    from pathlib import Path

    from lab.grade.inputs import rubric

    def table(m):
        return m.group(0) if int(m.group(1)) in keep else m.group(0) + "\nexplore = 0"
    text = re.sub(r"^\[exercises\.(\d+)\]$", table, rubric.default_text(), flags=re.M)
    default, parsed = rubric.load(None), rubric.parse(text)
    assert [e.points for e in parsed.exercises] == [e.points for e in default.exercises]
    assert [e.explore for e in parsed.exercises] == [e.explore * (e.number in keep) for e in default.exercises]
    path = Path(folder) / NO_EXPLORE
    path.write_text(text, encoding="utf-8")
    return str(path)


def executor_commands(env: dict) -> dict[str, str]:
    """The command line of every executor the cluster's workers started (the first line of its stderr), by path."""
    return {str(p): p.read_text(errors="replace").split("\n", 1)[0]
            for p in sorted(Path(env["SPARK_WORKER_DIR"]).glob("**/app-*/*/stderr"))}
