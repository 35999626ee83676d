"""Trace events in words for the dashboard's event feed ("C truncated index 4 (generation 1): conflicts ...").

Each sentence is a catalogue Text (lab.i18n): English as it is made, said in a page's language when it is sent."""

from __future__ import annotations


from lab.core.events import (
    BECAME_FOLLOWER, BECAME_LEADER, CAUGHT_UP, CLIENT_READ, CLIENT_WRITE, CLIENT_WRITE_FAILED, CLOCKS_HELD,
    CLOCKS_RELEASED, CLUSTER_STARTED, CLUSTER_STOPPED, DELAY_SET, DISK_FULL, DISK_OK, DROP_SET, ELECTION_STARTED,
    EPOCH_ANSWER, EPOCH_QUERY, EPOCH_TRUNCATION, EXPECTATION, FOLLOWER_APPEND, FSYNC_FAIL, GENERATION_CHANGED,
    HWM_CHANGED, KINDS, LEADER_APPEND, LINK_CUT, LINK_HEALED, LOG_SNAPSHOT, MATCH_INDEX_UPDATED, NEXT_INDEX_BACKED_UP,
    NODE_EXITED, NODE_KILLED, NODE_PAUSED, NODE_RESTARTED, NODE_RESUMED, NODE_STARTED, NODE_STOPPED, PREVOTE_DENIED,
    PREVOTE_GRANTED, PREVOTE_STARTED, READ_REFUSED, READ_SERVED, REPLICATION_RECEIVED, REPLICATION_REJECTED,
    REPLICATION_SENT, RESPONSE_IGNORED, RULE_BROKEN, SETTINGS_CHANGED, STEP, STUDENT_CALL, TRUNCATED,
    TRUNCATION_REFUSED, VOTE_DENIED, VOTE_GRANTED, WAL_RECOVERED, WAL_TRUNCATED, WRITE_ACKED, WRITE_FAILED,
    WRITE_REQUESTED)
from lab.core.reasons import reason_from_record
from lab.i18n import say
from lab.student.faults import fault_text
from lab.i18n.scenarios import command_text, step_text


# How the page's feed marks each kind: an important line stands out, a routine one (heartbeats, bookkeeping) is
# hidden on request. The page gets this table (window.HWM_KINDS) rather than spelling the kinds itself.
FEED_KINDS = {
    "important": [BECAME_LEADER, TRUNCATED, NODE_KILLED, NODE_RESTARTED, NODE_PAUSED, NODE_RESUMED, LINK_CUT,
                  LINK_HEALED, READ_REFUSED, ELECTION_STARTED, WRITE_FAILED, STEP, EXPECTATION, NODE_STARTED,
                  CLOCKS_HELD, CLOCKS_RELEASED, CLIENT_WRITE_FAILED, RULE_BROKEN, STUDENT_CALL],
    "routine": [REPLICATION_SENT, REPLICATION_RECEIVED, MATCH_INDEX_UPDATED, GENERATION_CHANGED, WRITE_REQUESTED,
                VOTE_GRANTED],
    **{kind.upper(): kind for kind in KINDS},  # each kind by its constant's name: K.HWM_CHANGED
}


def answer_error(answer: dict):
    """A control API answer's error: its Reason when the answer says which (`because`), else its sentence."""
    return reason_from_record(answer.get("because")) or answer["error"]


def _entries(first: int, last: int):
    if first == last:
        return say("index {index}", index=first)
    return say("indexes {first}-{last}", first=first, last=last)


def _quote(payload) -> str:
    text = str(payload)
    return f"“{text if len(text) <= 24 else text[:23] + '…'}”"


def _generations(entries: list):
    gens = sorted({e[1] for e in entries if len(e) > 1})
    if not gens:
        return ""
    listed = ", ".join(str(g) for g in gens)
    if len(gens) == 1:
        return say(" (generation {generations})", generations=listed)
    return say(" (generations {generations})", generations=listed)


class Narrator:
    """Turns events into sentences; remembers who each node follows, to say where a conflict came from."""

    def __init__(self):
        self.leader_of: dict[str, str | None] = {}
        self.cluster_leader: str | None = None  # the newest leader anyone announced (or the state says)
        self.refused_at: dict[tuple[str, str], int] = {}  # (leader, follower) -> where the follower's log differs

    def observe(self, event: dict) -> None:
        kind, node = event.get("type"), event.get("node")
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
        text = self._describe(event)
        self.observe(event)
        return text

    def _describe(self, e: dict) -> str:  # noqa: C901 (one branch per event type reads best as a table)
        kind, node = e.get("type", "?"), e.get("node", "?")
        g = e.get
        if kind == TRUNCATED:
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
        if kind == CLUSTER_STARTED:
            return say("Cluster started: nodes {nodes}; truncation {truncation}; fsync {fsync}",
                       nodes=", ".join(g("nodes") or []), truncation=g("truncation"), fsync=_fsync(g("fsync")))
        if kind == CLUSTER_STOPPED:
            return say("Cluster stopped")
        if kind == NODE_KILLED:
            lost = g("lost_entries")
            if lost:
                return say("{node} killed (SIGKILL); {lost} unflushed entries lost", node=g("target"), lost=lost)
            return say("{node} killed (SIGKILL)", node=g("target"))
        if kind == NODE_RESTARTED:
            return say("{node} restarted", node=g("target"))
        if kind == NODE_EXITED:
            if g("fault"):  # the student's code stopped it: the call, the error, file:line
                return say("{node} stopped: {fault}", node=g("target"), fault=fault_text(g("fault")))
            why = g("reason")
            if why:
                return say("{node} stopped on its own: {reason}", node=g("target"), reason=why)
            return say("{node} stopped on its own (exit code {code})", node=g("target"), code=g("code"))
        if kind == DISK_FULL:
            return say("{node}'s disk is full: its writes fail (ENOSPC) until the disk is freed", node=g("target"))
        if kind == DISK_OK:
            return say("{node}'s disk has room again", node=g("target"))
        if kind == FSYNC_FAIL:
            return say("{node}'s disk will fail its next fsync (EIO), dropping what it was to sync", node=g("target"))
        if kind == NODE_PAUSED:
            return say("{node} paused", node=g("target"))
        if kind == NODE_RESUMED:
            return say("{node} resumed", node=g("target"))
        if kind == LINK_CUT:
            return say("Link {src} → {dst} cut", src=g("src"), dst=g("dst"))
        if kind == LINK_HEALED:
            return say("Link {src} → {dst} healed", src=g("src"), dst=g("dst"))
        if kind == DELAY_SET:
            ms = g("ms") or 0
            return say("Slow motion: every message delayed {ms:g} ms", ms=ms) if ms else say("Slow motion off")
        if kind == DROP_SET:
            percent = round(100 * (g("rate") or 0), 1)
            if g("src"):
                return say("Link {src} → {dst} drops {percent:g}% of its messages", src=g("src"), dst=g("dst"),
                           percent=percent)
            if percent:
                return say("Every link drops {percent:g}% of its messages", percent=percent)
            return say("Random message loss off")
        if kind == SETTINGS_CHANGED:
            changes = {k: v for k, v in e.items() if k not in ("type", "node", "time", "seq", "v", "boot", "gen", "n")}
            return say("Settings: {changes}",
                       changes=", ".join(f"{k} {_fsync(v) if k == 'fsync' else v}" for k, v in changes.items()))
        if kind == CLIENT_WRITE:
            target = g("target")
            if target:
                return say("Client writes {payload} to {node}", payload=_quote(g("payload")), node=target)
            return say("Client writes {payload} (to the leader)", payload=_quote(g("payload")))
        if kind == CLIENT_WRITE_FAILED:
            why = g("error") or g("reason")
            return say("Client write failed: {reason}", reason=why) if why \
                else say("Client write failed")
        if kind == CLIENT_READ:
            return say("Client reads index {index} from {node}", index=g("index"), node=g("target"))
        if kind == STEP:
            return say("Step: {text}", text=step_text(g("text")))
        if kind == EXPECTATION:
            mark = "✓" if g("ok") else "✗"
            detail, name = g("detail"), str(g("name"))
            # a script's expectation, or the command that could not finish (a wait, a write)
            name = command_text(name if name.startswith(("expect ", "wait ", "write ")) else f"expect {name}")
            if detail:
                return say("{mark} {name}: {detail}", mark=mark, name=name, detail=detail)
            return say("{mark} {name}", mark=mark, name=name)
        if kind == RULE_BROKEN:  # an explorer's counterexample, replayed (lab.explore)
            return say("✗ Rule broken: {detail}", detail=g("detail"))
        if kind == STUDENT_CALL:
            if g("why"):  # the exercise's rule the call broke (lab.core.judges)
                return say("{node} calls your {function}({inputs}) → {result}, which breaks its rule: {why}",
                           node=node, function=g("function"), inputs=g("inputs"), result=g("result"), why=g("why"))
            return say("{node} calls your {function}({inputs}) → {result}", node=node, function=g("function"),
                       inputs=g("inputs"), result=g("result"))
        if kind == CLOCKS_HELD:
            return say("Node clocks held: nothing happens by itself until the next command")
        if kind == CLOCKS_RELEASED:
            return say("Node clocks running")
        if kind == NODE_STARTED:
            boot = g("boot")
            values = dict(node=node, log_end=g("log_end"), generation=g("last_generation"), hwm=g("hwm"),
                          truncation=g("truncation"))
            if boot and boot > 1:
                return say("{node} restarted: log ends at {log_end} (generation {generation}), high-water mark "
                           "{hwm}, truncation {truncation}", **values)
            return say("{node} started: log ends at {log_end} (generation {generation}), high-water mark {hwm}, "
                       "truncation {truncation}", **values)
        if kind == NODE_STOPPED:
            return say("{node} stopped: {reason}", node=node, reason=g("reason"))
        if kind == ELECTION_STARTED:
            return say("{node} starts an election for generation {generation}", node=node, generation=g("generation"))
        if kind == PREVOTE_STARTED:
            return say("{node} hears no leader: it asks whether it could win generation {generation} (pre-vote)",
                       node=node, generation=g("generation"))
        if kind == PREVOTE_GRANTED:
            return say("{node} would vote for {candidate} in generation {generation} (pre-vote)", node=node,
                       candidate=g("candidate"), generation=g("generation"))
        if kind == PREVOTE_DENIED:
            return say("{node} would not vote for {candidate} in generation {generation}: {reason}", node=node,
                       candidate=g("candidate"), generation=g("generation"), reason=g("reason"))
        if kind == TRUNCATION_REFUSED:
            return say("{node} refuses to truncate from index {index}: at or below its high-water mark {hwm}, a "
                       "committed entry would change", node=node, index=g("from_index"), hwm=g("hwm"))
        if kind == WAL_RECOVERED:
            if g("repaired"):
                return say("{node}'s write-ahead log was damaged at index {index}: repaired, it keeps indexes 1 to "
                           "{log_end} and catches up to {target} before it votes again", node=node,
                           index=g("first_bad_index"), log_end=g("log_end"), target=g("catching_up_to"))
            return say("{node}'s write-ahead log lost a torn tail from index {index} ({reason})", node=node,
                       index=g("first_bad_index"), reason=g("reason"))
        if kind == WAL_TRUNCATED:
            return say("{node}'s write-ahead log drops index {index} and after: segments left {segments}, deleted "
                       "{deleted}; the log ends at {log_end}", node=node, index=g("from_index"),
                       segments=g("segments"), deleted=g("deleted"), log_end=g("log_end"))
        if kind == EPOCH_TRUNCATION:
            cut = g("cut")
            if cut is not None:
                return say("{node}: the leader's generation ends at index {end}, so it removes index {cut} and after",
                           node=node, end=g("end_index"), cut=cut)
            return say("{node}: the leader's generation ends at index {end}, so it keeps its whole log", node=node,
                       end=g("end_index"))
        if kind == CAUGHT_UP:
            return say("{node} holds again everything up to index {index}: it votes again", node=node,
                       index=g("index"))
        if kind == VOTE_GRANTED:
            return say("{node} votes for {candidate} in generation {generation}", node=node, candidate=g("candidate"),
                       generation=g("generation"))
        if kind == VOTE_DENIED:
            return say("{node} refuses {candidate} its vote in generation {generation}: {reason}", node=node,
                       candidate=g("candidate"), generation=g("generation"), reason=g("reason"))
        if kind == BECAME_LEADER:
            return say("{node} is leader of generation {generation} (votes {votes})", node=node,
                       generation=g("generation"), votes=", ".join(g("votes") or []))
        if kind == BECAME_FOLLOWER:
            leader = g("leader")
            if leader:
                return say("{node} follows {leader} in generation {generation}", node=node, leader=leader,
                           generation=g("generation"))
            return say("{node} is a follower in generation {generation}", node=node, generation=g("generation"))
        if kind == GENERATION_CHANGED:
            return say("{node}: generation {before} → {generation}", node=node, before=g("from_generation"),
                       generation=g("generation"))
        if kind == LEADER_APPEND:
            return say("{node} (leader) appends {payload} at index {index} (generation {generation})", node=node,
                       payload=_quote(g("payload")), index=g("index"), generation=g("generation"))
        if kind == FOLLOWER_APPEND:
            return say("{node} appends {payload} at index {index} (generation {generation})", node=node,
                       payload=_quote(g("payload")), index=g("index"), generation=g("generation"))
        if kind in (REPLICATION_SENT, REPLICATION_RECEIVED):
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
        if kind == REPLICATION_REJECTED:
            return say("{node} rejects {leader}'s entries after index {index}: {reason}", node=node,
                       leader=g("from"), index=g("prev_index"), reason=g("reason"))
        if kind == RESPONSE_IGNORED:
            return say("{node} ignores {follower}'s answer: {reason}", node=node, follower=g("follower"),
                       reason=g("reason"))
        if kind == MATCH_INDEX_UPDATED:
            return say("{node}: {follower} matches up to index {index} (next {next})", node=node,
                       follower=g("follower"), index=g("match_index"), next=g("next_index"))
        if kind == NEXT_INDEX_BACKED_UP:
            follower, differs = g("follower"), self._refused_after(e)
            values = dict(node=node, follower=follower, next=g("next_index"), index=differs)
            if differs:
                return say("{node}: {follower}'s log differs at index {index}; {node} sends again from index {next} "
                           "({follower} keeps what matches and replaces what conflicts)", **values)
            return say("{node}: {follower}'s log differs; {node} sends again from index {next} ({follower} keeps "
                       "what matches and replaces what conflicts)", **values)
        if kind == HWM_CHANGED:
            hwm = g("hwm")
            if g("role") == "leader":
                return say("{node}'s high-water mark {before} → {hwm}: index {hwm} committed", node=node,
                           before=g("from_hwm"), hwm=hwm)
            return say("{node}'s high-water mark {before} → {hwm}", node=node, before=g("from_hwm"), hwm=hwm)
        if kind == EPOCH_QUERY:
            return say("{node} asks the leader where generation {generation} ends", node=node,
                       generation=g("generation"))
        if kind == EPOCH_ANSWER:
            return say("{node}: generation {generation} ends at index {end}", node=node, generation=g("generation"),
                       end=g("end_index"))
        if kind == WRITE_REQUESTED:
            return say("{node} receives the write {payload}", node=node, payload=_quote(g("payload")))
        if kind == WRITE_ACKED:
            return say("{node} acknowledges the write at index {index} (generation {generation})", node=node,
                       index=g("index"), generation=g("generation"))
        if kind == WRITE_FAILED:
            return say("{node}: write failed: {reason}", node=node,
                       reason=g("reason"))
        if kind == READ_SERVED:
            return say("{node} serves index {index} ({payload}), high-water mark {hwm}", node=node, index=g("index"),
                       payload=_quote(g("payload")), hwm=g("hwm"))
        if kind == READ_REFUSED:
            return say("{node} refuses to read index {index}: {reason}", node=node, index=g("index"),
                       reason=g("reason"))
        if kind == LOG_SNAPSHOT:
            return say("{node}'s final log: {log_end} entries, high-water mark {hwm}", node=node,
                       log_end=g("log_end"), hwm=g("hwm"))
        return say("{node}: {kind}", node=node, kind=kind)


def _fsync(value) -> str:
    if isinstance(value, dict):
        kinds = set(value.values())
        if len(kinds) == 1:
            return kinds.pop()
        return ", ".join(f"{n} {p}" for n, p in sorted(value.items()))
    return str(value)
