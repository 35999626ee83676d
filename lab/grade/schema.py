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

# The extra fields the checks read. Other fields (replication details, votes, narration, ...) are skipped by the
# parser, as the format allows for fields a reader does not know: parsing fewer fields is most of the job's speed.
EXTRA_FIELDS: tuple[StructField, ...] = (
    StructField("log_end", IntegerType()),
    StructField("hwm", IntegerType()),
    StructField("generation", IntegerType()),
    StructField("index", IntegerType()),
    StructField("digest", StringType()),
    StructField("payload", StringType()),
    StructField("request", StringType()),
    StructField("follower", StringType()),
    StructField("match_index", IntegerType()),
    StructField("from_hwm", IntegerType()),
    StructField("role", StringType()),
    StructField("entry_generation", IntegerType()),
    StructField("committed", ENTRIES),
    StructField("from_index", IntegerType()),
    StructField("removed", ENTRIES),
    StructField("reason", StringType()),
    StructField("conflicting_generation", IntegerType()),
    StructField("entry", ENTRY),
    StructField("entries", ENTRIES),
    StructField("target", StringType()),
    StructField("name", StringType()),
    StructField("ok", BooleanType()),
    StructField("detail", StringType()),
    StructField("segments", ArrayType(IntegerType())),
    StructField("deleted", ArrayType(IntegerType())),
    StructField("end_index", IntegerType()),
    StructField("end_generation", IntegerType()),
    StructField("next_generation", IntegerType()),
    StructField("cut", IntegerType()),
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
    "expectation": ("name", "ok"),
    "read_refused": ("index", "hwm"),
    "wal_truncated": ("from_index", "log_end"),
    "epoch_answer": ("generation", "end_index"),
    "epoch_truncation": ("end_index", "log_end"),
}

# The event types the checks read. The loader keeps only these (and lines with something wrong), so the checks
# work on about half of a trace's lines; replication messages, votes and client requests are validated and dropped.
CHECKED_TYPES: tuple[str, ...] = (
    "node_started", "leader_append", "follower_append", "match_index_updated", "hwm_changed", "truncated",
    "write_acked", "read_served", "client_write", "log_snapshot", "node_killed", "node_restarted", "node_paused",
    "node_resumed", "link_cut", "link_healed", "expectation", "read_refused", "wal_truncated", "epoch_answer",
    "epoch_truncation",
)
