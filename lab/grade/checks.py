"""The grader's checks: each is a pure function from the events DataFrame (schema.EVENTS) to a DataFrame of
violations (schema.VIOLATIONS), built only from Spark's built-in functions, so it runs the same on one laptop
and on a cluster. The rule each one enforces is written out in `lab.grade.rules`.

The checks share three passes over the events of each run. The events come partitioned by run, and every pass
keeps to that partitioning: none shuffles, none joins.
- The node timeline: every node's events in seq order, each with the node's running state (its HWM, the highest
  HWM so far, how far each follower has acknowledged) and the run's own facts (the last fault, the last
  acknowledged write, who is down at the end): hwm-majority, read-above-hwm, hwm-monotonic, liveness.
- The index view: every entry the run mentions (committed, appended, in a final log, acknowledged, removed) in
  index order, each with what is known of its index (its first commit, the final logs' entries there) and the
  run's facts (the final logs, who is live): committed-never-change, acked-in-final-logs, logs-agree,
  truncation-safe and what the grader knows of a scenario.
- Single events: the scenario's expectations, read-gate-strict, wal-truncation, epoch-end, epoch-truncation,
  progress.
Each pass is one sort of its rows and a few window operators over it (Spark evaluates windows that share a
partitioning and an order on the same sorted rows). `all_checks` builds each pass once with all its rules, one
Spark job for everything; `check_x` builds the pass of check x with that rule alone.

The expressions are Spark SQL text: a pass is planned from a handful of strings, where the same plan built call
by call from Python would cost thousands of round trips to the JVM.
"""

from __future__ import annotations

import functools
from typing import Callable

from pyspark.sql import DataFrame

from lab.core.config import MAX_NODES
from lab.core.messages import digest
from lab.grade.rules import RULES
from lab.grade.sql import BEFORE, RUN_ORDER, UPTO, WHOLE, among, entry_text, every, fmt, one, q, v
from lab.core.events import (
    CLIENT_WRITE, EPOCH_ANSWER, EPOCH_TRUNCATION, EXPECTATION, FOLLOWER_APPEND, HWM_CHANGED, LEADER_APPEND, LINK_CUT,
    LINK_HEALED, LOG_SNAPSHOT, MATCH_INDEX_UPDATED, NODE_KILLED, NODE_PAUSED, NODE_RESTARTED, NODE_RESUMED,
    NODE_STARTED, READ_REFUSED, READ_SERVED, TRUNCATED, WAL_TRUNCATED, WRITE_ACKED)

CLUSTER = "cluster"
# A leader's followers each have a slot in the node timeline: clusters of up to MAX_NODES nodes (the lab's own).
NODE_FAULTS = (NODE_KILLED, NODE_RESTARTED, NODE_PAUSED, NODE_RESUMED)
FAULTS = (*NODE_FAULTS, LINK_CUT, LINK_HEALED)
# A node's events in the node timeline (its HWM, its reads, its leader's view of its followers, its log).
# The events the single-event checks read (the scenario's expectations, read-gate-strict, wal-truncation, epochs).
SINGLE_KINDS = (EXPECTATION, READ_REFUSED, WAL_TRUNCATED, EPOCH_ANSWER, EPOCH_TRUNCATION)
TIMELINE_KINDS = (NODE_STARTED, HWM_CHANGED, READ_SERVED, MATCH_INDEX_UPDATED, WRITE_ACKED, TRUNCATED, LOG_SNAPSHOT)

def _emit(rows: DataFrame, found: list[str]) -> DataFrame:
    """Every violation that the rules `found` (SQL arrays of VIOLATION, or NULL) on the rows, one row each."""
    return rows.selectExpr("submission", "run", f"inline({every(*found)})")


def _dead(faults: str, node: str) -> str:
    """Whether the node's last node fault in the run (of `faults`: target, time, seq, type) is a kill or a
    pause: it is not expected to catch up, and its final log is not expected to hold everything."""
    return (f"coalesce(array_max(transform(filter({faults}, f -> f.target = {node}), "
            f"f -> named_struct('time', f.time, 'seq', f.seq, 'type', f.type))).type "
            f"IN {among((NODE_KILLED, NODE_PAUSED))}, false)")


# ---- the node timeline --------------------------------------------------------------------------------------

NODE = RUN_ORDER + "node, seq"
MAJORITY = "(CAST(floor(cluster_size / 2) AS INT) + 1)"
LAST_OF_NODE = "(next_node IS NULL OR next_node != node)"


def _holders(k: str, node: str, boot: str, gen: str) -> str:
    """The leader itself plus the followers that held index k, as the leader `node` knew in `boot` and `gen`
    before this row."""
    return (f"(1 + size(filter(held, h -> h.node = {node} AND h.boot = {boot} AND h.gen = {gen} "
            f"AND h.match_index >= {k})))")


def _node_timeline(events: DataFrame) -> DataFrame:
    """The events of each node in seq order (and the cluster's faults), with running state. The window is
    partitioned by run, not by node: the run's facts come from the whole partition, and the running state of
    a node is told apart from the node before it by carrying (node, boot, gen) beside every value."""
    raise_ = f"(type = '{HWM_CHANGED}' AND role = 'leader' AND hwm > coalesce(from_hwm, 0))"
    # The generation of entry k: the event says it, or its own list of committed entries does.
    entry_gen = ("coalesce(entry_generation, try_cast(try_element_at(try_element_at(filter(committed, "
                 "e -> try_cast(try_element_at(e, 1) AS INT) = hwm), -1), 2) AS INT))")
    rows = events.where(f"(node != '{CLUSTER}' AND type IN {among(TIMELINE_KINDS)}) "
                        f"OR (node = '{CLUSTER}' AND type IN {among(FAULTS)})")
    rows = rows.selectExpr(
        "submission", "run", "cluster_size", "liveness_bound", "node", "seq", "time", "boot", "gen", "type", "hwm",
        "from_hwm", "index", "follower", "match_index", "target",
        f"type IN {among((NODE_STARTED, HWM_CHANGED))} AS hwm_event",
        f"coalesce({raise_}, false) AS is_raise",
        f"coalesce(type = '{MATCH_INDEX_UPDATED}' AND follower != node, false) AS is_match",
        f"type = '{WRITE_ACKED}' AS is_ack",
        f"CASE WHEN {raise_} THEN {entry_gen} END AS entry_gen")
    rows = rows.selectExpr(
        "*",
        f"array_sort(collect_set(CASE WHEN is_match THEN follower END) OVER ({NODE} {WHOLE})) AS followers",
        f"max(CASE WHEN node = '{CLUSTER}' AND type IN {among(FAULTS)} THEN time END) OVER ({NODE} {WHOLE}) "
        f"AS last_fault",
        f"max(CASE WHEN is_ack AND liveness_bound IS NOT NULL THEN named_struct('index', index, 'neg_time', -time) "
        f"END) OVER ({NODE} {WHOLE}) AS last_ack",
        f"collect_list(CASE WHEN node = '{CLUSTER}' AND type IN {among(NODE_FAULTS)} THEN named_struct("
        f"'target', target, 'time', time, 'seq', seq, 'type', type) END) OVER ({NODE} {WHOLE}) AS faults",
        f"lead(node) OVER ({NODE}) AS next_node")
    rows = rows.selectExpr(
        "*", "CAST(array_position(followers, follower) - 1 AS INT) AS slot",
        "greatest(coalesce(last_fault, 0.0), -last_ack.neg_time) AS since",
        "greatest(coalesce(last_fault, 0.0), -last_ack.neg_time) + liveness_bound AS deadline")
    held = "named_struct('node', node, 'boot', boot, 'gen', gen, 'match_index', match_index)"
    state = "named_struct('node', node, 'boot', boot, 'hwm', hwm)"
    rows = rows.selectExpr(
        "*",
        # What each follower had acknowledged before this event, in the node's boot and generation of the time.
        "array(" + ", ".join(f"max(CASE WHEN is_match AND slot = {j} THEN {held} END) OVER ({NODE} {BEFORE})"
                             for j in range(MAX_NODES)) + ") AS held",
        f"count(CASE WHEN is_ack THEN 1 END) OVER ({NODE} {UPTO}) AS acks",
        f"last(CASE WHEN hwm_event THEN {state} END, true) OVER ({NODE} {UPTO}) AS state",
        f"max(CASE WHEN hwm_event THEN {state} END) OVER ({NODE} {BEFORE}) AS highest",
        f"last(CASE WHEN hwm_event AND time <= deadline THEN named_struct('node', node, 'hwm', hwm, 'seq', seq) "
        f"END, true) OVER ({NODE} {UPTO}) AS at_deadline")
    # The event before this one that is not an acknowledgement (for hwm-majority's late match, below).
    mark = ("named_struct('node', node, 'boot', boot, 'gen', gen, 'seq', seq, 'time', time, 'acks', acks, "
            "'is_raise', is_raise, 'hwm', hwm, 'from_hwm', from_hwm, 'entry_gen', entry_gen)")
    rows = rows.selectExpr("*", f"last(CASE WHEN NOT is_ack THEN {mark} END, true) OVER ({NODE} {BEFORE}) AS prev")
    # hwm-majority's three places of judgement, each with the raise it judges and its holders (see below).
    last_mark = f"CASE WHEN NOT is_ack THEN {mark} ELSE prev END"
    return rows.selectExpr(
        "*",
        f"CASE WHEN is_raise THEN {_holders('hwm', 'node', 'boot', 'gen')} END AS holders_here",
        f"CASE WHEN NOT is_ack AND prev.is_raise AND prev.node = node "
        f"THEN {_holders('prev.hwm', 'prev.node', 'prev.boot', 'prev.gen')} END AS holders_prev",
        f"CASE WHEN {LAST_OF_NODE} THEN {last_mark} END AS last_mark") \
        .selectExpr("*", f"CASE WHEN last_mark.is_raise AND last_mark.node = node THEN "
                         f"{_holders('last_mark.hwm', 'last_mark.node', 'last_mark.boot', 'last_mark.gen')} "
                         f"END AS holders_last")


def _majority_violation(r: str, holders: str, short: str, old_entry: str) -> str:
    """The violation of raise `r` (a struct with node, hwm, gen, from_hwm, entry_gen, seq, time)."""
    detail = (f"concat_ws('; ', CASE WHEN {short} THEN " + fmt(
        "%s raised its HWM from %d to %d in generation %d, but only %d of %d nodes held index %d (a majority is %d)",
        f"{r}.node", f"coalesce({r}.from_hwm, 0)", f"{r}.hwm", f"{r}.gen", holders, "cluster_size", f"{r}.hwm",
        MAJORITY) + f" END, CASE WHEN {old_entry} THEN " + fmt(
        "%s raised its HWM to %d in generation %d, but entry %d is of generation %d: an older generation's entry "
        "may only be committed by committing a newer one", f"{r}.node", f"{r}.hwm", f"{r}.gen", f"{r}.hwm",
        f"{r}.entry_gen") + " END)")
    return v("hwm-majority", node=f"{r}.node", index=f"{r}.hwm", detail=detail, seq=f"{r}.seq", time=f"{r}.time")


def _rule_hwm_majority() -> str:
    """A leader raising its HWM to k in generation g: a majority held index >= k (as the leader learned it in
    this generation and boot), and entry k is of generation g.

    What the leader knew: its match_index_updated events before the hwm_changed, and the one that the same
    response produced right after it (a leader records the follower's new match index after deciding the HWM,
    with only write_acked events in between). A raise one holder short of a majority is judged on the next
    event of its node that is not an acknowledgement (is it that match?), or at the node's last event."""
    here = ("named_struct('node', node, 'hwm', hwm, 'gen', gen, 'from_hwm', from_hwm, 'entry_gen', entry_gen, "
            "'seq', seq, 'time', time)")
    old_entry = "coalesce(entry_gen != gen, false)"
    at_raise = one(f"is_raise AND holders_here != {MAJORITY} - 1 AND (holders_here < {MAJORITY} OR {old_entry})",
                   _majority_violation(here, "holders_here", f"holders_here < {MAJORITY}", old_entry))
    # At the next event that is not an acknowledgement: the raise before it, one short, is rescued if this is
    # the match its response produced (nothing but acknowledgements between, and news for that follower).
    known = "try_element_at(held, slot + 1)"
    late = (f"(is_match AND boot = prev.boot AND gen = prev.gen AND seq - prev.seq - 1 = acks - prev.acks "
            f"AND match_index >= prev.hwm AND coalesce(CASE WHEN slot >= 0 AND {known}.node = prev.node AND "
            f"{known}.boot = prev.boot AND {known}.gen = prev.gen THEN {known}.match_index END, 0) < prev.hwm)")
    p_short = f"holders_prev + CASE WHEN {late} THEN 1 ELSE 0 END < {MAJORITY}"
    p_old_entry = "coalesce(prev.entry_gen != prev.gen, false)"
    at_next = one(f"holders_prev = {MAJORITY} - 1 AND ({p_short} OR {p_old_entry})",
                  _majority_violation("prev", "holders_prev", p_short, p_old_entry))
    # At the node's last event: a raise one short with nothing after it but acknowledgements.
    at_end = one(f"holders_last = {MAJORITY} - 1",
                 _majority_violation("last_mark", "holders_last", "true",
                                     "coalesce(last_mark.entry_gen != last_mark.gen, false)"))
    return every(at_raise, at_next, at_end)


def _rule_read_above_hwm() -> str:
    """No read_served above the serving node's HWM at that moment (its last node_started/hwm_changed in the
    same boot) or above the HWM the read reports."""
    state = "coalesce(CASE WHEN state.node = node AND state.boot = boot THEN state.hwm END, 0)"
    detail = fmt("%s served a read of index %d while its HWM was %d", "node", "index", f"least({state}, hwm)")
    return one(f"type = '{READ_SERVED}' AND (index > {state} OR index > hwm)",
               v("read-above-hwm", node="node", index="index", detail=detail, seq="seq", time="time"))


def _rule_hwm_monotonic() -> str:
    """Within one boot of a node, every hwm_changed is at least every HWM the node had before."""
    highest = "greatest(CASE WHEN highest.node = node AND highest.boot = boot THEN highest.hwm END, from_hwm)"
    detail = fmt("%s's HWM moved back from %d to %d (boot %d)", "node", highest, "hwm", "boot")
    return one(f"type = '{HWM_CHANGED}' AND hwm < {highest}",
               v("hwm-monotonic", node="node", index="hwm", detail=detail, seq="seq", time="time"))


def _rule_liveness() -> str:
    """After the last fault, every live node's HWM reaches the last acknowledged index within the bound: judged
    at each node's last event, with its HWM as it was at the deadline."""
    state = "coalesce(CASE WHEN at_deadline.node = node THEN at_deadline.hwm END, 0)"
    found = (f"{LAST_OF_NODE} AND node != '{CLUSTER}' AND last_ack IS NOT NULL AND NOT {_dead('faults', 'node')} "
             f"AND {state} < last_ack.index")
    detail = fmt("%s's HWM was %d at t=%.2f, %.1f s after the last fault or acknowledgement (t=%.2f); the last "
                 "acknowledged write is at index %d", "node", state, "deadline", "liveness_bound", "since",
                 "last_ack.index")
    return one(found, v("liveness", node="node", index="last_ack.index", detail=detail,
                        seq="CASE WHEN at_deadline.node = node THEN at_deadline.seq END", time="deadline"))


# ---- the index view -----------------------------------------------------------------------------------------

# What the grader itself knows of a scenario (docs/grading.md). Applied only when the run's client writes use
# these payloads, so a scenario script with other payloads is judged by its own `expectation` events alone.
SCENARIO_EXPECTATIONS: dict[str, dict] = {
    "s1": {"never_served": ["e4"], "final_log": ["e1", "e2", "e3", "e5"], "final_hwm": 4},
}


def _payloads(expect: dict) -> list[str]:
    return sorted(set(expect["never_served"]) | set(expect["final_log"]))


INDEX = RUN_ORDER + "index"
PEERS = "RANGE BETWEEN CURRENT ROW AND CURRENT ROW"


def _item(kind: str, index: str = "NULL", egen: str = "NULL", edigest: str = "NULL", entries: str = "NULL") -> str:
    return (f"named_struct('kind', '{kind}', 'index', CAST({index} AS INT), 'egen', CAST({egen} AS INT), "
            f"'edigest', CAST({edigest} AS STRING), 'entries', CAST({entries} AS ARRAY<ARRAY<STRING>>))")


def _items(column: str, kind: str) -> str:
    return (f"transform({column}, e -> " + _item(kind, "try_cast(try_element_at(e, 1) AS INT)",
                                                 "try_cast(try_element_at(e, 2) AS INT)", "try_element_at(e, 3)") + ")")


def _is_last(node: str, time: str, seq: str) -> str:
    """Whether the snapshot (node, time, seq) is the node's last, of the run's snapshots."""
    return (f"forall(snaps, o -> o.node != {node} OR named_struct('t', o.time, 's', o.seq) <= "
            f"named_struct('t', {time}, 's', {seq}))")


def _index_view(events: DataFrame) -> DataFrame:
    """One row per entry the run mentions, and one per final-log snapshot, fault and (for the scenarios the
    grader knows) client write, ordered by index; each with its index's facts and the run's."""
    known = " OR ".join(f"(lower(scenario) = {q(name)} AND type = '{CLIENT_WRITE}' AND payload IN "
                        f"{among(_payloads(expect))})" for name, expect in SCENARIO_EXPECTATIONS.items())
    # c: committed (hwm_changed), a: appended, s: a snapshot, f: an entry of a snapshot, k: acknowledged,
    # x: removed by a truncation, r: read (scenarios the grader knows), F: a node fault, w: a client write.
    items = (f"CASE WHEN type = '{HWM_CHANGED}' THEN " + _items("committed", "c")
             + f" WHEN type IN {among((LEADER_APPEND, FOLLOWER_APPEND))} THEN array("
             + _item("a", "index", "generation", "digest") + ")"
             + f" WHEN type = '{LOG_SNAPSHOT}' THEN concat(array(" + _item("s", entries="entries") + "), "
             + _items("entries", "f") + ")"
             + f" WHEN type = '{WRITE_ACKED}' THEN array(" + _item("k", "index", edigest="digest") + ")"
             + f" WHEN type = '{TRUNCATED}' AND coalesce(reason, '') != 'lost-tail' THEN " + _items("removed", "x")
             + f" WHEN type = '{READ_SERVED}' AND lower(scenario) IN {among(SCENARIO_EXPECTATIONS)} THEN array("
             + _item("r", "index", edigest="try_element_at(entry, 3)") + ")"
             + f" WHEN node = '{CLUSTER}' AND type IN {among(NODE_FAULTS)} THEN array(" + _item("F") + ")"
             + f" WHEN {known} THEN array(" + _item("w") + ") END")
    types = (HWM_CHANGED, LEADER_APPEND, FOLLOWER_APPEND, LOG_SNAPSHOT, WRITE_ACKED, TRUNCATED,
             READ_SERVED, *NODE_FAULTS, CLIENT_WRITE)
    rows = (events.where(f"type IN {among(types)}")
            .selectExpr("submission", "run", "scenario", "node", "seq", "time", "gen", "hwm", "request", "reason",
                        "conflicting_generation", "payload", "target", "type", "size(entries) AS held",
                        f"explode({items}) AS item")
            .selectExpr("*", "item.kind", "item.index", "item.egen", "item.edigest", "item.entries")
            .drop("item"))
    rows = rows.selectExpr(
        "*",
        f"collect_list(CASE WHEN kind = 's' THEN named_struct('node', node, 'time', time, 'seq', seq, 'hwm', hwm, "
        f"'held', held) END) OVER ({INDEX} {WHOLE}) AS snaps",
        f"collect_list(CASE WHEN kind = 'F' THEN named_struct('target', target, 'time', time, 'seq', seq, "
        f"'type', type) END) OVER ({INDEX} {WHOLE}) AS faults",
        f"collect_set(CASE WHEN kind = 'w' THEN payload END) OVER ({INDEX} {WHOLE}) AS written",
        f"lag(index) OVER ({INDEX}) AS prev_index")
    # A node's final log is its last snapshot; the rows that need them get the run's final logs.
    finals = ("transform(filter(snaps, s -> " + _is_last("s.node", "s.time", "s.seq") + "), s -> named_struct("
              "'node', s.node, 'time', s.time, 'seq', s.seq, 'hwm', s.hwm, 'held', s.held, 'live', NOT "
              + _dead("faults", "s.node") + "))")
    rows = rows.selectExpr(
        "*", "index IS NOT NULL AND (prev_index IS NULL OR prev_index != index) AS first_of_index",
        f"CASE WHEN kind IN ('f', 's') THEN {_is_last('node', 'time', 'seq')} END AS is_final")
    rows = rows.selectExpr("*", f"CASE WHEN kind IN ('k', 's') OR first_of_index THEN {finals} END AS finals")
    rows = rows.selectExpr("*", "coalesce(array_max(transform(filter(finals, n -> n.live), n -> n.hwm)), "
                                "array_max(transform(finals, n -> n.hwm))) AS final_hwm")
    rows = rows.selectExpr("*", "transform(finals, n -> named_struct('node', n.node, 'time', n.time, 'seq', n.seq, "
                                "'hwm', n.hwm, 'held', n.held, 'live', n.live, 'upto', CASE WHEN n.live THEN "
                                "final_hwm ELSE least(n.hwm, final_hwm) END)) AS nodes")
    # What is known of each index: its first commit, and the final logs' entries there.
    c = "kind = 'c'"
    rows = rows.selectExpr(
        "*",
        f"min_by(CASE WHEN {c} THEN named_struct('edigest', edigest, 'egen', egen, 'node', node) END, "
        f"CASE WHEN {c} THEN named_struct('time', time, 'node', node, 'seq', seq) END) OVER ({INDEX} {PEERS}) "
        f"AS first_commit",
        f"min(CASE WHEN {c} THEN time END) OVER ({INDEX} {PEERS}) AS committed_at",
        f"min(CASE WHEN {c} THEN gen END) OVER ({INDEX} {PEERS}) AS committed_gen",
        f"min(CASE WHEN {c} THEN edigest END) OVER ({INDEX} {PEERS}) != "
        f"max(CASE WHEN {c} THEN edigest END) OVER ({INDEX} {PEERS}) AS conflicting",
        f"collect_list(CASE WHEN kind = 'f' AND is_final THEN named_struct('node', node, 'egen', egen, "
        f"'edigest', edigest) END) OVER ({INDEX} {PEERS}) AS at_index")
    # logs-agree: at each index, the final-log entries up to their node's limit, and the most common of them
    # (then the newest generation, then the smallest digest).
    upto = "try_element_at(filter(nodes, n -> n.node = e.node), 1).upto"
    rows = rows.selectExpr("*", f"CASE WHEN first_of_index THEN filter(at_index, e -> index <= {upto}) END "
                                f"AS agreed")
    same = "e.egen <=> p.egen AND e.edigest <=> p.edigest"
    scored = ("transform(array_distinct(transform(agreed, e -> named_struct('egen', e.egen, 'edigest', "
              "e.edigest))), p -> named_struct('holders', size(filter(agreed, e -> " + same + ")), 'rgen', p.egen, "
              "'rdigest', p.edigest, 'holder', array_min(transform(filter(agreed, e -> " + same + "), "
              "e -> e.node))))")
    order = ("(a, b) -> CASE WHEN a.holders != b.holders THEN b.holders - a.holders "
             "WHEN NOT (a.rgen <=> b.rgen) THEN CASE WHEN a.rgen IS NULL THEN 1 WHEN b.rgen IS NULL THEN -1 "
             "WHEN a.rgen > b.rgen THEN -1 ELSE 1 END "
             "WHEN a.rdigest <=> b.rdigest THEN 0 WHEN a.rdigest IS NULL THEN -1 WHEN b.rdigest IS NULL THEN 1 "
             "WHEN a.rdigest < b.rdigest THEN -1 ELSE 1 END")
    return rows.selectExpr("*", f"CASE WHEN size(agreed) > 0 THEN try_element_at(array_sort({scored}, {order}), 1) "
                                f"END AS best")


def _held_by(node: str) -> str:
    """The final-log entries of `node` at this row's index."""
    return f"filter(at_index, e -> e.node = {node})"


def _rule_committed_never_change() -> str:
    """An entry once under any node's HWM is never replaced: not by another commit at that index, not by an
    append there in the committing generation or a newer one, not in any final log."""
    check = "committed-never-change"
    committed = entry_text("index", "first_commit.egen", "first_commit.edigest")
    recommitted = one("kind = 'c' AND conflicting AND edigest != first_commit.edigest", v(
        check, node="node", index="index", seq="seq", time="time",
        detail=fmt("%s committed %s at index %d, but %s had already committed %s there", "node",
                   entry_text("index", "egen", "edigest"), "index", "first_commit.node", committed)))
    overwritten = one("kind = 'a' AND first_commit IS NOT NULL AND edigest != first_commit.edigest "
                      "AND gen >= committed_gen", v(
        check, node="node", index="index", seq="seq", time="time",
        detail=fmt("%s wrote %s at index %d in generation %d, over the committed entry %s", "node",
                   entry_text("index", "egen", "edigest"), "index", "gen", committed)))
    lacks = v(check, node="n.node", index="index", seq="n.seq", time="n.time", detail=fmt(
        "%s's final log (%d entries) lacks the committed entry %s", "n.node", "n.held", committed))
    differs = v(check, node="n.node", index="index", seq="n.seq", time="n.time", detail=fmt(
        "%s's final log has %s at index %d instead of the committed entry %s", "n.node",
        entry_text("index", "e.egen", "e.edigest"), "index", committed))
    final_log = (f"CASE WHEN size({_held_by('n.node')}) = 0 THEN array({lacks}) ELSE transform(filter("
                 f"{_held_by('n.node')}, e -> e.edigest != first_commit.edigest), e -> {differs}) END")
    in_final_logs = (f"CASE WHEN first_of_index AND first_commit IS NOT NULL THEN flatten(transform(filter(nodes, "
                     f"n -> n.live OR index <= n.hwm), n -> {final_log})) END")
    return every(recommitted, overwritten, in_final_logs)


def _rule_acked_in_final_logs() -> str:
    """Every write_acked entry (index, digest) is in the final log of every live node."""
    check = "acked-in-final-logs"
    ack = fmt("write %s, acknowledged by %s at index %d (digest %s),", "coalesce(request, '?')", "node", "index",
              "edigest")
    missing = v(check, node="n.node", index="index", seq="n.seq", time="n.time", detail=fmt(
        "%s is missing from %s's final log (%d entries)", ack, "n.node", "n.held"))
    other = v(check, node="n.node", index="index", seq="n.seq", time="n.time", detail=fmt(
        "%s is not in %s's final log, which has %s there", ack, "n.node", entry_text("index", "e.egen", "e.edigest")))
    final_log = (f"CASE WHEN size({_held_by('n.node')}) = 0 THEN array({missing}) ELSE transform(filter("
                 f"{_held_by('n.node')}, e -> e.edigest != edigest), e -> {other}) END")
    return f"CASE WHEN kind = 'k' THEN flatten(transform(filter(nodes, n -> n.live), n -> {final_log})) END"


def _rule_logs_agree() -> str:
    """Final logs agree up to the final HWM (the highest HWM of a live node; a node dead at the end is compared up
    to its own HWM). Where they differ, the nodes that do not hold the most common entry are reported."""
    check = "logs-agree"
    beyond = one("kind = 's' AND is_final AND hwm > held", v(
        check, node="node", index="hwm", seq="seq", time="time",
        detail=fmt("%s's HWM %d is beyond the end of its final log (%d entries)", "node", "hwm", "held")))
    theirs = entry_text("index", "best.rgen", "best.rdigest")
    others = "CASE WHEN best.holders = 1 THEN best.holder ELSE format_string('%d other nodes', best.holders) END"
    short = v(check, node="n.node", index="index", seq="n.seq", time="n.time", detail=fmt(
        "%s's final log ends at %d, below the final HWM %d (%s holds %s)", "n.node", "n.held", "final_hwm", others,
        theirs))
    differs = v(check, node="n.node", index="index", seq="n.seq", time="n.time", detail=fmt(
        "at index %d (final HWM %d) %s holds %s but %s %s", "index", "final_hwm", "n.node",
        entry_text("index", "e.egen", "e.edigest"), others,
        f"CASE WHEN best.holders = 1 THEN concat('holds ', {theirs}) ELSE concat('hold ', {theirs}) END"))
    compare = (f"CASE WHEN size({_held_by('n.node')}) = 0 THEN array({short}) ELSE transform(filter("
               f"{_held_by('n.node')}, e -> e.edigest != best.rdigest OR e.egen != best.rgen), e -> {differs}) END")
    differ = (f"CASE WHEN first_of_index AND best IS NOT NULL THEN flatten(transform(filter(nodes, "
              f"n -> index <= n.upto), n -> {compare})) END")
    return every(beyond, differ)


def _rule_truncation_safe() -> str:
    """`truncated` removes only conflicting entries: none of the leader's generation at that index, none under
    the node's own HWM, none committed before. Losing an unflushed tail (reason lost-tail) is not a decision
    of the algorithm and is judged by checks 4 and 5 instead."""
    committed_at = "CASE WHEN first_commit.edigest = edigest THEN committed_at END"
    matching = "(conflicting_generation IS NOT NULL AND egen = conflicting_generation)"
    under_hwm = "(index <= hwm)"
    was_committed = f"({committed_at} < time)"
    found = (f"kind = 'x' AND (coalesce({matching}, false) OR coalesce({under_hwm}, false) "
             f"OR coalesce({was_committed}, false))")
    detail = ("concat(" + fmt("%s removed %s (reason %s): ", "node", entry_text("index", "egen", "edigest"),
                              "coalesce(reason, 'none')")
              + f", concat_ws('; ', CASE WHEN {matching} THEN "
              + fmt("the leader's entry there is of the same generation %d, so it matches", "conflicting_generation")
              + f" END, CASE WHEN {under_hwm} THEN " + fmt("index %d is under its own HWM %d", "index", "hwm")
              + f" END, CASE WHEN {was_committed} THEN " + fmt("it had been committed at t=%.2f", committed_at)
              + " END))")
    return one(found, v("truncation-safe", node="node", index="index", detail=detail, seq="seq", time="time"))


def _rule_scenario_knowledge() -> str:
    """What the grader knows of a scenario (SCENARIO_EXPECTATIONS): a value never served, the final logs and
    HWM of every live node."""
    check = "scenario"
    found = []
    for name, expect in SCENARIO_EXPECTATIONS.items():
        payloads = _payloads(expect)
        this = (f"(lower(scenario) = {q(name)} AND size(array_except(array{among(payloads)}, written)) = 0)")
        names = "map(" + ", ".join(f"{q(digest(p))}, {q(p)}" for p in payloads) + ")"
        never = among(digest(p) for p in expect["never_served"])
        found.append(one(f"{this} AND kind = 'r' AND (payload IN {among(expect['never_served'])} "
                         f"OR edigest IN {never})", v(
            check, node="node", index="index", seq="seq", time="time",
            detail=fmt("%s served %s at index %d: scenario %s says it must never be served", "node",
                       f"coalesce(try_element_at({names}, edigest), payload)", "index", q(name.upper())))))
        final = f"{this} AND kind = 's' AND is_final AND exists(finals, n -> n.node = node AND n.live)"
        wanted = "array" + among(digest(p) for p in expect["final_log"])
        shown = (f"array_join(transform(entries, e -> coalesce(try_element_at({names}, try_element_at(e, 3)), "
                 f"try_element_at(e, 3))), ', ')")
        found.append(one(f"{final} AND transform(entries, e -> try_element_at(e, 3)) != {wanted}", v(
            check, node="node", index=None, seq="seq", time="time",
            detail=fmt("%s's final log is [%s]; scenario %s expects [%s]", "node", shown, q(name.upper()),
                       q(", ".join(expect["final_log"]))))))
        found.append(one(f"{final} AND hwm != {expect['final_hwm']}", v(
            check, node="node", index="hwm", seq="seq", time="time",
            detail=fmt("%s's final HWM is %d; scenario %s expects %d", "node", "hwm", q(name.upper()),
                       str(expect["final_hwm"])))))
    return every(*found)


# ---- single events ------------------------------------------------------------------------------------------

def _rule_expectations() -> str:
    """Every `expectation` event holds."""
    detail = "concat('expectation \\'', name, '\\' failed', coalesce(concat(': ', detail), ''))"
    return one(f"type = '{EXPECTATION}' AND ok = false",
               v("scenario", node=q(CLUSTER), index=None, detail=detail, seq="seq", time="time"))


def _rule_read_gate_strict() -> str:
    """A read of an index from 1 up to the node's HWM is never refused."""
    detail = fmt("%s refused a read of index %d although its HWM was %d (%s)", "node", "index", "hwm",
                 "coalesce(reason, 'no reason given')")
    return one(f"type = '{READ_REFUSED}' AND index >= 1 AND index <= hwm",
               v("read-gate-strict", node="node", index="index", detail=detail, seq="seq", time="time"))


def _rule_wal_truncation() -> str:
    """After applying a truncation from index i, the log storage ends at i - 1."""
    def listed(name: str) -> str:
        return f"array_join(transform(coalesce({name}, CAST(array() AS ARRAY<INT>)), x -> CAST(x AS STRING)), ', ')"

    detail = fmt("%s truncated its log from index %d, but its log then ends at %d, not %d (segments left start "
                 "at [%s]; deleted [%s])", "node", "from_index", "log_end", "from_index - 1", listed("segments"),
                 listed("deleted"))
    return one(f"type = '{WAL_TRUNCATED}' AND log_end != from_index - 1",
               v("wal-truncation", node="node", index="from_index", detail=detail, seq="seq", time="time"))


def _rule_epoch_end() -> str:
    """The leader's end index for generation g is within its log, at an entry of generation g or lower, and the
    entry after it (if any) is newer than g."""
    beyond = "coalesce(end_index > log_end, false)"
    newer = "coalesce(end_generation > generation, false)"
    short = "coalesce(next_generation IS NOT NULL AND next_generation <= generation, false)"
    detail = ("concat(" + fmt("%s answered end index %d for generation %d: ", "node", "end_index", "generation")
              + f", concat_ws('; ', CASE WHEN {beyond} THEN " + fmt("its own log ends at %d", "log_end")
              + f" END, CASE WHEN {newer} THEN " + fmt("its entry there is of the newer generation %d",
                                                       "end_generation")
              + f" END, CASE WHEN {short} THEN " + fmt("its entry %d is of generation %d too, so the end is further "
                                                       "on", "end_index + 1", "next_generation")
              + " END))")
    return one(f"type = '{EPOCH_ANSWER}' AND ({beyond} OR {newer} OR {short})",
               v("epoch-end", node="node", index="end_index", detail=detail, seq="seq", time="time"))


def _rule_epoch_truncation() -> str:
    """A follower keeps its log up to the leader's end index or its own end, naming a cut only if one goes."""
    kept, outside = "coalesce(cut - 1, log_end)", "(cut IS NOT NULL AND (cut < 1 OR cut > log_end))"
    beyond, short = f"({kept} > end_index)", f"({kept} < least(end_index, log_end))"
    detail = (f"CASE WHEN {outside} THEN " + fmt("%s cut its log from index %d, but it holds indexes 1 to %d: nothing "
                                                 "is to be removed there", "node", "cut", "log_end")
              + " WHEN cut IS NULL THEN " + fmt("%s kept its whole log (it ends at %d), beyond the leader's end index "
                                                "%d", "node", "log_end", "end_index")
              + f" WHEN {beyond} THEN " + fmt("%s cut its log from index %d and keeps index %d, beyond the leader's "
                                              "end index %d", "node", "cut", kept, "end_index")
              + " ELSE " + fmt("%s cut its log from index %d and removes index %d, which the leader's log holds (it "
                               "ends at %d)", "node", "cut", "cut", "end_index") + " END")
    return one(f"type = '{EPOCH_TRUNCATION}' AND ({outside} OR {beyond} OR {short})",
               v("epoch-truncation", node="node", index="coalesce(cut, log_end)", detail=detail, seq="seq",
                 time="time"))


# The scenario's commands that wait for the cluster to advance (lab/harness/commands.py: cmd_wait, cmd_write): a
# `wait` for an HWM, a log end, logs caught up or a leader, and a write that waits to be acknowledged. One that fails
# is an `expectation` named by its line, with ok false. (`wait 0.2s` cannot fail; `wait stopped` waits for a stop.)
PROGRESS_WAITS = ("wait hwm ", "wait log_end ", "wait converged", "wait leader")


def _rule_progress() -> str:
    """The run gets as far as its scenario waits for, and a read below the serving node's HWM is served."""
    waited = " OR ".join(f"startswith(name, {q(w)})" for w in PROGRESS_WAITS)
    written = "(startswith(name, 'write ') AND NOT endswith(name, ' nowait'))"
    stuck = one(f"type = '{EXPECTATION}' AND ok = false AND ({waited} OR {written})", v(
        "progress", node=q(CLUSTER), index=None, seq="seq", time="time",
        detail="concat('the run stopped at \\'', name, '\\': the cluster did not get there', "
               "coalesce(concat(' (', detail, ')'), ''))"))
    refused = one(f"type = '{READ_REFUSED}' AND index >= 1 AND index < hwm", v(
        "progress", node="node", index="index", seq="seq", time="time",
        detail=fmt("%s refused a read of index %d, below its HWM %d (%s)", "node", "index", "hwm",
                   "coalesce(reason, 'no reason given')")))
    return every(stuck, refused)


# ---- the checks ---------------------------------------------------------------------------------------------

def _single_events(events: DataFrame) -> DataFrame:
    return events.where(f"type IN {among(SINGLE_KINDS)}")


PASSES: dict[str, Callable[[DataFrame], DataFrame]] = {
    "node": _node_timeline, "index": _index_view, "event": _single_events}

# check -> [(pass, rule), ...]
PLAN: dict[str, list[tuple[str, Callable[[], str]]]] = {
    "hwm-majority": [("node", _rule_hwm_majority)],
    "read-above-hwm": [("node", _rule_read_above_hwm)],
    "hwm-monotonic": [("node", _rule_hwm_monotonic)],
    "committed-never-change": [("index", _rule_committed_never_change)],
    "acked-in-final-logs": [("index", _rule_acked_in_final_logs)],
    "logs-agree": [("index", _rule_logs_agree)],
    "truncation-safe": [("index", _rule_truncation_safe)],
    "liveness": [("node", _rule_liveness)],
    "scenario": [("event", _rule_expectations), ("index", _rule_scenario_knowledge)],
    "read-gate-strict": [("event", _rule_read_gate_strict)],
    "wal-truncation": [("event", _rule_wal_truncation)],
    "epoch-end": [("event", _rule_epoch_end)],
    "epoch-truncation": [("event", _rule_epoch_truncation)],
    "progress": [("event", _rule_progress)],
}
assert tuple(PLAN) == tuple(r.check for r in RULES)


def checks_of(events: DataFrame, checks) -> DataFrame:
    """The violations of the given checks: each pass they need built once, with all their rules on it."""
    by_pass: dict[str, list[str]] = {}
    for check in checks:
        for name, rule in PLAN[check]:
            by_pass.setdefault(name, []).append(rule())
    parts = [_emit(PASSES[name](events), rules) for name, rules in by_pass.items()]
    return functools.reduce(DataFrame.unionByName, parts)


def all_checks(events: DataFrame) -> DataFrame:
    """Every check's violations in one DataFrame: three passes, one plan, run as one Spark job."""
    return checks_of(events, PLAN)


def _check(check: str) -> Callable[[DataFrame], DataFrame]:
    def run(events: DataFrame) -> DataFrame:
        return checks_of(events, [check])

    rule = next(r for r in RULES if r.check == check)
    run.__name__ = "check_" + check.replace("-", "_")
    run.__doc__ = f"{rule.title}: {rule.rule}"
    return run


check_hwm_majority = _check("hwm-majority")
check_read_above_hwm = _check("read-above-hwm")
check_hwm_monotonic = _check("hwm-monotonic")
check_committed_never_change = _check("committed-never-change")
check_acked_in_final_logs = _check("acked-in-final-logs")
check_logs_agree = _check("logs-agree")
check_truncation_safe = _check("truncation-safe")
check_liveness = _check("liveness")
check_scenario = _check("scenario")
check_read_gate_strict = _check("read-gate-strict")
check_wal_truncation = _check("wal-truncation")
check_epoch_end = _check("epoch-end")
check_epoch_truncation = _check("epoch-truncation")
check_progress = _check("progress")

CHECKS: tuple[tuple[str, Callable[[DataFrame], DataFrame]], ...] = tuple(
    (check, globals()["check_" + check.replace("-", "_")]) for check in PLAN)
