"""The Spark SQL text the grader's checks are built from: literals, violations, window frames (lab.grade.spark.trace_checks)."""

from __future__ import annotations

VIOLATION = "STRUCT<check: STRING, node: STRING, index: INT, detail: STRING, seq: BIGINT, time: DOUBLE>"
NONE = f"CAST(array() AS ARRAY<{VIOLATION}>)"

RUN_ORDER = "PARTITION BY submission, run ORDER BY "
WHOLE = "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"
BEFORE = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
UPTO = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"


def q(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def among(values) -> str:
    """A SQL list of string literals: ('a', 'b')."""
    return "(" + ", ".join(q(v) for v in values) + ")"


def v(check: str, *, node: str, index: str | None, detail: str, seq: str, time: str) -> str:
    """One violation (a VIOLATION struct)."""
    return (f"named_struct('check', {q(check)}, 'node', CAST({node} AS STRING), 'index', CAST({index or 'NULL'} "
            f"AS INT), 'detail', CAST({detail} AS STRING), 'seq', CAST({seq} AS BIGINT), 'time', "
            f"CAST({time} AS DOUBLE))")


def one(found: str, violation: str) -> str:
    """A rule that finds at most one violation on a row: an array of it, or NULL."""
    return f"CASE WHEN {found} THEN array({violation}) END"


def every(*found: str) -> str:
    return "concat(" + ", ".join(f"coalesce({f}, {NONE})" for f in found) + ")"


def entry_text(index: str, generation: str, digest: str) -> str:
    return f"format_string('[%s, %s, %s]', {index}, {generation}, {digest})"


def fmt(template: str, *args: str) -> str:
    return f"format_string({q(template)}, {', '.join(args)})"
