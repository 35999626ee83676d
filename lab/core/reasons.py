"""Every reason (a refusal, why a node stopped, what a check found), declared once as a kind with an English template
whose placeholders are its fields: a `Reason` reads as that sentence and keeps its kind and values, for the catalogues."""

from __future__ import annotations

from string import Formatter

from lab.core.events import KINDS, READ_REFUSED, REASON, TRUNCATION_REASONS


# ---- reasons ----------------------------------------------------------------------------------------------------

REASONS: dict[str, str] = {}  # kind -> English template; its placeholders are the reason's fields
# A sentence whose words follow its values is declared with its variants, each a whole sentence of its own kind,
# chosen by the values when the Reason is made (a select, the same in every language, as ICU's =1 and Fluent's
# variants): ONE[kind] = (field, kind said when that count is 1); SEVERAL[kind] = kind said of two nodes or more;
# NONE[kind] = kind said of no node at all (its sentence says so in words, so it has no `nodes` field).
ONE: dict[str, tuple[str, str]] = {}
SEVERAL: dict[str, str] = {}
NONE: dict[str, str] = {}


def _reason(kind: str, template: str, *, one: tuple[str, str] | None = None, several: str | None = None,
            none: str | None = None) -> str:
    """Declare a reason. `one`: (field, the sentence when that count is 1); `several`: the sentence when its
    `nodes` are more than one; `none`: the sentence when its `nodes` are an empty list."""
    assert kind not in REASONS, kind
    REASONS[kind] = template
    if one:
        ONE[kind] = (one[0], _reason(kind + "_one", one[1]))
    if several:
        SEVERAL[kind] = _reason(kind + "_several", several)
    if none:
        NONE[kind] = _reason(kind + "_none", none)
    return kind


def variant(kind: str, values: dict) -> str:
    """The kind whose sentence fits the values: the one for a count of 1, for several nodes or for none, else
    `kind`."""
    if kind in ONE and count_of(values.get(ONE[kind][0])) == 1:
        return ONE[kind][1]
    nodes = values.get("nodes")
    if kind in SEVERAL and isinstance(nodes, (list, tuple)) and len(nodes) > 1:
        return SEVERAL[kind]
    if kind in NONE and isinstance(nodes, (list, tuple)) and not nodes:
        return NONE[kind]
    return kind


def count_of(value) -> int | None:
    """What a variant counts in a value: the items of a list, else the number (None: not a count)."""
    if isinstance(value, (list, tuple)):
        return len(value)
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def reason_fields(kind: str) -> tuple[str, ...]:
    """The fields of a reason kind: its English template's placeholders, in order."""
    return tuple(dict.fromkeys(name for _, name, _, _ in Formatter().parse(REASONS[kind]) if name))


# ---- refusals: why an Answer is not ok. Callers branch on these (Answer.refusal); its `error` is a reason ------

NO_SUCH_INDEX = "no_such_index"  # a read of an index below 1 or beyond the log end
# READ_REFUSED (the event kind's name): exercise 4 refused a read for another reason (its sentence is the student's)
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
# a linearizable read's (ReadIndex): refused with NOT_LEADER by a node that does not lead (its router follows the hint),
# GENERATION_UNCOMMITTED by a new leader whose mark may still lag, TIMEOUT or LEADERSHIP_LOST while it confirms
GENERATION_UNCOMMITTED = _reason("generation_uncommitted", "not yet: leader {leader} has committed no entry of its "
                                 "generation {generation}, so its high-water mark {hwm} may be behind what an earlier "
                                 "leader acknowledged; the next write commits one")
READ_UNCONFIRMED = _reason("read_unconfirmed", "timeout: leader {leader} could not confirm that it still leads: only "
                           "{nodes} answered, not a majority of {size}")
READ_LEADERSHIP_LOST = _reason("read_leadership_lost", "leadership lost before the read was confirmed: ask the new "
                                                       "leader")
REFUSALS = (NOT_LEADER, ABOVE_HWM, NO_SUCH_INDEX, READ_REFUSED, TIMEOUT, LEADERSHIP_LOST, NODE_DOWN, UNREACHABLE,
            GENERATION_UNCOMMITTED)
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
NO_MODULE = _reason("no_module", "cannot import implementation {name}: there is no module named {module}")
# an implementation that does not offer what lab/core/interface.py names (lab.core.impl.load)
IMPL_LACKS = _reason("impl_lacks", "implementation {name} does not define {functions} (lab/core/interface.py lists "
                                   "them); to take only the functions it defines, write --impl {module}:{defined}",
                     one=("functions", "implementation {name} does not define {functions} (lab/core/interface.py "
                                       "lists the functions); to take only the functions it defines, write --impl "
                                       "{module}:{defined}"))
IMPL_DEFINES_NONE = _reason("impl_defines_none", "implementation {name} defines none of the functions that "
                                                 "lab/core/interface.py lists")
UNKNOWN_FUNCTIONS = _reason("unknown_functions", "--impl {spec} names functions the lab does not have: {unknown}; "
                                                 "the lab's are {known}",
                            one=("unknown", "--impl {spec} names a function the lab does not have: {unknown}; the "
                                            "lab's are {known}"))
NO_ANSWER_WITHIN = _reason("no_answer_within", "timeout: no answer within {seconds}s")
ANSWER_AFTER_SYNC = _reason("answer_after_sync", "no answer yet: {node} answers once its write-ahead log is synced")
NOT_WRITTEN_YET = _reason("not_written_yet", "no answer: node {node} stopped because {function} is not written yet "
                                             "(it raises NotImplementedError)")
NODE_SAYS = _reason("node_says", "{node}: {answer}")
FORWARDED_SAYS = _reason("forwarded_says", "{node} sent the read on to the leader {leader}: {answer}")
STALE_READ_OF = _reason("stale_read_of", "{node} refused index {index} with its mark at {hwm} after {acked_by} had "
                                         "acknowledged it")
NO_STALE_READ = _reason("no_stale_read", "no stale read")
NOT_LINEARIZABLE_AT = _reason("not_linearizable_at", "not linearizable at indexes {indexes}",
                              one=("count", "not linearizable at index {indexes}"))
LINEARIZABLE_PARTS = _reason("linearizable_parts", "linearizable ({count} indexes checked)",
                             one=("count", "linearizable (1 index checked)"))
SERVED = _reason("served", "served {payload}")

# the supervisor's answers and errors (lab/processes): a write or read it could not route, a fault it could not set
WRITE_NOT_ACKED = _reason("write_not_acked", "timeout: the write was not acknowledged within {seconds}s ({why})")
NODE_SILENT = _reason("node_silent", "timeout: node {node} did not answer within {seconds}s; the write may or may "
                                     "not be committed")
CONNECTION_LOST = _reason("connection_lost", "connection lost: node {node} did not answer ({error}); the write may "
                                             "or may not be committed")
NO_ANSWER = _reason("no_answer", "node {node} did not answer: {error}")
CONNECTION_CLOSED = _reason("connection_closed", "node {address} closed the connection")
SENT_NOTHING = _reason("sent_nothing", "node {address} sent nothing in time")
NODE_UNREACHABLE = _reason("node_unreachable", "node {node} is unreachable ({error})")
NODE_IS = _reason("node_is", "node {node} is {state}")
NODE_ALREADY = _reason("node_already", "node {node} is already {state}")
CANNOT_PAUSE = _reason("cannot_pause", "node {node} is {state}, not running: only a running node can pause")
NOT_PAUSED = _reason("not_paused", "node {node} is {state}, not paused")
NOT_RUNNING = _reason("not_running", "node {node} is {state}, not running")
NO_NODE_RUNNING = _reason("no_node_running", "no node is running")
CLUSTER_HAS_STOPPED = _reason("cluster_has_stopped", "the cluster has stopped")
FAULT_NOT_TAKEN = _reason("fault_not_taken", "node {node} did not take the fault: {error}")
RESUME_FIRST = _reason("resume_first", "node {node} is paused: resume it first (a paused node takes no requests)")
# why a node's disk stopped it (lab/ports/disk_faults.py): `where` is one of WHERE, `os_error` one of OS_ERRORS
FSYNC_FAILED = _reason("fsync_failed", "fsync failed: {where} ({os_error})")
DISK_FULL_AT = _reason("disk_full_at", "disk full: {where} ({os_error})")
DISK_ERROR = _reason("disk_error", "disk error: {where} ({os_error})")
DISK_READ_ONLY = _reason("disk_read_only", "disk read-only: {where} ({os_error})")
DISK_FULL_EXIT = _reason("disk_full_exit", "disk full (exit code {code}; see its node.log)")
FSYNC_FAILED_EXIT = _reason("fsync_failed_exit", "fsync failed (exit code {code}; see its node.log)")
DISK_ERROR_EXIT = _reason("disk_error_exit", "disk error (exit code {code}; see its node.log)")
STOPPED_BECAUSE = _reason("stopped_because", "{node} stopped: {why}")
NODE_STOPPED_BECAUSE = _reason("node_stopped_because", "node {node} stopped: {why}")
NODE_STOPPED_SEE_LOG = _reason("node_stopped_see_log", "node {node} stopped; its node.log says why")
# what a scenario's step found or why it stopped (lab/harness/scenario.py)
LEADER_IS = _reason("leader_is", "leader is {leader}")
REMOVED_ENTRIES = _reason("removed_entries", "{node} removed {entries} ({reason})")
ENTRY_AT = _reason("entry_at", "index {index} (generation {generation})")
REMOVED_FROM = _reason("removed_from", "{node} removed from {index} ({reason})")
NO_TRUNCATION = _reason("no_truncation", "no truncation")
SERVED_AT = _reason("served_at", "{node} served it at index {index}")
ACKED_WRITES = _reason("acked_writes", "{count} acknowledged writes, each held by every running node",
                       one=("count", "{count} acknowledged write, held by every running node"))
ACKED_WRITES_MISSING = _reason("acked_writes_missing", "{count} acknowledged writes, and running nodes lack some: "
                                                       "{missing}",
                               one=("count", "{count} acknowledged write, and a running node lacks it: {missing}"))
LACKS_INDEX = _reason("lacks_index", "{node} lacks index {index}")
# a wait that timed out, one whole sentence per thing waited for (lab/harness/commands.py cmd_wait)
WAITED_LEADER = _reason("waited_leader", "waited {seconds} s for a leader; none was elected")
WAITED_LEADER_AMONG = _reason("waited_leader_among", "waited {seconds} s for {nodes} to be elected leader; it was not",
                              several="waited {seconds} s for a leader among {nodes}; none of them was elected")
WAITED_HWM = _reason("waited_hwm", "waited {seconds} s for the high-water mark of {nodes} to reach {count}; it did not",
                     several="waited {seconds} s for the high-water marks of {nodes} to reach {count}; they did not")
WAITED_LOG_END = _reason("waited_log_end", "waited {seconds} s for the log of {nodes} to reach index {count}; it did "
                                           "not",
                         several="waited {seconds} s for the logs of {nodes} to reach index {count}; they did not")
WAITED_WHOLE_LOG = _reason("waited_whole_log", "waited {seconds} s for every live node to hold the leader's whole log, "
                                               "committed; they did not")
WAITED_STOP = _reason("waited_stop", "waited {seconds} s for {nodes} to stop on its own; it did not",
                      several="waited {seconds} s for {nodes} to stop on their own; they did not")
ACKED_AT = _reason("acked_at", "{node} acknowledged it at index {index}")
NO_LEADER_FOR_STEP = _reason("no_leader_for_step", "no leader when the step needed one")
WRITE_NOT_ACKNOWLEDGED = _reason("write_not_acknowledged", "write {payload} was not acknowledged: {error}")
AT_STEP = _reason("at_step", "step {step}: {error}")
# A script that cannot be read or run as written (lab.harness.script, lab.harness.commands)
NO_SCENARIO = _reason("no_scenario", "no scenario {name}; available: {available}")
NO_SCRIPT_FILE = _reason("no_script_file", "there is no script file {path}")
SCRIPT_AT_LINE = _reason("script_at_line", "{script} line {line}: {error}")
SCRIPT_STEP_FORM = _reason("script_step_form", '{script} line {line}: write a step as: step "what happens and why"')
SCRIPT_BAD_HEADER = _reason("script_bad_header", "{script} line {line}: bad header {header}")
SCRIPT_BEFORE_STEP = _reason("script_before_step", "{script} line {line}: {command} before the first step")
SCRIPT_UNKNOWN = _reason("script_unknown", "{script} line {line}: unknown command {command} (known: {known})")
SCRIPT_NO_STEPS = _reason("script_no_steps", "{script}: no steps")
NO_NODE_NAMED = _reason("no_node_named", "no node {node}")
NO_NODE_IN_CLUSTER = _reason("no_node_in_cluster", "no node {node} in this cluster (nodes: {nodes})",
                             none="no node {node} in this cluster (nodes: none)")
LINE_CUT_FORM = _reason("line_cut_form", "line {line}: write a cut as A->B (one way) or A<->B (both ways)")
LINE_UNKNOWN_WAIT = _reason("line_unknown_wait", "line {line}: unknown wait {what}")
LINE_ASK_FORM = _reason("line_ask_form", "line {line}: write a question as `ask hwm on A`, `ask entries on A`, "
                                         "`ask read 4 on A` or `ask leader`")
LINE_ASK_INDEX = _reason("line_ask_index", "line {line}: `ask read` takes an index from 1")
LINE_UNKNOWN_EXPECT = _reason("line_unknown_expect", "line {line}: unknown expectation {what}")
LINE_NEEDS_MANUAL = _reason("line_needs_manual", "line {line}: {command} needs the header `network manual`")
LINE_CANNOT_NOW = _reason("line_cannot_now", "line {line}: {command} cannot be done in this state")
# a safety rule broken (lab/core/invariants.py)
COMMITTED_CHANGED = _reason("committed_changed", "committed entry at index {index} changed: {other} committed "
                            "generation {generation} ({digest}), {node} later committed generation {current} "
                            "({digest2})")
TWO_LEADERS = _reason("two_leaders", "two leaders in generation {generation}: {other} and {node}")
SERVED_ABOVE_HWM = _reason("served_above_hwm", "{node} served index {index} above its high-water mark {hwm}")
TRUNCATED_COMMITTED = _reason("truncated_committed", "{node} truncated committed index {index} (generation "
                                                     "{generation})")
HOLDS_OTHER_GENERATION = _reason("holds_other_generation", "{node} holds generation {generation} at committed index "
                                                           "{index}, committed as generation {current}")
LOGS_DISAGREE = _reason("logs_disagree", "{other} and {node} disagree at index {index} below both high-water marks "
                                         "({hwm}, {hwm2})")
# a rule of the grader broken (lab/core/monitor.py), as the explorer, chaos and `expect rules` find it
RULE_OLDER_ENTRY = _reason("rule_older_entry", "leader {leader} raised its high-water mark to {index} in generation "
                           "{generation}, but entry {index} is of generation {entry_generation}: an older generation's "
                           "entry is only committed by committing a newer one after it")
# (a majority of disks: what survives a power cut; a leader's entry still being synced is in its log, not yet held)
RULE_MINORITY = _reason("rule_minority", "leader {leader} raised its high-water mark to {index} in generation "
                        "{generation}, but index {index} is on the disks of {nodes} only: {holders} of {size} nodes "
                        "(a majority is {majority})",
                        one=("holders", "leader {leader} raised its high-water mark to {index} in generation "
                                        "{generation}, but index {index} is on the disk of {nodes} only: {holders} of "
                                        "{size} nodes (a majority is {majority})"))
RULE_HWM_BACK = _reason("rule_hwm_back", "{node}'s high-water mark moved back from {before} to {after}")
RULE_ACKED_LOST = _reason("rule_acked_lost", "the write acknowledged at index {index} is lost: {node} committed "
                          "another entry there (generation {generation})")
RULE_COMMITTED_CHANGED = _reason("rule_committed_changed", "index {index} was committed as generation {was} (by "
                                 "{first}); {node} now holds generation {now} there")
RULE_REFUSED_AT_OR_BELOW = _reason("rule_refused_at_or_below", "{node} refused index {index}, at or below its "
                                   "high-water mark {hwm}")
RULE_REMOVED_SAME_GENERATION = _reason("rule_removed_same_generation", "{node} removed index {index} of generation "
                                       "{generation}, the same generation as the leader's entry there")
RULE_REMOVED_COMMITTED = _reason("rule_removed_committed", "{node} removed index {index}, already committed")
RULE_REMOVED_ACKED = _reason("rule_removed_acked", "{node} removed index {index}, already committed: a write "
                             "acknowledged to its client")
RULE_WAL_CUT = _reason("rule_wal_cut", "{node}'s log storage truncated from index {index} but its log ends at "
                       "{log_end}")
RULE_EPOCH_END = _reason("rule_epoch_end", "leader {node} answered {index} as the end of generation {generation} in "
                         "its log")
RULE_EPOCH_CUT = _reason("rule_epoch_cut", "{node} was told the leader's log ends at {end} (its own ends at {log_end}) "
                         "and cut at {cut}")
RULE_HWM_BEYOND_LOG = _reason("rule_hwm_beyond_log", "{node}'s high-water mark {index} is beyond its log end "
                              "{log_end}")
RULE_LOGS_DISAGREE = _reason("rule_logs_disagree", "{a} and {b} disagree at index {index}, below both high-water "
                             "marks")
RULE_NAMED = _reason("rule_named", "{rule}: {detail}")
RULE_BROKEN_AT = _reason("rule_broken_at", "step {step}: rule {rule} broken: {detail}")
# why one call of a student's function broke its exercise's rule (lab/core/judges.py), said after the call
# (exercises 1 and 2 are judged on the match indexes they are handed: what the leader believes each node holds, which
# the nodes' own logs may have passed since; a sentence says which it is about)
HWM_NOT_HELD = _reason("hwm_not_held", "only {holders} of the {size} match indexes reach index {index} (a majority "
                                       "is {majority})",
                      one=("holders", "only {holders} of the {size} match indexes reaches index {index} (a majority "
                                      "is {majority})"))
HWM_NOT_LARGEST = _reason("hwm_not_largest", "{holders} of the {size} match indexes reach index {index} (a majority "
                                             "is {majority}): the high-water mark is at least {index}",
                          one=("holders", "{holders} of the {size} match indexes reaches index {index} (a majority "
                                          "is {majority}): the high-water mark is at least {index}"))
ARGUMENT_CHANGED = _reason("argument_changed", "it changed its argument from {before} to {after}")
HWM_MOVED_BACK = _reason("hwm_moved_back", "the high-water mark was {hwm}: it never moves back")
MATCH_NOT_RECORDED = _reason("match_not_recorded", "{follower} acknowledged {acknowledged} with a match index of "
                                                   "{before}, which became {after}, not the larger of the two")
OTHER_MATCH_CHANGED = _reason("other_match_changed", "it changed the match index of {node}, which did not answer")
HWM_OLDER_GENERATION = _reason("hwm_older_generation", "entry {index} is of generation {entry_generation}, not the "
                                                       "leader's generation {generation}")
HWM_NOT_ADVANCED = _reason("hwm_not_advanced", "{holders} of the {size} match indexes reach index {index}, of the "
                                               "leader's generation {generation} (a majority is {majority}): the "
                                               "high-water mark reaches it",
                           one=("holders", "{holders} of the {size} match indexes reaches index {index}, of the "
                                           "leader's generation {generation} (a majority is {majority}): the "
                                           "high-water mark reaches it"))
ACCEPTED_WITHOUT_PREV = _reason("accepted_without_prev", "the log does not hold the request's previous entry (index "
                                                         "{index}, generation {generation}): it must refuse")
REFUSED_WITH_PREV = _reason("refused_with_prev", "the log holds the request's previous entry (index {index}, "
                                                 "generation {generation}): it must accept")
CONFLICT_INDEX_OUTSIDE = _reason("conflict_index_outside", "it asks the leader to retry from index {conflict}, not "
                                                           "within 1 to {most}")
MATCH_NOT_REQUEST_END = _reason("match_not_request_end", "it answered match index {got}, but the request's entries "
                                                         "end at index {end}")
REMOVED_MATCHING = _reason("removed_matching", "it removes index {index} (generation {generation}), which the "
                                               "request does not contradict")
KEPT_CONFLICTING = _reason("kept_conflicting", "it keeps index {index} of generation {generation}, but the leader's "
                                               "entry there is of generation {theirs}")
APPEND_NOT_AFTER = _reason("append_not_after", "it appends index {index}, but the log then ends at {end}")
LOG_LACKS_ENTRY = _reason("log_lacks_entry", "the log would not hold the request's entry {index} (generation "
                                             "{generation})")
SERVED_BELOW_ONE = _reason("served_below_one", "it serves index {index}, which does not exist (the log starts at "
                                               "index 1)")
SERVED_ABOVE = _reason("served_above", "it serves index {index}, above the high-water mark {hwm}")
REFUSED_AT_OR_BELOW = _reason("refused_at_or_below", "it refuses index {index}, at or below the high-water mark "
                                                     "{hwm}")
PLAN_REMOVES = _reason("plan_removes", "the plan removes index {index}, before the truncation point {cut}")
PLAN_KEEPS = _reason("plan_keeps", "the plan keeps index {index}, at or after the truncation point {cut}")
EPOCH_END_OUTSIDE = _reason("epoch_end_outside", "the leader's log ends at {log_end}: index {index} cannot end "
                                                 "generation {generation}")
EPOCH_END_NEWER = _reason("epoch_end_newer", "entry {index} is of generation {entry_generation}, newer than "
                                             "generation {generation}")
EPOCH_END_SHORT = _reason("epoch_end_short", "entry {index} is of generation {entry_generation}, not newer than "
                                             "generation {generation}: the log holds more of it")
EPOCH_CUT_OUTSIDE = _reason("epoch_cut_outside", "the log holds indexes 1 to {log_end}: a cut at {cut} is not one of "
                                                 "them (None keeps the whole log)")
EPOCH_KEEPS_BEYOND = _reason("epoch_keeps_beyond", "it keeps index {index}, beyond the leader's end index {end}")
EPOCH_REMOVES_HELD = _reason("epoch_removes_held", "it removes index {index}, which the leader's log holds (it ends "
                                                   "at {end})")
NOT_A_TRACE = _reason("not_a_trace", "{dir} is not a trace directory: trace.json is missing")
TRACE_NOT_JSON = _reason("trace_not_json", "{path}: not valid JSON ({error})")
NOT_OUR_TRACE = _reason("not_our_trace", "{path}: not an HWM Lab trace (format {format})")
TRACE_TOO_NEW = _reason("trace_too_new", "{path}: trace format version {version} is newer than this lab understands "
                                         "({understood}); upgrade hwm-lab")
WRONG_CALL = _reason("wrong_call", "{function}({inputs}) returned {result}: {why}")
# what a node did in the step of a call of the student's (lab.explore.explain): said from the run's own states
DID_RAISE_HWM = _reason("did_raise_hwm", "{node} raised its high-water mark from {before} to {after}, and its "
                                         "entries up to index {after} are held by {nodes}: {holders} of {size} nodes",
                        one=("holders", "{node} raised its high-water mark from {before} to {after}, and its entries "
                                        "up to index {after} are held by {nodes} alone: {holders} of {size} nodes"))
DID_KEEP_HWM = _reason("did_keep_hwm", "{node} kept its high-water mark at {hwm}")
DID_HOLD = _reason("did_hold", "{node}'s log held {entries}")
DID_HOLD_NOTHING = _reason("did_hold_nothing", "{node}'s log held no entry")
DID_SERVE = _reason("did_serve", "{node} served index {index} to the client, with its high-water mark at {hwm}")
DID_REFUSE = _reason("did_refuse", "{node} refused index {index}: {reason}")
DID_END_STORAGE = _reason("did_end_storage", "{node}'s log storage ended at index {log_end}")
DID_ANSWER_EPOCH = _reason("did_answer_epoch", "{node} answered that its log ends at {end} for generation "
                                               "{generation}")
DID_CUT = _reason("did_cut", "{node} cut its log from index {cut}, and it ends at {log_end}")
DID_KEEP_LOG = _reason("did_keep_log", "{node} kept its whole log, which ends at {log_end}")
DID_STOP = _reason("did_stop", "{node} stopped: {why}")
CLUSTER_SIZE = _reason("cluster_size", "a cluster has 1 to {most} nodes, not {count}")  # a command's --nodes
DELAY_RANGE = _reason("delay_range", "a delay is 0 to {most} ms, not {ms}")  # --delay-ms, `delay`, the control API
RATE_RANGE = _reason("rate_range", "a drop rate is between 0 and 1, not {rate}")
# what the control API refuses in a request, whatever the cluster's state (HTTP 400)
API_NOT_A_NUMBER = _reason("api_not_a_number", "{name} is not a number the control API takes")
API_WHOLE_NUMBER = _reason("api_whole_number", "{name} must be a whole number from {low} to {high}, not {value}")
API_SECONDS = _reason("api_seconds", "{name} must be more than 0 and at most {high} seconds, not {value}")
API_TEXT = _reason("api_text", "{name} must be a string, not {value}")
API_INTEGER = _reason("api_integer", "{name} must be an integer, not {value}")
API_YES_NO = _reason("api_yes_no", "{name} must be true or false, not {value}")
API_CLIENT_NAME = _reason("api_client_name", "client must be 1 to 40 letters, digits, dots, dashes or underscores, "
                                             "not {value}")
API_CONTENT_LENGTH = _reason("api_content_length", "Content-Length is not a number")
API_BODY_SHORT = _reason("api_body_short", "the body ended after {got} of {length} bytes")
API_BODY_DEEP = _reason("api_body_deep", "the request body nests deeper than {most} levels")
API_BODY_NOT_JSON = _reason("api_body_not_json", "the request body is not JSON")
API_BODY_NOT_OBJECT = _reason("api_body_not_object", "the request body must be a JSON object")
API_NOTE_TYPE = _reason("api_note_type", "a note needs a type")
LINK_ONE_NODE = _reason("link_one_node", "a link joins two different nodes")
LINK_DELAY_ENDS = _reason("link_delay_ends", "a per-link delay needs both src and dst")
LINK_DROP_ENDS = _reason("link_drop_ends", "a per-link drop rate needs both src and dst")
UNKNOWN_SETTINGS = _reason("unknown_settings", "unknown settings {names}; known: {known}")
# the control API of a cluster, as its client (the CLI, the dashboard, the scenario driver) meets it
CONTROL_UNREACHABLE = _reason("control_unreachable", "the control API at {url} is not reachable: no cluster answers "
                                                     "there ({error})")
CONTROL_SLOW = _reason("control_slow", "the control API at {url} did not answer {request} within {seconds}s")
CONTROL_GONE = _reason("control_gone", "the control API at {url} went away: {error}")
CONTROL_NOT_JSON = _reason("control_not_json", "{request}: not a JSON answer (HTTP {status})")
CONTROL_NOT_ANSWER = _reason("control_not_answer", "{request}: not an answer of the control API (HTTP {status})")
CONTROL_FAILED = _reason("control_failed", "{request} failed with HTTP {status}")
# why `hwm-lab up` could not start its cluster
OTHER_NODES_RUN = _reason("other_nodes_run", "{dir} holds a run of nodes {held}, not {wanted}: start fresh (--fresh "
                                             "wipes it) or choose another directory")
EXITED_STARTING = _reason("exited_starting", "node {node} exited with code {code} while starting: {log}")
NOT_LISTENING = _reason("not_listening", "node {node} was not listening within {seconds} s: {log}")

# Fields whose values are words of the lab, said in the room's language (the catalogue's context is the field's
# name); and fields whose values are fixed phrases of the catalogue. Any other value is data, never translated.
WORDS = {
    "state": ("running", "killed", "paused", "exited", "stopped", "starting"),
    "spec": ("all", "leader", "last-killed"),
    "reason": TRUNCATION_REASONS,
}
WHERE = ("fsync of the write-ahead log", "fsync of the write-ahead log's directory", "appending to the write-ahead log",
         "writing back the write-ahead log", "saving the generation and vote", "checkpointing the high-water mark",
         "writing the trace", "writing the boot counter", "setting aside space for its exit reason", "a write to disk")
OS_ERRORS = ("No space left on device", "Input/output error", "Read-only file system", "Disk quota exceeded")  # what
# a disk error is called (lab.ports.disk_faults picks one by errno: the C library's own words stay in node.log)
PHRASES = {"where": WHERE, "os_error": OS_ERRORS}


class Reason(str):
    """A reason as its kind and values; reads as its English sentence. A value may be a Reason itself, or a list
    of node names (said "A, B and C")."""

    def __new__(cls, kind: str, **values):
        kind = variant(kind, values)
        if kind in NONE.values():  # "(nodes: none)" says the empty list in words: it is no field of that sentence
            values.pop("nodes", None)
        self = super().__new__(cls, english(kind, values))
        self.kind, self.values = kind, values
        return self

    def as_record(self) -> dict:
        """The reason as JSON-able data: its kind and values (a value that is a reason, as its record)."""
        return {"kind": self.kind, **{k: record_of(v) for k, v in self.values.items()}}

    def __reduce__(self):  # copies and pickles keep the kind
        return (_rebuild, (self.kind, self.values))


class Reasons(str):
    """Reasons (or plain values) said one after another, joined by `sep`; reads as the English of each. `listed`:
    they are items of one list ("index 4, index 5"), which Chinese joins with 、, not with the comma of clauses."""

    def __new__(cls, items, sep: str = "; ", listed: bool = False):
        items = list(items)
        self = super().__new__(cls, sep.join(str(item) for item in items))
        self.items, self.sep, self.listed = items, sep, listed
        return self

    def __reduce__(self):
        return (type(self), (self.items, self.sep, self.listed))


def _rebuild(kind: str, values: dict) -> Reason:
    return Reason(kind, **values)


def english(kind: str, values: dict) -> str:
    return REASONS[kind].format(**{k: names(v) if isinstance(v, (list, tuple)) else f"{v:g}" if isinstance(v, float) else v
                              for k, v in values.items()})


def names(nodes) -> str:
    """Node names as a sentence says them: "A", "A and B", "A, B and C"."""
    nodes = list(nodes)
    return " and ".join([", ".join(nodes[:-1]), nodes[-1]] if len(nodes) > 1 else nodes) or "no node"


def reason_from_record(record) -> Reason | None:
    """The Reason a record (`Reason.as_record`) describes, or None when it is not one this lab declares."""
    if not isinstance(record, dict) or record.get("kind") not in REASONS:
        return None
    values = {k: said_again(v) or v if isinstance(v, dict) else v for k, v in record.items() if k != "kind"}
    if set(values) != set(reason_fields(record["kind"])):
        return None
    try:
        return Reason(record["kind"], **values)
    except (TypeError, ValueError):  # a list of names that holds something else
        return None


def because(exc: BaseException):
    """Why an exception was raised: the Reason it was raised with, else its message."""
    first = exc.args[0] if len(exc.args) == 1 else None
    return first if isinstance(first, (Reason, Reasons)) else str(exc)


def record_of(value):
    """A reason (or reasons) as JSON-able data, for a trace line or an answer; any other value as it is."""
    if isinstance(value, Reason):
        return value.as_record()
    if isinstance(value, Reasons):
        listed = {"listed": True} if value.listed else {}  # (only when set: older traces' records stay as they were)
        return {"all": [record_of(item) for item in value.items], "sep": value.sep, **listed}
    return value


def said_again(record):
    """The Reason or Reasons a record (record_of) describes; None when it describes none this lab declares."""
    if isinstance(record, dict) and isinstance(record.get("all"), list) and isinstance(record.get("sep"), str):
        return Reasons([said_again(item) or item if isinstance(item, dict) else item for item in record["all"]],
                       record["sep"], record.get("listed") is True)
    return reason_from_record(record)


# ---- a trace line's reasons: the English in its fields, and their kinds and values in `because` -----------------

BECAUSE = "because"  # {field: record} for the fields of a line that hold a reason (docs/trace-format.md)
REASON_FIELDS = {name: tuple(f for f, type_ in kind.fields.items() if type_ == REASON) for name, kind in KINDS.items()
                 if REASON in kind.fields.values()}


def because_of(kind: str, fields: dict) -> dict | None:
    """What a line of `kind` with `fields` says in `because`: its reasons' kinds and values (None if it has none)."""
    found = {f: record_of(fields[f]) for f in REASON_FIELDS.get(kind, ())
             if isinstance(fields.get(f), (Reason, Reasons))}
    return found or None


def with_reasons(event: dict) -> dict:
    """An event read back (a trace line, an answer of the control API): each field that `because` describes a Reason
    again, when it says the same English as the field (an older line, without `because`, stays as it is)."""
    described = event.get(BECAUSE)
    if isinstance(described, dict):
        for name, record in described.items():
            reason = said_again(record)
            if reason is not None and str(reason) == event.get(name):
                event[name] = reason
    return event
