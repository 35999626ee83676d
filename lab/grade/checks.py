"""The grader's checks: each is a pure function from the events DataFrame (schema.EVENTS) to a DataFrame of
violations (schema.VIOLATIONS), built only from Spark's built-in functions, so it runs the same on one laptop
and on a cluster. The rule each one enforces is written out in `lab.grade.rules`.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lab.grade.rules import RULES

RUN = ["submission", "run"]
NODE_BOOT = ["submission", "run", "node", "boot"]
CLUSTER = "cluster"
# Check 1 follows each follower's match index in its own column: clusters of up to MAX_NODES nodes.
MAX_NODES = 9
NODE_FAULTS = ("node_killed", "node_restarted", "node_paused", "node_resumed")
FAULTS = (*NODE_FAULTS, "link_cut", "link_healed")


def _violations(df: DataFrame, check: str, *, node: Column, index: Column | None, detail: Column,
                seq: Column, time: Column) -> DataFrame:
    return df.select(
        F.col("submission"),
        F.col("run"),
        F.lit(check).alias("check"),
        node.cast("string").alias("node"),
        (index if index is not None else F.lit(None)).cast("int").alias("index"),
        detail.cast("string").alias("detail"),
        seq.cast("long").alias("seq"),
        time.cast("double").alias("time"),
    )


def _at(array: Column, i: int) -> Column:
    """array[i] (0-based), NULL when out of range, whatever spark.sql.ansi.enabled says."""
    return F.try_element_at(array, F.lit(i + 1))


def _is(*types: str) -> Column:
    return F.col("type").isin(*types)


def _entry_text(index: Column, generation: Column, digest: Column) -> Column:
    return F.format_string("[%s, %s, %s]", index, generation, digest)


def _explode_entries(df: DataFrame, column: str, keep: list[str], prefix: str) -> DataFrame:
    """One row per entry of an entries column: <prefix>index, <prefix>gen, <prefix>digest."""
    e = F.col("_e")
    return (df.select(*keep, F.explode(column).alias("_e"))
            .select(*keep, _at(e, 0).try_cast("int").alias(f"{prefix}index"),
                    _at(e, 1).try_cast("int").alias(f"{prefix}gen"), _at(e, 2).alias(f"{prefix}digest")))


def _first_commits(events: DataFrame) -> DataFrame:
    """Per (run, index): the entry first put under any node's HWM, when, and the lowest generation that did."""
    commits = _explode_entries(events.filter(_is("hwm_changed")), "committed",
                               [*RUN, "node", "gen", "seq", "time"], "c")
    return commits.groupBy(*RUN, "cindex").agg(
        F.min_by(F.struct("cdigest", "cgen", F.col("node").alias("cnode")),
                 F.struct("time", "node", "seq")).alias("first"),
        F.min("time").alias("committed_at"),
        F.min("gen").alias("committed_gen"),
        (F.min("cdigest") != F.max("cdigest")).alias("conflicting"),
    ).select(*RUN, "cindex", "committed_at", "committed_gen", "conflicting", "first.*")


def _dead_at_end(events: DataFrame) -> DataFrame:
    """Nodes whose last node fault in the run is a kill or a pause: they are not expected to catch up."""
    last = (events.filter((F.col("node") == CLUSTER) & _is(*NODE_FAULTS))
            .groupBy(*RUN, "target").agg(F.max_by("type", F.struct("time", "seq")).alias("last_fault")))
    return (last.filter(F.col("last_fault").isin("node_killed", "node_paused"))
            .select(*RUN, F.col("target").alias("node"), F.lit(True).alias("dead")))


def _final_logs(events: DataFrame) -> DataFrame:
    """The last log_snapshot of each node, with `live` (not killed or paused at the end)."""
    snapshots = events.filter(_is("log_snapshot"))
    # Find each node's last snapshot on narrow columns, then fetch it: the entries are never shuffled.
    last = (snapshots.groupBy(*RUN, "node").agg(F.max(F.struct("time", "seq")).alias("last"))
            .select(*RUN, "node", F.col("last.seq").alias("seq")))
    chosen = snapshots.join(last, [*RUN, "node", "seq"], "left_semi").select(
        *RUN, "node", "hwm", "log_end", "entries", "seq", "time")
    return (chosen.join(_dead_at_end(events), [*RUN, "node"], "left")
            .withColumn("live", F.col("dead").isNull()).drop("dead")
            .withColumn("held", F.size("entries")))


# ---- 1 ------------------------------------------------------------------------------------------------------

def check_hwm_majority(events: DataFrame) -> DataFrame:
    """A leader raising its HWM to k in generation g: a majority held index >= k (as the leader learned it in
    this generation and boot), and entry k is of generation g.

    What the leader knew: its match_index_updated events before the hwm_changed, and the one that the same
    response produced right after it (a leader records the follower's new match index after deciding the HWM,
    with only write_acked events in between)."""
    key = [*NODE_BOOT, "gen"]
    raised = events.filter(_is("hwm_changed") & (F.col("role") == "leader")
                           & (F.col("hwm") > F.coalesce(F.col("from_hwm"), F.lit(0))))
    matches = events.filter(_is("match_index_updated") & (F.col("follower") != F.col("node")))
    positions = (matches.select(*RUN, "node", "follower").distinct()
                 .withColumn("pos", F.dense_rank().over(Window.partitionBy(*RUN, "node").orderBy("follower")) - 1))
    matches = matches.join(positions, [*RUN, "node", "follower"]).select(
        *key, "seq", "pos", "match_index", F.lit("match").alias("kind"))
    acked = events.filter(_is("write_acked")).select(*key, "seq", F.lit("ack").alias("kind"))
    raises = raised.select(*key, "seq", "time", "hwm", "from_hwm", "cluster_size", "entry_generation",
                           "committed", F.lit("raise").alias("kind"))
    rows = raises.unionByName(matches, allowMissingColumns=True).unionByName(acked, allowMissingColumns=True)
    order = Window.partitionBy(*key).orderBy("seq")
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # "The next event" as the last one before, in reverse order: a growing frame, computed incrementally
    # (a frame that shrinks towards the end of the partition would be recomputed for every row).
    after = Window.partitionBy(*key).orderBy(F.desc("seq")).rowsBetween(Window.unboundedPreceding, -1)
    held = [F.max(F.when(F.col("pos") == j, F.col("match_index"))).over(upto) for j in range(MAX_NODES - 1)]
    acks_so_far = F.count(F.when(F.col("kind") == "ack", 1)).over(upto)
    k = F.col("hwm")
    with_state = rows.select("*", F.array(*held).alias("held"), acks_so_far.alias("acks"))
    next_event = F.last(F.when(F.col("kind") != "ack", F.struct("kind", "seq", "pos", "match_index", "acks")),
                        ignorenulls=True).over(after)
    raises = with_state.select("*", next_event.alias("next")).filter(F.col("kind") == "raise")
    # The match that the raising response produced: next after the raise, with only write_acked between.
    same_response = ((F.col("next.kind") == "match")
                     & (F.col("next.seq") - F.col("seq") - 1 == F.col("next.acks") - F.col("acks")))
    late = (same_response & (F.col("next.match_index") >= k)
            & (F.coalesce(F.try_element_at("held", F.col("next.pos") + 1), F.lit(0)) < k))
    checked = (raises
               .withColumn("holders", F.lit(1) + F.size(F.filter("held", lambda m: m >= k))
                           + F.when(late, 1).otherwise(0))
               .withColumn("majority", F.floor(F.col("cluster_size") / 2).cast("int") + 1)
               .withColumn("entry_gen", F.coalesce(
                   F.col("entry_generation"),
                   _at(F.try_element_at(F.filter("committed", lambda e: _at(e, 0).try_cast("int") == k), F.lit(-1)),
                       1).try_cast("int"))))
    too_few = F.col("holders") < F.col("majority")
    old_entry = F.col("entry_gen") != F.col("gen")
    detail = F.concat_ws("; ",
        F.when(too_few, F.format_string(
            "%s raised its HWM from %d to %d in generation %d, but only %d of %d nodes held index %d "
            "(a majority is %d)", "node", F.coalesce("from_hwm", F.lit(0)), k, "gen", "holders", "cluster_size",
            k, "majority")),
        F.when(old_entry, F.format_string(
            "%s raised its HWM to %d in generation %d, but entry %d is of generation %d: an older generation's "
            "entry may only be committed by committing a newer one", "node", k, "gen", k, "entry_gen")))
    return _violations(checked.filter(too_few | old_entry), "hwm-majority", node=F.col("node"), index=k,
                       detail=detail, seq=F.col("seq"), time=F.col("time"))


# ---- 2 ------------------------------------------------------------------------------------------------------

def check_read_above_hwm(events: DataFrame) -> DataFrame:
    """No read_served above the serving node's HWM at that moment (its last node_started/hwm_changed)."""
    relevant = events.filter(_is("node_started", "hwm_changed", "read_served"))
    upto = Window.partitionBy(*NODE_BOOT).orderBy("seq").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    with_state = relevant.withColumn(
        "state", F.coalesce(F.last(F.when(~_is("read_served"), F.col("hwm")), ignorenulls=True).over(upto),
                            F.lit(0)))
    bad = with_state.filter(_is("read_served") & ((F.col("index") > F.col("state"))
                                                  | (F.col("index") > F.col("hwm"))))
    detail = F.format_string("%s served a read of index %d while its HWM was %d", "node", "index",
                             F.least("state", "hwm"))
    return _violations(bad, "read-above-hwm", node=F.col("node"), index=F.col("index"), detail=detail,
                       seq=F.col("seq"), time=F.col("time"))


# ---- 3 ------------------------------------------------------------------------------------------------------

def check_hwm_monotonic(events: DataFrame) -> DataFrame:
    """Within one boot of a node, every hwm_changed is at least every HWM the node had before."""
    relevant = events.filter(_is("node_started", "hwm_changed"))
    before = Window.partitionBy(*NODE_BOOT).orderBy("seq").rowsBetween(Window.unboundedPreceding, -1)
    with_prev = relevant.withColumn("highest", F.greatest(F.max("hwm").over(before), F.col("from_hwm")))
    bad = with_prev.filter(_is("hwm_changed") & (F.col("hwm") < F.col("highest")))
    detail = F.format_string("%s's HWM moved back from %d to %d (boot %d)", "node", "highest", "hwm", "boot")
    return _violations(bad, "hwm-monotonic", node=F.col("node"), index=F.col("hwm"), detail=detail,
                       seq=F.col("seq"), time=F.col("time"))


# ---- 4 ------------------------------------------------------------------------------------------------------

def check_committed_never_change(events: DataFrame) -> DataFrame:
    """An entry once under any node's HWM is never replaced: not by another commit at that index, not by an
    append there in the committing generation or a newer one, not in any final log."""
    check = "committed-never-change"
    first = _first_commits(events)
    committed = _entry_text(F.col("cindex"), F.col("cgen"), F.col("cdigest"))
    committed_at_index = _entry_text(F.col("index"), F.col("cgen"), F.col("cdigest"))

    commits = _explode_entries(events.filter(_is("hwm_changed")), "committed",
                               [*RUN, "node", "gen", "seq", "time"], "o")
    # Only indexes committed with more than one digest can hold a second, different commit.
    recommitted = (commits.withColumnRenamed("oindex", "cindex")
                   .join(first.filter("conflicting"), [*RUN, "cindex"])
                   .filter(F.col("odigest") != F.col("cdigest")))
    v_commits = _violations(
        recommitted, check, node=F.col("node"), index=F.col("cindex"), seq=F.col("seq"), time=F.col("time"),
        detail=F.format_string("%s committed %s at index %d, but %s had already committed %s there", "node",
                               _entry_text(F.col("cindex"), F.col("ogen"), F.col("odigest")), "cindex", "cnode",
                               committed))

    appends = events.filter(_is("leader_append", "follower_append"))
    overwritten = (appends.join(first.withColumnRenamed("cindex", "index"), [*RUN, "index"])
                   .filter((F.col("digest") != F.col("cdigest")) & (F.col("gen") >= F.col("committed_gen"))))
    v_appends = _violations(
        overwritten, check, node=F.col("node"), index=F.col("index"), seq=F.col("seq"), time=F.col("time"),
        detail=F.format_string("%s wrote %s at index %d in generation %d, over the committed entry %s", "node",
                               _entry_text(F.col("index"), F.col("generation"), F.col("digest")), "index", "gen",
                               committed_at_index))

    logs = _final_logs(events)
    held = _explode_entries(logs, "entries", [*RUN, "node"], "f").withColumnRenamed("findex", "cindex")
    expected = (logs.select(*RUN, "node", "hwm", "live", "held", "seq", "time").join(first, RUN)
                .filter(F.col("live") | (F.col("cindex") <= F.col("hwm"))))
    compared = (expected.join(held, [*RUN, "node", "cindex"], "left")
                .filter(F.col("fdigest").isNull() | (F.col("fdigest") != F.col("cdigest"))))
    v_final = _violations(
        compared, check, node=F.col("node"), index=F.col("cindex"), seq=F.col("seq"), time=F.col("time"),
        detail=F.when(F.col("fdigest").isNull(), F.format_string(
            "%s's final log (%d entries) lacks the committed entry %s", "node", "held", committed))
        .otherwise(F.format_string("%s's final log has %s at index %d instead of the committed entry %s", "node",
                                   _entry_text(F.col("cindex"), F.col("fgen"), F.col("fdigest")), "cindex",
                                   committed)))
    return v_commits.unionByName(v_appends).unionByName(v_final)


# ---- 5 ------------------------------------------------------------------------------------------------------

def check_acked_in_final_logs(events: DataFrame) -> DataFrame:
    """Every write_acked entry (index, digest) is in the final log of every live node."""
    acks = events.filter(_is("write_acked")).select(
        *RUN, F.col("node").alias("acker"), "request", "index", "digest")
    logs = _final_logs(events).filter("live")
    held = _explode_entries(logs, "entries", [*RUN, "node"], "f").withColumnRenamed("findex", "index")
    expected = acks.join(logs.select(*RUN, "node", "held", "seq", "time"), RUN)
    missing = (expected.join(held, [*RUN, "node", "index"], "left")
               .filter(F.col("fdigest").isNull() | (F.col("fdigest") != F.col("digest"))))
    ack = F.format_string("write %s, acknowledged by %s at index %d (digest %s),", F.coalesce("request", F.lit("?")),
                          "acker", "index", "digest")
    detail = F.when(F.col("fdigest").isNull(), F.format_string(
        "%s is missing from %s's final log (%d entries)", ack, "node", "held")).otherwise(F.format_string(
            "%s is not in %s's final log, which has %s there", ack, "node",
            _entry_text(F.col("index"), F.col("fgen"), F.col("fdigest"))))
    return _violations(missing, "acked-in-final-logs", node=F.col("node"), index=F.col("index"), detail=detail,
                       seq=F.col("seq"), time=F.col("time"))


# ---- 6 ------------------------------------------------------------------------------------------------------

def check_logs_agree(events: DataFrame) -> DataFrame:
    """Final logs agree up to the final HWM (the highest HWM of a live node; a node dead at the end is compared up
    to its own HWM). Where they differ, the nodes that do not hold the most common entry are reported."""
    check = "logs-agree"
    logs = _final_logs(events)
    beyond = logs.filter(F.col("hwm") > F.col("held"))
    v_beyond = _violations(
        beyond, check, node=F.col("node"), index=F.col("hwm"), seq=F.col("seq"), time=F.col("time"),
        detail=F.format_string("%s's HWM %d is beyond the end of its final log (%d entries)", "node", "hwm", "held"))

    final_hwm = (logs.groupBy(*RUN).agg(F.coalesce(F.max(F.when(F.col("live"), F.col("hwm"))), F.max("hwm"))
                                        .alias("final_hwm")))
    nodes = (logs.join(final_hwm, RUN)
             .withColumn("limit", F.when(F.col("live"), F.col("final_hwm"))
                         .otherwise(F.least("hwm", "final_hwm")))
             .select(*RUN, "node", "limit", "final_hwm", "held", "seq", "time"))
    held = (_explode_entries(logs, "entries", [*RUN, "node"], "f").withColumnRenamed("findex", "rindex")
            .join(nodes.select(*RUN, "node", "limit"), [*RUN, "node"])
            .filter(F.col("rindex") <= F.col("limit")).drop("limit"))
    most = Window.partitionBy(*RUN, "rindex").orderBy(F.desc("holders"), F.desc("rgen"), "rdigest")
    consensus = (held.groupBy(*RUN, "rindex", F.col("fgen").alias("rgen"), F.col("fdigest").alias("rdigest"))
                 .agg(F.count("*").alias("holders"), F.min("node").alias("holder"))
                 .withColumn("rank", F.row_number().over(most)).filter(F.col("rank") == 1).drop("rank"))
    compared = (nodes.join(consensus, RUN).filter(F.col("rindex") <= F.col("limit"))
                .join(held, [*RUN, "node", "rindex"], "left")
                .filter(F.col("fdigest").isNull() | (F.col("fdigest") != F.col("rdigest"))
                        | (F.col("fgen") != F.col("rgen"))))
    theirs = _entry_text(F.col("rindex"), F.col("rgen"), F.col("rdigest"))
    others = F.when(F.col("holders") == 1, F.col("holder")).otherwise(
        F.format_string("%d other nodes", "holders"))
    v_differ = _violations(
        compared, check, node=F.col("node"), index=F.col("rindex"), seq=F.col("seq"), time=F.col("time"),
        detail=F.when(F.col("fdigest").isNull(), F.format_string(
            "%s's final log ends at %d, below the final HWM %d (%s holds %s)", "node", "held", "final_hwm",
            others, theirs)).otherwise(F.format_string(
                "at index %d (final HWM %d) %s holds %s but %s %s", "rindex", "final_hwm", "node",
                _entry_text(F.col("rindex"), F.col("fgen"), F.col("fdigest")), others,
                F.when(F.col("holders") == 1, F.concat(F.lit("holds "), theirs))
                .otherwise(F.concat(F.lit("hold "), theirs)))))
    return v_beyond.unionByName(v_differ)


# ---- 7 ------------------------------------------------------------------------------------------------------

def check_truncation_safe(events: DataFrame) -> DataFrame:
    """`truncated` removes only conflicting entries: none of the leader's generation at that index, none under
    the node's own HWM, none committed before. Losing an unflushed tail (reason lost-tail) is not a decision
    of the algorithm and is judged by checks 4 and 5 instead."""
    truncations = events.filter(_is("truncated") & (F.coalesce(F.col("reason"), F.lit("")) != "lost-tail"))
    removed = _explode_entries(truncations, "removed",
                               [*RUN, "node", "seq", "time", "reason", "conflicting_generation", "hwm"], "x")
    first = _first_commits(events).select(*RUN, F.col("cindex").alias("xindex"), F.col("cdigest").alias("xdigest"),
                                          "committed_at")
    joined = removed.join(first, [*RUN, "xindex", "xdigest"], "left")
    matching = F.col("conflicting_generation").isNotNull() & (F.col("xgen") == F.col("conflicting_generation"))
    under_hwm = F.col("xindex") <= F.col("hwm")
    was_committed = F.col("committed_at") < F.col("time")
    bad = joined.filter(F.coalesce(matching, F.lit(False)) | F.coalesce(under_hwm, F.lit(False))
                        | F.coalesce(was_committed, F.lit(False)))
    detail = F.concat(
        F.format_string("%s removed %s (reason %s): ", "node",
                        _entry_text(F.col("xindex"), F.col("xgen"), F.col("xdigest")),
                        F.coalesce("reason", F.lit("none"))),
        F.concat_ws("; ",
                    F.when(matching, F.format_string("the leader's entry there is of the same generation %d, so it "
                                                     "matches", "conflicting_generation")),
                    F.when(under_hwm, F.format_string("index %d is under its own HWM %d", "xindex", "hwm")),
                    F.when(was_committed, F.format_string("it had been committed at t=%.2f", "committed_at"))))
    return _violations(bad, "truncation-safe", node=F.col("node"), index=F.col("xindex"), detail=detail,
                       seq=F.col("seq"), time=F.col("time"))


# ---- 8 ------------------------------------------------------------------------------------------------------

def check_liveness(events: DataFrame) -> DataFrame:
    """After the last fault, every live node's HWM reaches the last acknowledged index within the bound."""
    last_fault = (events.filter((F.col("node") == CLUSTER) & _is(*FAULTS))
                  .groupBy(*RUN).agg(F.max("time").alias("last_fault")))
    last_ack = (events.filter(_is("write_acked") & F.col("liveness_bound").isNotNull())
                .groupBy(*RUN).agg(F.max(F.struct("index", (-F.col("time")).alias("neg_time"))).alias("a"),
                                   F.first("liveness_bound").alias("bound"))
                .select(*RUN, F.col("a.index").alias("last_acked"), (-F.col("a.neg_time")).alias("acked_at"),
                        "bound"))
    deadlines = (last_ack.join(last_fault, RUN, "left")
                 .withColumn("since", F.greatest(F.coalesce("last_fault", F.lit(0.0)), F.col("acked_at")))
                 .withColumn("deadline", F.col("since") + F.col("bound")))
    nodes = (events.filter(F.col("node") != CLUSTER).select(*RUN, "node").distinct()
             .join(_dead_at_end(events), [*RUN, "node"], "left_anti"))
    states = (events.filter(_is("node_started", "hwm_changed")).join(deadlines.select(*RUN, "deadline"), RUN)
              .filter(F.col("time") <= F.col("deadline"))
              .groupBy(*RUN, "node").agg(F.max_by(F.struct("hwm", "seq", "time"), F.struct("time", "seq"))
                                         .alias("s"))
              .select(*RUN, "node", F.col("s.hwm").alias("state"), F.col("s.seq").alias("seq")))
    bad = (nodes.join(deadlines, RUN).join(states, [*RUN, "node"], "left")
           .filter(F.coalesce("state", F.lit(0)) < F.col("last_acked")))
    detail = F.format_string(
        "%s's HWM was %d at t=%.2f, %.1f s after the last fault or acknowledgement (t=%.2f); the last "
        "acknowledged write is at index %d", "node", F.coalesce("state", F.lit(0)), "deadline", "bound", "since",
        "last_acked")
    return _violations(bad, "liveness", node=F.col("node"), index=F.col("last_acked"), detail=detail,
                       seq=F.col("seq"), time=F.col("deadline"))


# ---- 9 ------------------------------------------------------------------------------------------------------

def _digest(payload: str) -> str:
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


# What the grader itself knows of a scenario (docs/grading.md). Applied only when the run's client writes use
# these payloads, so a scenario script with other payloads is judged by its own `expectation` events alone.
SCENARIO_EXPECTATIONS: dict[str, dict] = {
    "s1": {"never_served": ["e4"], "final_log": ["e1", "e2", "e3", "e5"], "final_hwm": 4},
}


def check_scenario(events: DataFrame) -> DataFrame:
    """Every `expectation` event holds, and the grader's own knowledge of the scenario (SCENARIO_EXPECTATIONS)."""
    check = "scenario"
    failed = events.filter(_is("expectation") & (F.col("ok") == F.lit(False)))
    out = _violations(failed, check, node=F.lit(CLUSTER), index=None, seq=F.col("seq"), time=F.col("time"),
                      detail=F.concat(F.lit("expectation '"), F.col("name"), F.lit("' failed"),
                                      F.coalesce(F.concat(F.lit(": "), F.col("detail")), F.lit(""))))
    for scenario, expect in SCENARIO_EXPECTATIONS.items():
        payloads = sorted(set(expect["never_served"]) | set(expect["final_log"]))
        names = F.create_map(*[F.lit(x) for p in payloads for x in (_digest(p), p)])
        this = events.filter(F.lower(F.col("scenario")) == scenario)
        runs = (this.filter(_is("client_write")).groupBy(*RUN).agg(F.collect_set("payload").alias("written"))
                .filter(F.size(F.array_except(F.array(*[F.lit(p) for p in payloads]), F.col("written"))) == 0)
                .select(*RUN))
        never = [_digest(p) for p in expect["never_served"]]
        served = (this.filter(_is("read_served")).join(runs, RUN)
                  .filter(F.col("payload").isin(*expect["never_served"]) | _at(F.col("entry"), 2).isin(*never)))
        out = out.unionByName(_violations(
            served, check, node=F.col("node"), index=F.col("index"), seq=F.col("seq"), time=F.col("time"),
            detail=F.format_string("%s served %s at index %d: scenario %s says it must never be served", "node",
                                   F.coalesce(F.try_element_at(names, _at(F.col("entry"), 2)), F.col("payload")), "index",
                                   F.lit(scenario.upper()))))
        wanted = F.array(*[F.lit(_digest(p)) for p in expect["final_log"]])
        logs = _final_logs(this).filter("live").join(runs, RUN)
        shown = F.array_join(F.transform("entries", lambda e: F.coalesce(F.try_element_at(names, _at(e, 2)), _at(e, 2))), ", ")
        wrong_log = logs.filter(F.transform("entries", lambda e: _at(e, 2)) != wanted)
        out = out.unionByName(_violations(
            wrong_log, check, node=F.col("node"), index=None, seq=F.col("seq"), time=F.col("time"),
            detail=F.format_string("%s's final log is [%s]; scenario %s expects [%s]", "node", shown,
                                   F.lit(scenario.upper()), F.lit(", ".join(expect["final_log"])))))
        wrong_hwm = logs.filter(F.col("hwm") != expect["final_hwm"])
        out = out.unionByName(_violations(
            wrong_hwm, check, node=F.col("node"), index=F.col("hwm"), seq=F.col("seq"), time=F.col("time"),
            detail=F.format_string("%s's final HWM is %d; scenario %s expects %d", "node", "hwm",
                                   F.lit(scenario.upper()), F.lit(expect["final_hwm"]))))
    return out


CHECKS: tuple[tuple[str, Callable[[DataFrame], DataFrame]], ...] = (
    ("hwm-majority", check_hwm_majority),
    ("read-above-hwm", check_read_above_hwm),
    ("hwm-monotonic", check_hwm_monotonic),
    ("committed-never-change", check_committed_never_change),
    ("acked-in-final-logs", check_acked_in_final_logs),
    ("logs-agree", check_logs_agree),
    ("truncation-safe", check_truncation_safe),
    ("liveness", check_liveness),
    ("scenario", check_scenario),
)
assert tuple(c for c, _ in CHECKS) == tuple(r.check for r in RULES)


def all_checks(events: DataFrame) -> DataFrame:
    """Every check's violations in one DataFrame: one plan, run as one Spark job."""
    return functools.reduce(DataFrame.unionByName, [check(events) for _, check in CHECKS])
