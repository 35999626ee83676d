"""The staged events files parsed through Spark against the explicit schema, with bad or edited lines marked."""

from __future__ import annotations

import json

from lab.grade.inputs.submissions import Catalog


def small_table(spark, storage, path: str, rows, schema):
    """A small table the driver built, as a DataFrame, through a JSON-lines file at `path` that Spark reads itself.

    `spark.createDataFrame(rows)` would hand the rows over through Python worker processes; this way the
    executors run no Python at all (see docs/grading.md).
    """
    names = schema.names
    storage.write(path, "".join(json.dumps(dict(zip(names, row))) + "\n" for row in rows).encode("utf-8"))
    return spark.read.schema(schema).json(storage.for_spark(path))


def read_events(spark, cat: Catalog, storage, partitions: int):
    """The staged events files as one DataFrame, parsed against the explicit schema and hash-partitioned by
    (submission, run): the events the checks read (schema.CHECKED_TYPES), each with its run's context
    (schema.EVENTS), and every line that has something to say, with `file_id` and `line` to find it and
    `problem` (what is wrong with it, said after "<path> line <N>") or `edited` (its seq is not its line number).
    A problem on the last line of a file that ends without a newline is `torn` (a node killed mid-write).

    Lines are numbered from the file, which Spark reads whole (`wholetext`), so numbering never depends on how
    files are split. Every check keeps within a run, so this is the one shuffle of the job. Most of the cost is
    Spark's JSON parser, once per line; around it the rows stay narrow until the events the checks never read
    are dropped, and the expensive tests run only on the lines kept. (The expressions are SQL text: built call by
    call from Python they would cost thousands of round trips to the JVM.)
    """
    from lab.grade.spark.schema import COMMON_FIELDS, CONTEXT_FIELDS, EXTRA_FIELDS

    context = [f.name for f in CONTEXT_FIELDS]
    fields = [f.name for f in (*COMMON_FIELDS, *EXTRA_FIELDS)]
    kept = _kept(_lines(spark, cat, storage), context, fields, partitions)
    problem, edited = _problem_and_edit(fields)
    return kept.selectExpr("file_id", "line", "torn", f"{problem} AS problem", f"{edited} AS edited", *context,
                           *fields)


def _lines(spark, cat: Catalog, storage):
    """Every non-blank line of the staged events files, numbered from its file, with its file's context."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from lab.grade.spark.sql import q
    from lab.grade.spark.schema import CONTEXT_FIELDS

    runs = {(s.student, r.run): r for s, r in cat.runs}
    file_rows = []
    for file_id, student, run, node, _ in cat.files:
        info = runs[(student, run)]
        file_rows.append((file_id, student, run, node, info.scenario, len(info.nodes), info.liveness_bound))
    files = small_table(spark, storage, cat.events_dir + "-files.jsonl", file_rows, T.StructType([
        T.StructField("file_id", T.IntegerType(), False), T.StructField("submission", T.StringType(), False),
        T.StructField("run", T.StringType(), False), T.StructField("file_node", T.StringType(), False),
        T.StructField("scenario", T.StringType()), T.StructField("cluster_size", T.IntegerType()),
        T.StructField("liveness_bound", T.DoubleType())]))
    context = [f.name for f in CONTEXT_FIELDS]

    # One row per file meets its context (one small broadcast); then the file is split into numbered lines, in
    # two steps so that no line carries its whole file along.
    return (spark.read.text(storage.for_spark(cat.events_dir), wholetext=True)
            .selectExpr(f"CAST(regexp_extract(_metadata.file_name, {q(r'^f([0-9]+)[.]jsonl$')}, 1) AS INT) "
                        f"AS file_id", "value")
            .join(F.broadcast(files), "file_id")
            .selectExpr("file_id", "file_node", *context, "split(value, '\\n') AS lines",
                        "length(value) = 0 OR endswith(value, '\\n') AS ends_nl")
            # (the _outer form, or Spark adds a filter that splits every file a second time)
            .selectExpr("file_id", "file_node", *context, "ends_nl", "size(lines) AS n_lines",
                        "posexplode_outer(lines) AS (pos, text)")
            .selectExpr("*", "pos + 1 AS line")
            .where("startswith(text, '{') OR trim(text) != ''"))


def _kept(lines, context: list[str], fields: list[str], partitions: int):
    """Pass 1, on every line: parsed, and kept when the checks read its type or a cheap test fails on it."""
    from lab.grade.spark.sql import among, q
    from lab.grade.spark.schema import CHECKED_TYPES, COMMON_FIELDS, CORRUPT, EVENT_LINE

    # The parsed line comes out of a generator (of one row): Spark would otherwise push the filter below
    # (keep the lines the checks need) down to the raw text, parsing the JSON once per field the filter reads.
    parse = (f"from_json(text, {q(EVENT_LINE.simpleString())}, map('mode', 'PERMISSIVE', "
             f"'columnNameOfCorruptRecord', {q(CORRUPT)}))")
    parsed = lines.selectExpr("file_id", "file_node", *context, "line", "text",
                              "line = n_lines AND NOT ends_nl AS torn", f"explode(array({parse})) AS j")

    # Pass 1, on every line: a few cheap tests. Lines of the types the checks read, and lines that fail a test,
    # go on (with the text of the failing ones, to be explained); the rest are done with.
    suspect = " OR ".join(["j IS NULL", f"j.{CORRUPT} IS NOT NULL", *[f"j.{f.name} IS NULL" for f in COMMON_FIELDS],
                           "j.v != 1", "j.node != file_node", "j.seq != line"])
    return (parsed.where(f"j.type IN {among(CHECKED_TYPES)} OR {suspect}")
            .selectExpr("file_id", "file_node", *context, "line", "torn", f"CASE WHEN {suspect} THEN text END AS text",
                        "j IS NULL AS unparsed", *[f"j.{n} AS {n}" for n in fields], f"j.{CORRUPT} AS {CORRUPT}")
            .repartition(partitions, "submission", "run"))


def _problem_and_edit(fields: list[str]) -> tuple[str, str]:
    """Pass 2's SQL, on the lines kept: what is wrong with a line, and how its seq departs from its line number."""
    from lab.grade.spark.schema import COMMON_FIELDS, CORRUPT, REQUIRED

    # The expensive tests (re-reading the text, walking entries) run only where the cheap ones found something
    # or the line is kept.
    def first_of(cases: list[str]) -> str:
        return "coalesce(" + ", ".join(cases) + ")"

    wrong_type = first_of([f"CASE WHEN get_json_object(text, '$.{n}') IS NOT NULL AND {n} IS NULL THEN '{n}' END"
                           for n in fields] + ["'?'"])
    missing = first_of([f"CASE WHEN {f.name} IS NULL THEN '{f.name}' END" for f in COMMON_FIELDS])
    per_type = first_of([f"CASE WHEN type = '{t}' AND {name} IS NULL THEN '{t} without {name}' END"
                         for t, names in REQUIRED.items() for name in names])
    bad_entry = ("(size({e}) != 3 OR try_cast(try_element_at({e}, 1) AS INT) IS NULL "
                 "OR try_cast(try_element_at({e}, 2) AS INT) IS NULL)")
    shapes = first_of([f"CASE WHEN exists({name}, e -> {bad_entry.format(e='e')}) THEN "
                       f"'an entry in {name} is not [index, generation, digest]' END"
                       for name in ("committed", "removed", "entries")]
                      + [f"CASE WHEN entry IS NOT NULL AND {bad_entry.format(e='entry')} THEN "
                         f"'entry is not [index, generation, digest]' END"])
    problem = (f"CASE WHEN unparsed OR ({CORRUPT} IS NOT NULL AND json_object_keys(text) IS NULL) THEN ' is not JSON' "
               f"WHEN {CORRUPT} IS NOT NULL THEN concat(': field ', {wrong_type}, ' has the wrong type') "
               f"WHEN {missing} IS NOT NULL THEN concat(': field ', {missing}, ' is missing') "
               f"WHEN v != 1 THEN concat(': trace format version ', CAST(v AS STRING), ' is not supported') "
               f"WHEN node != file_node THEN concat(': node is ', node, ', not ', file_node) "
               f"WHEN {per_type} IS NOT NULL THEN concat(': ', {per_type}) "
               f"WHEN {shapes} IS NOT NULL THEN concat(': ', {shapes}) END")
    # Every line N that is not torn must be the file's N-th event: seq N (a gap, a repeat or a swap is an edit).
    edited = ("CASE WHEN seq != line THEN concat(' has seq ', CAST(seq AS STRING), CASE WHEN line = 1 THEN "
              "', expected 1' WHEN seq < line THEN ', a repeat or out of sequence' ELSE concat(' after seq ', "
              "CAST(line - 1 AS STRING), ' (events out of sequence)') END) END")
    return problem, edited
