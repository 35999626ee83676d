"""Explicit Spark schemas: one trace event line (docs/trace-format.md), the events DataFrame the checks read,
and the violations they return."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

# Entries are JSON arrays [index, generation, digest]; Spark reads any JSON value into a string field,
# so an entry is an array of strings and the checks cast index and generation back to int.
ENTRY = ArrayType(StringType())
ENTRIES = ArrayType(ENTRY)

COMMON_FIELDS: tuple[StructField, ...] = (
    StructField("v", IntegerType()),
    StructField("seq", LongType()),
    StructField("time", DoubleType()),
    StructField("node", StringType()),
    StructField("boot", IntegerType()),
    StructField("gen", IntegerType()),
    StructField("type", StringType()),
)

# Every extra field of every event type the grader reads. Unknown fields are ignored, as the format allows.
EXTRA_FIELDS: tuple[StructField, ...] = (
    StructField("log_end", IntegerType()),
    StructField("last_generation", IntegerType()),
    StructField("hwm", IntegerType()),
    StructField("truncation", StringType()),
    StructField("generation", IntegerType()),
    StructField("candidate", StringType()),
    StructField("votes", ArrayType(StringType())),
    StructField("leader", StringType()),
    StructField("from_generation", IntegerType()),
    StructField("index", IntegerType()),
    StructField("digest", StringType()),
    StructField("payload", StringType()),
    StructField("request", StringType()),
    StructField("to", StringType()),
    StructField("from", StringType()),
    StructField("prev_index", IntegerType()),
    StructField("prev_generation", IntegerType()),
    StructField("first", IntegerType()),
    StructField("last", IntegerType()),
    StructField("conflict_index", IntegerType()),
    StructField("follower", StringType()),
    StructField("match_index", IntegerType()),
    StructField("next_index", IntegerType()),
    StructField("from_hwm", IntegerType()),
    StructField("role", StringType()),
    StructField("entry_generation", IntegerType()),
    StructField("committed", ENTRIES),
    StructField("from_index", IntegerType()),
    StructField("removed", ENTRIES),
    StructField("reason", StringType()),
    StructField("conflicting_generation", IntegerType()),
    StructField("end_index", IntegerType()),
    StructField("entry", ENTRY),
    StructField("entries", ENTRIES),
    StructField("target", StringType()),
    StructField("src", StringType()),
    StructField("dst", StringType()),
    StructField("ms", IntegerType()),
    StructField("name", StringType()),
    StructField("ok", BooleanType()),
    StructField("detail", StringType()),
    StructField("text", StringType()),
)

CORRUPT = "_corrupt_record"

# One line of an events-*.jsonl file, as Spark's JSON parser reads it (PERMISSIVE, malformed lines kept).
EVENT_LINE = StructType([*COMMON_FIELDS, *EXTRA_FIELDS, StructField(CORRUPT, StringType())])

# What the loader adds to every event: who submitted it and what the run's trace.json says.
CONTEXT_FIELDS: tuple[StructField, ...] = (
    StructField("submission", StringType(), False),
    StructField("run", StringType(), False),
    StructField("scenario", StringType()),
    StructField("cluster_size", IntegerType()),
    StructField("liveness_bound", DoubleType()),
)

# The events DataFrame every check takes.
EVENTS = StructType([*CONTEXT_FIELDS, *COMMON_FIELDS, *EXTRA_FIELDS])

# What every check returns: one row per violation. seq and time locate the event that broke the rule
# (in the file of `node`), so reports can show the trace around it.
VIOLATIONS = StructType([
    StructField("submission", StringType()),
    StructField("run", StringType()),
    StructField("check", StringType()),
    StructField("node", StringType()),
    StructField("index", IntegerType()),
    StructField("detail", StringType()),
    StructField("seq", LongType()),
    StructField("time", DoubleType()),
])

# Required extra fields per event type: a line without them is malformed for the checks that read it.
REQUIRED: dict[str, tuple[str, ...]] = {
    "node_started": ("hwm",),
    "leader_append": ("index", "generation", "digest"),
    "follower_append": ("index", "generation", "digest"),
    "match_index_updated": ("follower", "match_index"),
    "hwm_changed": ("from_hwm", "hwm", "role", "committed"),
    "truncated": ("from_index", "removed"),
    "write_acked": ("index", "digest"),
    "read_served": ("index", "hwm"),
    "log_snapshot": ("hwm", "log_end", "entries"),
    "node_killed": ("target",),
    "node_restarted": ("target",),
    "node_paused": ("target",),
    "node_resumed": ("target",),
    "link_cut": ("src", "dst"),
    "link_healed": ("src", "dst"),
    "expectation": ("name", "ok"),
}
