"""Explicit Spark schemas: one trace event line (docs/trace-format.md), the events DataFrame the checks read,
and the violations they return. Field types, required fields and the graded kinds come from lab.core.events."""

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

from lab.core import events

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

# Spark's type for each field type of lab.core.events. A reason is its English sentence on a trace line.
SPARK_TYPES = {
    events.INT: IntegerType(), events.STR: StringType(), events.BOOL: BooleanType(), events.REASON: StringType(),
    events.ENTRY: ENTRY, events.ENTRIES: ENTRIES, events.INTS: ArrayType(IntegerType()),
}


def declared_type(name: str):
    """The Spark type of a field, from its declarations in lab.core.events (one type for every kind that has it)."""
    types = {repr(SPARK_TYPES[kind.fields[name]]) for kind in events.KINDS.values() if name in kind.fields}
    if len(types) != 1:
        raise TypeError(f"field {name!r} is declared with {len(types) or 'no'} Spark types: {sorted(types)}")
    return next(SPARK_TYPES[kind.fields[name]] for kind in events.KINDS.values() if name in kind.fields)


# The extra fields the checks read, typed as declared. Other fields (replication details, votes, narration, ...) are
# skipped by the parser, as the format allows for fields a reader does not know: parsing fewer fields is most of
# the job's speed.
READ_FIELDS = ("log_end", "hwm", "generation", "index", "digest", "payload", "request", "follower", "match_index",
               "from_hwm", "role", "entry_generation", "committed", "from_index", "removed", "reason",
               "conflicting_generation", "entry", "entries", "target", "name", "ok", "detail", "segments", "deleted",
               "end_index", "end_generation", "next_generation", "cut")
EXTRA_FIELDS: tuple[StructField, ...] = tuple(StructField(name, declared_type(name)) for name in READ_FIELDS)

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

# Required extra fields per event type (declared in lab.core.events): a line without them is malformed for the
# checks that read it.
REQUIRED: dict[str, tuple[str, ...]] = {kind.name: kind.required for kind in events.KINDS.values() if kind.required}

# The event types the checks read (declared as graded). The loader keeps only these (and lines with something
# wrong), so the checks work on about half of a trace's lines; replication messages, votes and client requests are
# validated and dropped.
CHECKED_TYPES: tuple[str, ...] = tuple(kind.name for kind in events.KINDS.values() if kind.graded)
