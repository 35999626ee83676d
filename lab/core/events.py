"""Every trace event kind and every reason (a refusal, why a node stopped, what a check found), declared once with
its fields: the trace writer, the grader's schema, the narration and the catalogues are built from these.

An event kind is a name with the fields its line holds (docs/trace-format.md); a reason is a kind with an English
template whose placeholders are its fields. A `Reason` reads as its English sentence (so a trace line or a log says
it as before), and keeps its kind and values, so that a room reads it in its own language, keyed by the kind and
never by the sentence. Nobody changes an event or a reason once made.
"""

from __future__ import annotations

from string import Formatter
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
READ_SERVED = _event("read_served", NODE, required=("index", "hwm"), index=INT, hwm=INT, entry=ENTRY, payload=STR)
READ_REFUSED = _event("read_refused", NODE, required=("index", "hwm"), index=INT, hwm=INT, reason=REASON)
LOG_SNAPSHOT = _event("log_snapshot", NODE, required=("hwm", "log_end", "entries"), hwm=INT, log_end=INT,
                      entries=ENTRIES)
NODE_STOPPED = _event("node_stopped", NODE, reason=REASON)
STUDENT_CALL = _event("student_call", NODE, function=STR, inputs=STR, result=STR)  # the explorer's replay

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
CLIENT_WRITE = _event("client_write", CLUSTER, graded=True, optional=("digest", "target"), payload=STR, digest=STR,
                      target=STR, request=STR)
CLIENT_WRITE_FAILED = _event("client_write_failed", CLUSTER, request=STR, reason=REASON)
CLIENT_READ = _event("client_read", CLUSTER, optional=("request",), index=INT, target=STR, request=STR)
STEP = _event("step", CLUSTER, text=STR, index=INT)
EXPECTATION = _event("expectation", CLUSTER, required=("name", "ok"), name=STR, ok=BOOL, detail=REASON)
RULE_BROKEN = _event("rule_broken", CLUSTER, check=STR, target=STR, index=INT, detail=REASON, step=INT)
CLOCKS_HELD = _event("clocks_held", CLUSTER)
CLOCKS_RELEASED = _event("clocks_released", CLUSTER)

FAULT_KINDS = (NODE_KILLED, NODE_RESTARTED, NODE_PAUSED, NODE_RESUMED)  # the faults a trace replays by target

TRUNCATION_REASONS = ("conflict", "restart-hwm", "leader-epoch", "lost-tail")  # `truncated`'s reason: a word


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


# ---- reasons ----------------------------------------------------------------------------------------------------

REASONS: dict[str, str] = {}  # kind -> English template; its placeholders are the reason's fields


def _reason(kind: str, template: str) -> str:
    assert kind not in REASONS, kind
    REASONS[kind] = template
    return kind


def reason_fields(kind: str) -> tuple[str, ...]:
    """The fields of a reason kind: its English template's placeholders, in order."""
    return tuple(dict.fromkeys(name for _, name, _, _ in Formatter().parse(REASONS[kind]) if name))


# ---- refusals: why an Answer is not ok. Callers branch on these (Answer.refusal); its `error` is a reason ------

NO_SUCH_INDEX = "no_such_index"  # a read of an index below 1 or beyond the log end
READ_REFUSED = "read_refused"  # exercise 4 refused a read for another reason (its sentence is the student's)
TIMEOUT = "timeout"  # a write not acknowledged within the write timeout; `index` and `high_water_mark` say where
NODE_DOWN = "node_down"  # (supervisor, simulator) the node asked is not running
UNREACHABLE = "unreachable"  # (supervisor) no answer from the node: the write may or may not be committed

# a node's refusal of a client (NOT_LEADER, ABOVE_HWM and LEADERSHIP_LOST are refusals and reasons alike)
NOT_LEADER = _reason("not_leader", "not the leader: the leader is {leader}")
NO_LEADER = _reason("no_leader", "not the leader: no leader is known yet")
ABOVE_HWM = _reason("above_hwm", "not available: index {index} is above the high-water mark {hwm}")
BELOW_ONE = _reason("below_one", "not available: index {index} does not exist (the log starts at index 1)")
BEYOND_LOG_END = _reason("beyond_log_end", "not available: index {index} is beyond this node's log end {end}")
TIMEOUT_MINORITY = _reason("timeout_minority", "timeout: index {index} is on {nodes} only, not on a majority; the "
                                               "high-water mark stayed at {hwm}")
TIMEOUT_MINORITY_LATER = _reason("timeout_minority_later", "timeout: index {index} is on {nodes} only, not on a "
                                 "majority; the high-water mark stayed at {hwm} (the write may still be committed "
                                 "later)")
TIMEOUT_MAJORITY = _reason("timeout_majority", "timeout: index {index} is on {nodes} ({count} of {size}, a "
                                               "majority), yet the high-water mark stayed at {hwm}")
TIMEOUT_MAJORITY_LATER = _reason("timeout_majority_later", "timeout: index {index} is on {nodes} ({count} of {size}, "
                                 "a majority), yet the high-water mark stayed at {hwm} (the write may still be "
                                 "committed later)")
LEADERSHIP_LOST = _reason("leadership_lost", "leadership lost before the entry was committed; it may or may not "
                                             "survive")
LEADERSHIP_GIVEN_UP = _reason("leadership_given_up", "leadership given up for a new election; the entry may or may "
                                                     "not survive")
REFUSALS = (NOT_LEADER, ABOVE_HWM, NO_SUCH_INDEX, READ_REFUSED, TIMEOUT, LEADERSHIP_LOST, NODE_DOWN, UNREACHABLE)
# a node's refusal of a vote or a pre-vote
OLDER_GENERATION = _reason("older_generation", "candidate's generation {generation} is older than {current}")
LEADER_ALIVE = _reason("leader_alive", "a leader ({leader}) is alive in generation {generation}")
CATCHING_UP = _reason("catching_up", "this node was repaired and holds its log up to index {index} no more")
ALREADY_VOTED = _reason("already_voted", "already voted for {candidate} in generation {generation}")
LOG_BEHIND = _reason("log_behind", "candidate's log (last generation {last_generation}, index {last_index}) is "
                                   "behind this node's (last generation {own_generation}, index {own_index})")
NOT_ABOVE = _reason("not_above", "generation {generation} is not above this node's {current}")
# a follower's refusal of a replication request, a leader's of a response
MISSING_ENTRIES = _reason("missing_entries", "missing entries: the log ends at {end}, before index {index}")
GENERATION_MISMATCH = _reason("generation_mismatch", "index {index} holds generation {generation}, the leader's "
                                                     "holds generation {theirs}")
ENTRY_FROM_THE_FUTURE = _reason("entry_from_the_future", "entry {index} is of generation {generation}, after the "
                                                         "request's own generation {current}")
COMMITTED_WOULD_GO = _reason("committed_would_go", "a committed entry would be removed")
TRUNCATION_BELOW_HWM = _reason("truncation_below_hwm", "truncating from index {index} would remove entries at or "
                                                       "below this node's high-water mark {hwm}")
MATCH_BEYOND_LOG_END = _reason("match_beyond_log_end", "a match index beyond this leader's log end {end}")
# what a scenario's expectation found
NODE_SAYS = _reason("node_says", "{node}: {answer}")
SERVED = _reason("served", "served {payload}")


class Reason(str):
    """A reason as its kind and values; reads as its English sentence. A value may be a Reason itself, or a list
    of node names (said "A, B and C")."""

    def __new__(cls, kind: str, **values):
        self = super().__new__(cls, english(kind, values))
        self.kind, self.values = kind, values
        return self

    def as_record(self) -> dict:
        """The reason as JSON-able data: its kind and values (a value that is a reason, as its record)."""
        return {"kind": self.kind, **{k: v.as_record() if isinstance(v, Reason) else v
                                      for k, v in self.values.items()}}

    def __reduce__(self):  # copies and pickles keep the kind
        return (_rebuild, (self.kind, self.values))


class Reasons(str):
    """Reasons (or plain values) said one after another, joined by `sep`; reads as the English of each."""

    def __new__(cls, items, sep: str = "; "):
        items = list(items)
        self = super().__new__(cls, sep.join(str(item) for item in items))
        self.items, self.sep = items, sep
        return self

    def __reduce__(self):
        return (type(self), (self.items, self.sep))


def _rebuild(kind: str, values: dict) -> Reason:
    return Reason(kind, **values)


def english(kind: str, values: dict) -> str:
    return REASONS[kind].format(**{k: names(v) if isinstance(v, (list, tuple)) else v for k, v in values.items()})


def names(nodes) -> str:
    """Node names as a sentence says them: "A", "A and B", "A, B and C"."""
    nodes = list(nodes)
    return " and ".join([", ".join(nodes[:-1]), nodes[-1]] if len(nodes) > 1 else nodes) or "no node"


def reason_from_record(record) -> Reason | None:
    """The Reason a record (`Reason.as_record`) describes, or None when it is not one this lab declares."""
    if not isinstance(record, dict) or record.get("kind") not in REASONS:
        return None
    values = {k: reason_from_record(v) or v if isinstance(v, dict) else v
              for k, v in record.items() if k != "kind"}
    if set(values) != set(reason_fields(record["kind"])):
        return None
    try:
        return Reason(record["kind"], **values)
    except (TypeError, ValueError):  # a list of names that holds something else
        return None
