"""Trace events in words for the dashboard's event feed ("C truncated index 4 (generation 1): conflicts ...").

Each sentence is a catalogue Text (lab.i18n): English as it is made, said in a page's language when it is sent."""

from __future__ import annotations


from lab.core.events import (
    BECAME_FOLLOWER, BECAME_LEADER, CAUGHT_UP, CLIENT_ANSWER, CLIENT_READ, CLIENT_WRITE, CLIENT_WRITE_FAILED,
    CLOCKS_HELD, CLOCKS_RELEASED, CLUSTER_STARTED, CLUSTER_STOPPED, DELAY_SET, DISK_FULL, DISK_OK, DROP_SET,
    ELECTION_STARTED, EPOCH_ANSWER, EPOCH_QUERY, EPOCH_TRUNCATION, EXPECTATION, FOLLOWER_APPEND, FSYNC_FAIL,
    GENERATION_CHANGED, HWM_CHANGED, LEADER_APPEND, LINK_CUT, LINK_HEALED, LOG_PERSISTED, LOG_SNAPSHOT,
    MATCH_INDEX_UPDATED, NEXT_INDEX_BACKED_UP, NODE_EXITED, NODE_KILLED, NODE_PAUSED, NODE_RESTARTED, NODE_RESUMED,
    NODE_STARTED, NODE_STOPPED, PREVOTE_DENIED, PREVOTE_GRANTED, PREVOTE_STARTED, READ_FAILED, READ_INDEX,
    READ_REFUSED, READ_SERVED, REPLICATION_RECEIVED, REPLICATION_REJECTED, REPLICATION_SENT, RESPONSE_IGNORED,
    RULE_BROKEN, SETTINGS_CHANGED, STEP, STUDENT_CALL, TRUNCATED, TRUNCATION_REFUSED, VOTE_DENIED, VOTE_GRANTED,
    WAL_RECOVERED, WAL_TRUNCATED, WRITE_ACKED, WRITE_FAILED, WRITE_REQUESTED)
from lab.core.interface import EXERCISE_OF
from lab.core.reasons import reason_from_record
from lab.harness.history import Stale, StaleWatch
from lab.i18n.chaos import REFUSALS as REFUSAL_WORDS
from lab.i18n.history import answer_said, stale_said
from lab.i18n import Listed, Quoted, counted, say
from lab.student.faults import fault_text
from lab.i18n.scenarios import command_text, step_caption
from web.narrate_controls import ControlNarrations


def answer_error(answer: dict):
    """A control API answer's error: its Reason when the answer says which (`because`), else its sentence."""
    return reason_from_record(answer.get("because")) or answer["error"]


def _entries(first: int, last: int):
    if first == last:
        return say("index {index}", index=first)
    return say("indexes {first}-{last}", first=first, last=last)


def _quote(payload) -> Quoted:
    text = str(payload)
    return Quoted(text if len(text) <= 24 else text[:23] + "…")


def _generations(entries: list):
    gens = sorted({e[1] for e in entries if len(e) > 1})
    if not gens:
        return ""
    listed = Listed(str(g) for g in gens)
    if len(gens) == 1:
        return say(" (generation {generations})", generations=listed)
    return say(" (generations {generations})", generations=listed)


class Narrator(ControlNarrations):
    """Turns events into sentences; remembers who each node follows, to say where a conflict came from. What is
    done to the cluster (its controls and faults) it says as web.narrate_controls does."""

    def __init__(self):
        self.leader_of: dict[str, str | None] = {}
        self.cluster_leader: str | None = None  # the newest leader anyone announced (or the state says)
        self.refused_at: dict[tuple[str, str], int] = {}  # (leader, follower) -> where the follower's log differs
        self.stale_reads = StaleWatch()  # the history's rule, as the run goes (lab.harness.history)
        self.stale: Stale | None = None  # the event last taken, when it answered a stale read (the feed marks it)
        self.asked: dict[str, tuple[str, int | None]] = {}  # a client's request under way -> (write|read, index)

    def observe(self, event: dict) -> None:
        self.stale = self.stale_reads.observe(event)
        self._follow(event)

    def _follow(self, event: dict) -> None:
        kind, node = event.get("type"), event.get("node")
        if kind in (CLIENT_WRITE, CLIENT_READ) and event.get("request"):
            self.asked[event["request"]] = ("write" if kind == CLIENT_WRITE else "read", event.get("index"))
        elif kind == CLIENT_ANSWER:
            self.asked.pop(event.get("request"), None)
        if kind == BECAME_FOLLOWER:
            self.leader_of[node] = event.get("leader")
        elif kind == REPLICATION_RECEIVED:
            self.leader_of[node] = event.get("from")
        elif kind == BECAME_LEADER:
            self.leader_of[node] = node
            self.cluster_leader = node
        elif kind in (NODE_STARTED, ELECTION_STARTED):
            self.leader_of[node] = None
        elif kind == REPLICATION_REJECTED:
            self.refused_at[(event.get("from"), node)] = event.get("prev_index")

    def _refused_after(self, e: dict):
        """Where the follower's refusal said its log differs: the leader's own event says so (refused_after);
        an older trace's is the follower's last refusal, quoted once and only if the retry starts at or before
        it (events of two nodes may arrive out of order, and a refusal of long ago is not this one's)."""
        if e.get("refused_after") is not None:
            return e["refused_after"]
        index = self.refused_at.pop((e.get("node"), e.get("follower")), None)
        if index is None or (e.get("next_index") or 0) > index:
            return None
        return index

    def describe(self, event: dict) -> str:
        self.stale = self.stale_reads.observe(event)
        text = self._describe(event)
        self._follow(event)
        return text

    def _describe(self, e: dict):
        say_it = NARRATION.get(e.get("type"))
        if say_it is None:
            return say("{node}: {kind}", node=e.get("node", "?"), kind=e.get("type", "?"))
        return say_it(self, e)

    def _truncated(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        removed = g("removed") or []
        first = g("from_index")
        last = removed[-1][0] if removed else first
        what = say("{node} truncated {entries}{generations}", node=node, entries=_entries(first, last),
                   generations=_generations(removed))
        reason = g("reason")
        if reason == "conflict":
            source = self.leader_of.get(node) or (self.cluster_leader if self.cluster_leader != node else None)
            other = g("conflicting_generation")
            if other is not None and source:
                return say("{what}: conflicts with generation {generation} from {leader}", what=what,
                           generation=other, leader=source)
            if other is not None:
                return say("{what}: conflicts with generation {generation}", what=what, generation=other)
            if source:
                return say("{what}: conflicts with the leader's log from {leader}", what=what, leader=source)
            return say("{what}: conflicts with the leader's log", what=what)
        if reason == "restart-hwm":
            return say("{what} on restart: above its own high-water mark {hwm} (high-water-mark strategy)",
                       what=what, hwm=g("hwm"))
        if reason == "leader-epoch":
            return say("{what}: beyond where the leader's log ends for that generation (leader-epoch)", what=what)
        if reason == "lost-tail":
            return say("{what}: never flushed to disk, lost in the crash", what=what)
        return say("{what} ({reason})", what=what, reason=reason)

    def _node_exited(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        if g("fault"):  # the student's code stopped it: the call, the error, file:line
            return say("{node} stopped: {fault}", node=g("target"), fault=fault_text(g("fault")))
        why = g("reason")
        if why:
            return say("{node} stopped on its own: {reason}", node=g("target"), reason=why)
        return say("{node} stopped on its own (exit code {code})", node=g("target"), code=g("code"))

    def _client_write(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        target = g("target")
        if target:
            return say("Client writes {payload} to {node}", payload=_quote(g("payload")), node=target)
        return say("Client writes {payload} (to the leader)", payload=_quote(g("payload")))

    def _client_write_failed(self, e: dict):
        g = e.get
        why = g("error") or g("reason")
        return say("Client write failed: {reason}", reason=why) if why \
            else say("Client write failed")

    def _client_read(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("Client reads index {index} from {node}", index=g("index"), node=g("target"))

    def _client_answer(self, e: dict):
        if self.stale is not None:
            return stale_said(self.stale)
        what, index = self.asked.get(e.get("request"), (None, e.get("index")))
        return answer_said(e, what, index, REFUSAL_WORDS.get(e.get("refusal"), e.get("refusal")))

    def _read_index(self, e: dict):
        return say("{node} checks it still leads before a linearizable read of index {index}: it asks its "
                   "followers (read index {read_index})", node=e.get("node", "?"), index=e.get("index"),
                   read_index=e.get("read_index"))

    def _read_failed(self, e: dict):
        return say("{node} does not answer the linearizable read of index {index}: {reason}", node=e.get("node", "?"),
                   index=e.get("index"), reason=e.get("reason"))

    def _step(self, e: dict):
        g = e.get
        return say("Step {number}: {text}", number=(g("index") or 0) + 1, text=step_caption(e))

    def _expectation(self, e: dict):
        g = e.get
        mark = "✓" if g("ok") else "✗"
        detail, name = g("detail"), str(g("name"))
        # a script's expectation, or the command that could not finish (a wait, a write)
        name = command_text(name if name.startswith(("expect ", "wait ", "write ")) else f"expect {name}")
        if detail:
            return say("{mark} {name}: {detail}", mark=mark, name=name, detail=detail)
        return say("{mark} {name}", mark=mark, name=name)

    def _rule_broken(self, e: dict):  # an explorer's counterexample, replayed (lab.explore)
        g = e.get
        return say("✗ Rule broken: {detail}", detail=g("detail"))

    def _student_call(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        values = dict(node=node, function=g("function"), inputs=g("inputs"), result=g("result"))
        if g("uses"):  # its answer rests on a wrong answer of the function it was handed: that one is to blame
            return say("{node} calls your {function}({inputs}) → {result}: it rests on the wrong answer your {used} "
                       "(exercise {number}) gave it just before", used=g("uses"),
                       number=EXERCISE_OF.get(g("uses"), "?"), **values)
        if g("why"):  # the exercise's rule the call broke, judged on the call's own inputs (lab.core.judges)
            return say("{node} calls your {function}({inputs}) → {result}, which breaks the rule of exercise {number}, "
                       "judged on those inputs: {why}", number=EXERCISE_OF.get(g("function"), "?"), why=g("why"),
                       **values)
        return say("{node} calls your {function}({inputs}) → {result}", **values)

    def _node_started(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        boot = g("boot")
        values = dict(node=node, log_end=g("log_end"), generation=g("last_generation"), hwm=g("hwm"),
                      truncation=g("truncation"))
        if boot and boot > 1:
            return say("{node} restarted: log ends at {log_end} (generation {generation}), high-water mark "
                       "{hwm}, truncation {truncation}", **values)
        return say("{node} started: log ends at {log_end} (generation {generation}), high-water mark {hwm}, "
                   "truncation {truncation}", **values)

    def _node_stopped(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} stopped: {reason}", node=node, reason=g("reason"))

    def _election_started(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} starts an election for generation {generation}", node=node, generation=g("generation"))

    def _prevote_started(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} hears no leader: it asks whether it could win generation {generation} (pre-vote)",
                   node=node, generation=g("generation"))

    def _prevote_granted(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} would vote for {candidate} in generation {generation} (pre-vote)", node=node,
                   candidate=g("candidate"), generation=g("generation"))

    def _prevote_denied(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} would not vote for {candidate} in generation {generation}: {reason}", node=node,
                   candidate=g("candidate"), generation=g("generation"), reason=g("reason"))

    def _truncation_refused(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} refuses to truncate from index {index}: at or below its high-water mark {hwm}, a "
                   "committed entry would change", node=node, index=g("from_index"), hwm=g("hwm"))

    def _wal_recovered(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        if g("repaired"):
            return say("{node}'s write-ahead log was damaged at index {index}: repaired, it keeps indexes 1 to "
                       "{log_end} and catches up to {target} before it votes again", node=node,
                       index=g("first_bad_index"), log_end=g("log_end"), target=g("catching_up_to"))
        return say("{node}'s write-ahead log lost a torn tail from index {index} ({reason})", node=node,
                   index=g("first_bad_index"), reason=g("reason"))

    def _wal_truncated(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node}'s write-ahead log drops index {index} and after: segments left {segments}, deleted "
                   "{deleted}; the log ends at {log_end}", node=node, index=g("from_index"),
                   segments=g("segments"), deleted=g("deleted"), log_end=g("log_end"))

    def _epoch_truncation(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        cut = g("cut")
        if cut is not None:
            return say("{node}: the leader's generation ends at index {end}, so it removes index {cut} and after",
                       node=node, end=g("end_index"), cut=cut)
        return say("{node}: the leader's generation ends at index {end}, so it keeps its whole log", node=node,
                   end=g("end_index"))

    def _log_persisted(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node}'s log is on its disk up to index {index}", node=node, index=g("index"))

    def _caught_up(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} holds again everything up to index {index}: it votes again", node=node,
                   index=g("index"))

    def _vote_granted(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} votes for {candidate} in generation {generation}", node=node, candidate=g("candidate"),
                   generation=g("generation"))

    def _vote_denied(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} refuses {candidate} its vote in generation {generation}: {reason}", node=node,
                   candidate=g("candidate"), generation=g("generation"), reason=g("reason"))

    def _became_leader(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} is leader of generation {generation} (votes {votes})", node=node,
                   generation=g("generation"), votes=Listed(g("votes") or []))

    def _became_follower(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        leader = g("leader")
        if leader:
            return say("{node} follows {leader} in generation {generation}", node=node, leader=leader,
                       generation=g("generation"))
        return say("{node} is a follower in generation {generation}", node=node, generation=g("generation"))

    def _generation_changed(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node}: generation {before} → {generation}", node=node, before=g("from_generation"),
                   generation=g("generation"))

    def _leader_append(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} (leader) appends {payload} at index {index} (generation {generation})", node=node,
                   payload=_quote(g("payload")), index=g("index"), generation=g("generation"))

    def _follower_append(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} appends {payload} at index {index} (generation {generation})", node=node,
                   payload=_quote(g("payload")), index=g("index"), generation=g("generation"))

    def _replication_sent(self, e: dict):
        node = e.get("node", "?")
        kind = e.get("type")
        g = e.get
        first, last = g("first"), g("last")
        if first > last:
            body = say("heartbeat")
        elif last > first:
            body = say("entries {first}-{last}", first=first, last=last)
        else:
            body = say("entry {index}", index=first)
        if kind == REPLICATION_SENT:
            return say("{node} → {peer}: {body}, high-water mark {hwm}", node=node, peer=g("to"), body=body,
                       hwm=g("hwm"))
        return say("{node} ← {peer}: {body}, high-water mark {hwm}", node=node, peer=g("from"), body=body,
                   hwm=g("hwm"))

    def _replication_rejected(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} rejects {leader}'s entries after index {index}: {reason}", node=node,
                   leader=g("from"), index=g("prev_index"), reason=g("reason"))

    def _response_ignored(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} ignores {follower}'s answer: {reason}", node=node, follower=g("follower"),
                   reason=g("reason"))

    def _match_index_updated(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node}: {follower} matches up to index {index} (next {next})", node=node,
                   follower=g("follower"), index=g("match_index"), next=g("next_index"))

    def _next_index_backed_up(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        follower, differs = g("follower"), self._refused_after(e)
        values = dict(node=node, follower=follower, next=g("next_index"), index=differs)
        if differs:
            return say("{node}: {follower}'s log differs at index {index}; {node} sends again from index {next} "
                       "({follower} keeps what matches and replaces what conflicts)", **values)
        return say("{node}: {follower}'s log differs; {node} sends again from index {next} ({follower} keeps "
                   "what matches and replaces what conflicts)", **values)

    def _hwm_changed(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        hwm = g("hwm")
        if g("role") == "leader":
            return say("{node}'s high-water mark {before} → {hwm}: index {hwm} committed", node=node,
                       before=g("from_hwm"), hwm=hwm)
        return say("{node}'s high-water mark {before} → {hwm}", node=node, before=g("from_hwm"), hwm=hwm)

    def _epoch_query(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} asks the leader where generation {generation} ends", node=node,
                   generation=g("generation"))

    def _epoch_answer(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node}: generation {generation} ends at index {end}", node=node, generation=g("generation"),
                   end=g("end_index"))

    def _write_requested(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} receives the write {payload}", node=node, payload=_quote(g("payload")))

    def _write_acked(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} acknowledges the write at index {index} (generation {generation})", node=node,
                   index=g("index"), generation=g("generation"))

    def _write_failed(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node}: write failed: {reason}", node=node,
                   reason=g("reason"))

    def _read_served(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} serves index {index} ({payload}), high-water mark {hwm}", node=node, index=g("index"),
                   payload=_quote(g("payload")), hwm=g("hwm"))

    def _read_refused(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return say("{node} refuses to read index {index}: {reason}", node=node, index=g("index"),
                   reason=g("reason"))

    def _log_snapshot(self, e: dict):
        node = e.get("node", "?")
        g = e.get
        return counted("{node}'s final log: {log_end} entry, high-water mark {hwm}",
                       "{node}'s final log: {log_end} entries, high-water mark {hwm}", g("log_end") or 0, node=node,
                       log_end=g("log_end"), hwm=g("hwm"))


# Each event kind (lab.core.events) in words: tests/test_events.py holds every declared kind to an entry.
NARRATION = {
    TRUNCATED: Narrator._truncated,
    CLUSTER_STARTED: Narrator._cluster_started,
    CLUSTER_STOPPED: Narrator._cluster_stopped,
    NODE_KILLED: Narrator._node_killed,
    NODE_RESTARTED: Narrator._node_restarted,
    NODE_EXITED: Narrator._node_exited,
    DISK_FULL: Narrator._disk_full,
    DISK_OK: Narrator._disk_ok,
    FSYNC_FAIL: Narrator._fsync_fail,
    NODE_PAUSED: Narrator._node_paused,
    NODE_RESUMED: Narrator._node_resumed,
    LINK_CUT: Narrator._link_cut,
    LINK_HEALED: Narrator._link_healed,
    DELAY_SET: Narrator._delay_set,
    DROP_SET: Narrator._drop_set,
    SETTINGS_CHANGED: Narrator._settings_changed,
    CLIENT_WRITE: Narrator._client_write,
    CLIENT_WRITE_FAILED: Narrator._client_write_failed,
    CLIENT_READ: Narrator._client_read,
    STEP: Narrator._step,
    EXPECTATION: Narrator._expectation,
    RULE_BROKEN: Narrator._rule_broken,
    STUDENT_CALL: Narrator._student_call,
    CLOCKS_HELD: Narrator._clocks_held,
    CLOCKS_RELEASED: Narrator._clocks_released,
    NODE_STARTED: Narrator._node_started,
    NODE_STOPPED: Narrator._node_stopped,
    ELECTION_STARTED: Narrator._election_started,
    PREVOTE_STARTED: Narrator._prevote_started,
    PREVOTE_GRANTED: Narrator._prevote_granted,
    PREVOTE_DENIED: Narrator._prevote_denied,
    TRUNCATION_REFUSED: Narrator._truncation_refused,
    WAL_RECOVERED: Narrator._wal_recovered,
    WAL_TRUNCATED: Narrator._wal_truncated,
    EPOCH_TRUNCATION: Narrator._epoch_truncation,
    CAUGHT_UP: Narrator._caught_up,
    LOG_PERSISTED: Narrator._log_persisted,
    VOTE_GRANTED: Narrator._vote_granted,
    VOTE_DENIED: Narrator._vote_denied,
    BECAME_LEADER: Narrator._became_leader,
    BECAME_FOLLOWER: Narrator._became_follower,
    GENERATION_CHANGED: Narrator._generation_changed,
    LEADER_APPEND: Narrator._leader_append,
    FOLLOWER_APPEND: Narrator._follower_append,
    REPLICATION_SENT: Narrator._replication_sent,
    REPLICATION_RECEIVED: Narrator._replication_sent,
    REPLICATION_REJECTED: Narrator._replication_rejected,
    RESPONSE_IGNORED: Narrator._response_ignored,
    MATCH_INDEX_UPDATED: Narrator._match_index_updated,
    NEXT_INDEX_BACKED_UP: Narrator._next_index_backed_up,
    HWM_CHANGED: Narrator._hwm_changed,
    EPOCH_QUERY: Narrator._epoch_query,
    EPOCH_ANSWER: Narrator._epoch_answer,
    WRITE_REQUESTED: Narrator._write_requested,
    WRITE_ACKED: Narrator._write_acked,
    WRITE_FAILED: Narrator._write_failed,
    READ_SERVED: Narrator._read_served,
    READ_REFUSED: Narrator._read_refused,
    READ_INDEX: Narrator._read_index,
    READ_FAILED: Narrator._read_failed,
    CLIENT_ANSWER: Narrator._client_answer,
    LOG_SNAPSHOT: Narrator._log_snapshot,
}
