"""Build small traces for the grader tests: inline events as DataFrames, and trace directories and submission
zips written exactly as docs/trace-format.md and docs/submission-format.md say."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict

from lab.grade.synth import digest


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
    from lab.grade.schema import EVENTS

    names = EVENTS.fieldNames()
    for row in rows:
        unknown = set(row) - set(names)
        assert not unknown, f"not in the events schema: {unknown}"
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
