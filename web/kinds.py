"""How the dashboard shows each kind of trace event: every declared kind in one of the classes below (the live
frames' sampling, the late page's story and the feed's marks are all read from them; tests/test_events.py holds it)."""

from __future__ import annotations

from lab.core import events as ev

# The run's story, and a line of the feed that stands out.
IMPORTANT = frozenset({
    ev.BECAME_LEADER, ev.TRUNCATED, ev.NODE_KILLED, ev.NODE_RESTARTED, ev.NODE_PAUSED, ev.NODE_RESUMED, ev.LINK_CUT,
    ev.LINK_HEALED, ev.READ_REFUSED, ev.ELECTION_STARTED, ev.WRITE_FAILED, ev.STEP, ev.EXPECTATION, ev.NODE_STARTED,
    ev.CLOCKS_HELD, ev.CLOCKS_RELEASED, ev.CLIENT_WRITE_FAILED, ev.RULE_BROKEN, ev.STUDENT_CALL,
})
# The rest of the story: a page that joins late still sees these, as plain lines.
NOTED = frozenset({
    ev.CLUSTER_STARTED, ev.CLUSTER_STOPPED, ev.NODE_STOPPED, ev.NODE_EXITED, ev.DELAY_SET, ev.SETTINGS_CHANGED,
    ev.TRUNCATION_REFUSED, ev.WAL_RECOVERED, ev.CAUGHT_UP, ev.WAL_TRUNCATED,
})
# High volume: sampled (newest first) when a frame would carry too many; kept in the feed.
BUSY = frozenset({
    ev.FOLLOWER_APPEND, ev.HWM_CHANGED, ev.LEADER_APPEND, ev.WRITE_ACKED, ev.CLIENT_WRITE, ev.READ_SERVED,
    ev.CLIENT_READ, ev.CLIENT_ANSWER, ev.READ_INDEX,
})
# High volume and bookkeeping: sampled like BUSY, and hidden from the feed on request.
BOOKKEEPING = frozenset({
    ev.REPLICATION_SENT, ev.REPLICATION_RECEIVED, ev.MATCH_INDEX_UPDATED, ev.GENERATION_CHANGED, ev.WRITE_REQUESTED,
    ev.LOG_PERSISTED,
})
# Few, but hidden from the feed on request with the bookkeeping.
QUIET = frozenset({ev.VOTE_GRANTED})
# Neither story nor volume: sent as they come, summarised by type for a late page.
PLAIN = frozenset({
    ev.BECAME_FOLLOWER, ev.DISK_FULL, ev.DISK_OK, ev.DROP_SET, ev.EPOCH_ANSWER, ev.EPOCH_QUERY, ev.EPOCH_TRUNCATION,
    ev.FSYNC_FAIL, ev.LOG_SNAPSHOT, ev.NEXT_INDEX_BACKED_UP, ev.PREVOTE_DENIED, ev.PREVOTE_GRANTED,
    ev.PREVOTE_STARTED, ev.REPLICATION_REJECTED, ev.RESPONSE_IGNORED, ev.VOTE_DENIED, ev.READ_FAILED,
})
CLASSES = (IMPORTANT, NOTED, BUSY, BOOKKEEPING, QUIET, PLAIN)

ROUTINE = BUSY | BOOKKEEPING  # what a crowded frame samples (web.live)
HIDDEN = BOOKKEEPING | QUIET  # what the feed hides on request (the page's "routine" kinds)
STORY = IMPORTANT | NOTED  # what a page that joins late must still see (web.live)


# How the page's feed marks each kind: an important line stands out, a routine one (heartbeats, bookkeeping) is
# hidden on request. The page gets this table (window.HWM_KINDS) rather than spelling the kinds itself.
FEED_KINDS = {
    "important": sorted(IMPORTANT),
    "routine": sorted(HIDDEN),
    **{kind.upper(): kind for kind in ev.KINDS},  # each kind by its constant's name: K.HWM_CHANGED
}
