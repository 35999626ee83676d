"""Every trace event kind, declared once with its fields (docs/trace-format.md): the trace writer, the grader's schema
and the narration are built from these, and nobody changes an event once made."""

from __future__ import annotations

from typing import NamedTuple

# ---- field types: what a field holds, for the grader's explicit schema and for the tests ------------------------

INT, NUMBER, STR, BOOL = "int", "number", "str", "bool"
ENTRY = "entry"  # [index, generation, digest]
ENTRIES = "entries"  # a list of entries
INTS, NAMES = "ints", "names"  # a list of ints, a list of node names
REASON = "reason"  # a Reason (or, from an older trace or a student's check_read, an English sentence)
DICT, ANY = "dict", "any"

NODE, CLUSTER = "node", "cluster"  # who emits a kind: a node, or the supervisor or simulator


class Kind(NamedTuple):
    """An event kind. `fields`: field -> type, in the order a line writes them ("gen" aside); `optional`: the
    fields some lines leave out; `graded`: the grader's checks read it, and `required` are the fields they need."""

    name: str
    source: str
    fields: dict
    optional: frozenset
    graded: bool
    required: tuple


KINDS: dict[str, Kind] = {}


def _event(name: str, source: str, /, *, graded: bool = False, required: tuple = (), optional: tuple = (),
           **fields) -> str:
    assert name not in KINDS and set(required) <= set(fields) and set(optional) <= set(fields), name
    KINDS[name] = Kind(name, source, fields, frozenset(optional), graded or bool(required), tuple(required))
    return name


def _fields(**fields) -> dict:  # for a field named after a keyword ("from")
    return fields


# ---- node events ------------------------------------------------------------------------------------------------

NODE_STARTED = _event("node_started", NODE, required=("hwm",), log_end=INT, last_generation=INT, hwm=INT,
                      truncation=STR)
ELECTION_STARTED = _event("election_started", NODE, generation=INT)
PREVOTE_STARTED = _event("prevote_started", NODE, generation=INT)
PREVOTE_GRANTED = _event("prevote_granted", NODE, candidate=STR, generation=INT)
PREVOTE_DENIED = _event("prevote_denied", NODE, candidate=STR, generation=INT, reason=REASON)
VOTE_GRANTED = _event("vote_granted", NODE, candidate=STR, generation=INT)
VOTE_DENIED = _event("vote_denied", NODE, candidate=STR, generation=INT, reason=REASON)
BECAME_LEADER = _event("became_leader", NODE, generation=INT, votes=NAMES)
BECAME_FOLLOWER = _event("became_follower", NODE, generation=INT, leader=STR)
GENERATION_CHANGED = _event("generation_changed", NODE, from_generation=INT, generation=INT)
LEADER_APPEND = _event("leader_append", NODE, required=("index", "generation", "digest"), index=INT,
                       generation=INT, digest=STR, payload=STR, request=STR)
REPLICATION_SENT = _event("replication_sent", NODE, to=STR, prev_index=INT, prev_generation=INT, first=INT,
                          last=INT, hwm=INT)
REPLICATION_RECEIVED = _event("replication_received", NODE, **_fields(**{"from": STR}), prev_index=INT,
                              prev_generation=INT, first=INT, last=INT, hwm=INT)
FOLLOWER_APPEND = _event("follower_append", NODE, required=("index", "generation", "digest"), index=INT,
                         generation=INT, digest=STR, payload=STR)
LOG_PERSISTED = _event("log_persisted", NODE, index=INT, generation=INT)  # the log is on disk up to index
REPLICATION_REJECTED = _event("replication_rejected", NODE, **_fields(**{"from": STR}), prev_index=INT,
                              reason=REASON, conflict_index=INT)
TRUNCATION_REFUSED = _event("truncation_refused", NODE, from_index=INT, hwm=INT, reason=REASON)
RESPONSE_IGNORED = _event("response_ignored", NODE, follower=STR, match_index=INT, reason=REASON)
MATCH_INDEX_UPDATED = _event("match_index_updated", NODE, required=("follower", "match_index"), follower=STR,
                             match_index=INT, next_index=INT)
NEXT_INDEX_BACKED_UP = _event("next_index_backed_up", NODE, follower=STR, next_index=INT, refused_after=INT)
HWM_CHANGED = _event("hwm_changed", NODE, required=("from_hwm", "hwm", "role", "committed"), from_hwm=INT, hwm=INT,
                     role=STR, entry_generation=INT, committed=ENTRIES)
CAUGHT_UP = _event("caught_up", NODE, index=INT)
TRUNCATED = _event("truncated", NODE, required=("from_index", "removed"), from_index=INT, removed=ENTRIES,
                   reason=STR, conflicting_generation=INT, hwm=INT)  # reason: one of TRUNCATION_REASONS
EPOCH_QUERY = _event("epoch_query", NODE, generation=INT, end_index=INT)
EPOCH_ANSWER = _event("epoch_answer", NODE, required=("generation", "end_index"), generation=INT, end_index=INT,
                      log_end=INT, end_generation=INT, next_generation=INT)
EPOCH_TRUNCATION = _event("epoch_truncation", NODE, required=("end_index", "log_end"), end_index=INT, log_end=INT,
                          cut=INT)
WAL_TRUNCATED = _event("wal_truncated", NODE, required=("from_index", "log_end"), from_index=INT, log_end=INT,
                       segments=INTS, deleted=INTS)
WAL_RECOVERED = _event("wal_recovered", NODE, first_bad_index=INT, dropped_bytes=INT, reason=STR, repaired=BOOL,
                       log_end=INT, catching_up_to=INT)
WRITE_REQUESTED = _event("write_requested", NODE, request=STR, digest=STR, payload=STR)
WRITE_ACKED = _event("write_acked", NODE, required=("index", "digest"), request=STR, index=INT, generation=INT,
                     digest=STR)
WRITE_FAILED = _event("write_failed", NODE, request=STR, reason=REASON)
# A read's `request` (written since the clients' history is checked, lab.harness.history) and, for a linearizable read,
# `linearizable` true: served or refused by the leader's mark once it confirmed that it still leads.
READ_SERVED = _event("read_served", NODE, required=("index", "hwm"), optional=("request", "linearizable"), index=INT,
                     hwm=INT, entry=ENTRY, payload=STR, request=STR, linearizable=BOOL)
READ_REFUSED = _event("read_refused", NODE, required=("index", "hwm"), optional=("request", "linearizable"),
                      index=INT, hwm=INT, reason=REASON, request=STR, linearizable=BOOL)
# A linearizable read (ReadIndex, Raft thesis 6.4): the leader notes its mark, the read index, and asks its followers
# (round `round`) whether it still leads; the read is answered once a majority said so. `read_failed`: a linearizable
# read that no mark decided: asked of a node that does not lead, leadership lost, not confirmed in time, or a leader
# with no entry of its own generation committed yet.
READ_INDEX = _event("read_index_round", NODE, request=STR, index=INT, read_index=INT, round=INT)
READ_FAILED = _event("read_failed", NODE, request=STR, index=INT, reason=REASON)
LOG_SNAPSHOT = _event("log_snapshot", NODE, required=("hwm", "log_end", "entries"), hwm=INT, log_end=INT,
                      entries=ENTRIES)
NODE_STOPPED = _event("node_stopped", NODE, reason=REASON)
STUDENT_CALL = _event("student_call", NODE, optional=("wrong", "why", "uses", "step"), function=STR, inputs=STR,
                      result=STR, wrong=BOOL, why=REASON, uses=STR, step=INT)  # the explorer's replay; why: the rule
# the call broke, judged on its inputs (lab.core.judges); uses: the function whose wrong answer it was handed (exercise
# 2 is handed exercise 1's); step: the counterexample's step (from 1)

# ---- cluster events (node = "cluster") -----------------------------------------------------------------------

CLUSTER_STARTED = _event("cluster_started", CLUSTER, nodes=NAMES, truncation=STR, fsync=ANY, impl=STR)
CLUSTER_STOPPED = _event("cluster_stopped", CLUSTER)
NODE_KILLED = _event("node_killed", CLUSTER, required=("target",), optional=("lose_unsynced", "pid", "lost_entries"),
                     target=STR, lose_unsynced=BOOL, pid=INT, lost_entries=INT)
NODE_RESTARTED = _event("node_restarted", CLUSTER, required=("target",), optional=("repair",), target=STR,
                        repair=BOOL)
NODE_PAUSED = _event("node_paused", CLUSTER, required=("target",), target=STR)
NODE_RESUMED = _event("node_resumed", CLUSTER, required=("target",), target=STR)
NODE_EXITED = _event("node_exited", CLUSTER, optional=("reason", "fault", "step", "scenario"), target=STR, code=INT,
                     reason=REASON, fault=DICT, step=INT, scenario=STR)
DISK_FULL = _event("disk_full", CLUSTER, target=STR)
DISK_OK = _event("disk_ok", CLUSTER, target=STR)
FSYNC_FAIL = _event("fsync_fail", CLUSTER, target=STR)
LINK_CUT = _event("link_cut", CLUSTER, graded=True, src=STR, dst=STR)
LINK_HEALED = _event("link_healed", CLUSTER, graded=True, src=STR, dst=STR)
DELAY_SET = _event("delay_set", CLUSTER, optional=("src", "dst"), ms=NUMBER, src=STR, dst=STR)
DROP_SET = _event("drop_set", CLUSTER, optional=("src", "dst"), rate=NUMBER, src=STR, dst=STR)
SETTINGS_CHANGED = _event("settings_changed", CLUSTER)  # the settings that changed, each as a field
# `client`: the session a client write or read belongs to (a chaos run's writers and readers, a named client of the
# control API); a trace without it is one session, the run's one client.
CLIENT_WRITE = _event("client_write", CLUSTER, graded=True, optional=("digest", "target", "client"), payload=STR,
                      digest=STR, target=STR, request=STR, client=STR)
CLIENT_WRITE_FAILED = _event("client_write_failed", CLUSTER, request=STR, reason=REASON)
CLIENT_READ = _event("client_read", CLUSTER, optional=("request", "client", "linearizable"), index=INT, target=STR,
                     request=STR, client=STR, linearizable=BOOL)
# The answer a client got, when it got it (the clients' history orders operations by these lines and their requests,
# lab.harness.history): ok, who answered, the index written or read, the mark the answer gave and the digest
# written or served; `refusal` the kind (lab.core.reasons.REFUSALS) when not ok.
CLIENT_ANSWER = _event("client_answer", CLUSTER, optional=("answered_by", "index", "hwm", "refusal", "digest"),
                       request=STR, ok=BOOL, answered_by=STR, index=INT, hwm=INT, refusal=STR, digest=STR)
STEP = _event("step", CLUSTER, optional=("said",), text=STR, index=INT, said=DICT)  # said: a step with no text of
# its own (a counterexample's), as data (lab.i18n.steps.record)
EXPECTATION = _event("expectation", CLUSTER, required=("name", "ok"), name=STR, ok=BOOL, detail=REASON)
RULE_BROKEN = _event("rule_broken", CLUSTER, check=STR, target=STR, index=INT, detail=REASON, step=INT)
CLOCKS_HELD = _event("clocks_held", CLUSTER)
CLOCKS_RELEASED = _event("clocks_released", CLUSTER)

FAULT_KINDS = (NODE_KILLED, NODE_RESTARTED, NODE_PAUSED, NODE_RESUMED)  # the faults a trace replays by target

TRUNCATION_REASONS = ("conflict", "restart-hwm", "leader-epoch", "lost-tail")  # `truncated`'s reason: a word


# Each kind as the dashboard's feed counts what a frame left out ("replication requests sent: 2"), a plural name the
# catalogues translate (context "event"; lab.i18n.event_names); every kind has one, as any may be left out.
COUNTED_AS = {
    NODE_STARTED: "node starts",
    ELECTION_STARTED: "elections started",
    PREVOTE_STARTED: "pre-vote rounds started",
    PREVOTE_GRANTED: "pre-votes granted",
    PREVOTE_DENIED: "pre-votes denied",
    VOTE_GRANTED: "votes granted",
    VOTE_DENIED: "votes denied",
    BECAME_LEADER: "nodes becoming leader",
    BECAME_FOLLOWER: "nodes becoming followers",
    GENERATION_CHANGED: "generation changes",
    LEADER_APPEND: "entries appended by the leader",
    REPLICATION_SENT: "replication requests sent",
    REPLICATION_RECEIVED: "replication requests received",
    FOLLOWER_APPEND: "entries appended by followers",
    LOG_PERSISTED: "logs made durable",
    REPLICATION_REJECTED: "replication requests refused",
    TRUNCATION_REFUSED: "truncations refused",
    RESPONSE_IGNORED: "answers ignored",
    MATCH_INDEX_UPDATED: "match index updates",
    NEXT_INDEX_BACKED_UP: "next indexes moved back",
    HWM_CHANGED: "high-water mark changes",
    CAUGHT_UP: "followers caught up",
    TRUNCATED: "log truncations",
    EPOCH_QUERY: "questions about where a generation's log ends",
    EPOCH_ANSWER: "answers about where a generation's log ends",
    EPOCH_TRUNCATION: "truncations at a generation's log end",
    WAL_TRUNCATED: "write-ahead log truncations",
    WAL_RECOVERED: "write-ahead log recoveries",
    WRITE_REQUESTED: "writes requested",
    WRITE_ACKED: "writes acknowledged",
    WRITE_FAILED: "writes failed",
    READ_SERVED: "reads served",
    READ_REFUSED: "reads refused",
    READ_INDEX: "leadership checks for linearizable reads",
    READ_FAILED: "linearizable reads not answered by a mark",
    LOG_SNAPSHOT: "log snapshots",
    NODE_STOPPED: "nodes stopped",
    STUDENT_CALL: "calls of your functions",
    CLUSTER_STARTED: "cluster starts",
    CLUSTER_STOPPED: "cluster stops",
    NODE_KILLED: "nodes killed",
    NODE_RESTARTED: "nodes restarted",
    NODE_PAUSED: "nodes paused",
    NODE_RESUMED: "nodes resumed",
    NODE_EXITED: "nodes exited",
    DISK_FULL: "disks filled",
    DISK_OK: "disks freed",
    FSYNC_FAIL: "fsync failures set",
    LINK_CUT: "links cut",
    LINK_HEALED: "links healed",
    DELAY_SET: "delays set",
    DROP_SET: "message loss rates set",
    SETTINGS_CHANGED: "settings changes",
    CLIENT_WRITE: "client writes",
    CLIENT_WRITE_FAILED: "client writes failed",
    CLIENT_READ: "client reads",
    CLIENT_ANSWER: "answers to clients",
    STEP: "scenario steps",
    EXPECTATION: "expectations checked",
    RULE_BROKEN: "rules broken",
    CLOCKS_HELD: "clocks held",
    CLOCKS_RELEASED: "clocks released",
}


# ---- the four kinds a busy node makes per entry: fixed fields, a NamedTuple each --------------------------------


class Event(NamedTuple):
    """Any other event: its kind and its fields ("gen" included when a node's), in the order they are written."""

    type: str
    fields: dict


class WriteRequested(NamedTuple):
    gen: int
    request: str
    digest: str
    payload: str
    type = WRITE_REQUESTED


class LeaderAppend(NamedTuple):
    gen: int
    index: int
    generation: int
    digest: str
    payload: str
    request: str
    type = LEADER_APPEND


class WriteAcked(NamedTuple):
    gen: int
    request: str
    index: int
    generation: int
    digest: str
    type = WRITE_ACKED


class FollowerAppend(NamedTuple):
    gen: int
    index: int
    generation: int
    digest: str
    payload: str
    type = FOLLOWER_APPEND


ENTRY_EVENTS = (WriteRequested, LeaderAppend, WriteAcked, FollowerAppend)


def event_fields(event) -> dict:
    """An event's fields, "gen" included, in the order they are written."""
    return event.fields if type(event) is Event else event._asdict()
