"""A message-sequence diagram of trace events, as SVG: one vertical line per node, time downwards, each message an
arrow from sender to receiver with its label, lost messages ending in a cross, and each node's own moments
(crash, restart, leadership, appends, truncations, high-water mark changes) marked on its line.

`sequence_svg(events)` draws a list of events (a trace's, a replay's up to its cursor, a live cluster's last
seconds, the events around a grader's violation); `write_sequence_svg(trace_dir, out)` draws a trace directory.
Pure Python and the standard library: the dashboard, the grader's feedback and the explorer all embed it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
import html
from html import escape
from pathlib import Path

from lab.harness.history import StaleWatch
from lab.i18n import Listed, localize, say
from lab.core import events as ev
from lab.core.events import (
    BECAME_LEADER, CLIENT_ANSWER, CLIENT_WRITE, CLUSTER_STARTED, ELECTION_STARTED, HWM_CHANGED, LEADER_APPEND, LINK_CUT,
    LINK_HEALED, NODE_KILLED, NODE_PAUSED, NODE_RESTARTED, NODE_RESUMED, NODE_STARTED, PREVOTE_DENIED,
    PREVOTE_GRANTED, PREVOTE_STARTED, REPLICATION_RECEIVED, REPLICATION_REJECTED, REPLICATION_SENT, STEP, TRUNCATED,
    VOTE_DENIED, VOTE_GRANTED, WRITE_ACKED, WRITE_REQUESTED)

CLUSTER = "cluster"
COL_W, ROW_H, TOP, LEFT = 150, 26, 46, 70
# An arrowhead (10 px: its marker is 5 stroke widths) lands on a row or half a row after one: 13 px from the
# middle of any mark (16 px tall), so that no mark is ever drawn over it; nor is any label (see _arrow).
HEAD_ALONG, HEAD_ACROSS, MARK_H = 10, 5, 16
RECEIPT_HORIZON = 1000  # a message that no event this far on shows received was lost
MAX_ROWS = 400  # a longer story keeps its newest rows (a live cluster's last seconds)
COLORS = ["#5b6470", "#E69F00", "#56B4E9", "#009E73", "#b8a800", "#0072B2", "#D55E00", "#CC79A7"]
# What each kind of message is, and which events of the receiver show it arrived (the trace has no "receive"
# event of its own: a follower's answer to a request, a voter's answer to a candidate, is the proof).
REQUEST_RECEIPTS = (REPLICATION_RECEIVED, REPLICATION_REJECTED)


@dataclass
class Arrow:
    src: str
    dst: str
    row: float
    label: str
    kind: str  # request | response | refusal | vote | heartbeat
    gen: int = 0
    end: float | None = None  # the row it arrives on; None: lost (a cross half way)
    flying: bool = False  # the drawing ends before it arrives
    n: int = 0  # the number of the event that sent it (1-based, in the events drawn)
    arrive: int | None = None  # the number of the event that shows it arrived, when that event has a row


@dataclass
class Mark:
    node: str | None  # None: across every line (a cut, a healed link, a scenario's step)
    row: float
    label: str
    kind: str  # killed | restarted | paused | leader | append | hwm | truncated | link_cut | link_healed | step
    links: list = field(default_factory=list)  # a cut or healed mark: the (src, dst) links
    n: int = 0  # the number of the event it marks
    ns: list = field(default_factory=list)  # a cut or healed mark: the number of each link's event


@dataclass
class Diagram:
    nodes: list[str]
    arrows: list[Arrow] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    rows: int = 0
    down: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # node -> rows it was down
    down_n: dict[str, list[tuple[int, int | None]]] = field(default_factory=dict)  # those stretches' event numbers


def _heartbeat(e: dict) -> bool:
    return (e.get("first") or 0) > (e.get("last") or 0)


def _nodes(events: list[dict]) -> list[str]:
    for e in events:
        if e.get("type") == CLUSTER_STARTED and e.get("nodes"):
            return list(e["nodes"])
    return sorted({e["node"] for e in events if e.get("node") and e.get("node") != CLUSTER})


def _receipt(events: list[dict], i: int, dst: str, types: tuple, match) -> int | None:
    """Where (event position) `dst` first shows it received the message sent at position i."""
    for j in range(i + 1, min(len(events), i + 1 + RECEIPT_HORIZON)):
        e = events[j]
        if e.get("node") == dst and e.get("type") in types and match(e):
            return j
        if e.get("type") == NODE_KILLED and e.get("target") == dst:
            return None  # a node that crashed lost what was on its way to it
    return None


def causal(events: list[dict]) -> list[dict]:
    """Trace order, except that a node's events at one instant that answer a client's write come after that
    write's command (a trace sorts equal times by node name, and "cluster" sorts after the nodes)."""
    out = list(events)
    i = 0
    while i < len(out):
        e = out[i]
        if e.get("type") == WRITE_REQUESTED and e.get("request"):
            t, node = e.get("time"), e.get("node")
            j = next((k for k in range(i + 1, len(out)) if out[k].get("time") == t
                      and out[k].get("type") == CLIENT_WRITE and out[k].get("request") == e["request"]), None)
            if j is not None:
                run = [k for k in range(i, j) if out[k].get("node") == node and out[k].get("time") == t]
                moved = [out[k] for k in run]
                rest = [x for k, x in enumerate(out[:j + 1]) if k < i or (k not in run)]
                out = rest + moved + out[j + 1:]
                continue
        i += 1
    return out


def build(events: list[dict], heartbeats: bool = False, upto: int | None = None,
          nodes: list[str] | None = None, numbers: list[int] | None = None) -> Diagram:
    """The diagram of events[:upto] (all by default), each arrow and mark on a row; events that draw nothing take
    no row. The events after `upto` only tell which messages were still in flight at that point. Each arrow and
    mark keeps the number of its event: `numbers` (default 1, 2, 3, ...), those of the events given."""
    return _Builder(events, heartbeats, upto, nodes, numbers).diagram()


class _Builder:
    """One drawing: the rows taken so far, the messages on their way, the links cut and the nodes down. Each event
    kind that draws something has its method (ON_CLUSTER, ON_NODE below)."""

    def __init__(self, events, heartbeats, upto, nodes, numbers):
        shown = {id(e) for e in (events if upto is None else events[:max(0, upto)])}
        self.number = {id(e): k for e, k in zip(events, numbers or range(1, len(events) + 1))}
        self.events = events = causal(events)
        self.visible = [id(e) in shown for e in events]
        self.whole = all(self.visible)
        self.heartbeats = heartbeats
        self.d = Diagram(list(nodes) if nodes else _nodes(events))
        self.known = set(self.d.nodes)
        self.row_of: dict[int, float] = {}
        self.pending: list[tuple[int, Arrow, int | None]] = []  # (position sent, arrow, position received)
        self.cut: set[tuple[str, str]] = set()
        self.acked = {e.get("request") for e in events if e.get("type") == WRITE_ACKED}
        self.payload_of = {e.get("digest"): e.get("payload") for e in events if e.get("payload") and e.get("digest")}
        self.down_since: dict[str, float] = {}
        self.down_from: dict[str, int] = {}  # node -> the number of the event that took it down
        self.row = 0.0
        self.last_step_row, self.first_step = None, 0
        self.stale_reads, self.stale = StaleWatch(), None  # the clients' history's rule, as the events go

    def diagram(self) -> Diagram:
        for i, e in enumerate(self.events):
            if not self.visible[i]:
                continue
            self.stale = self.stale_reads.observe(e)
            node = e.get("node")
            if node == CLUSTER:
                drawn = ON_CLUSTER.get(e.get("type"))
                if drawn is not None and (e.get("type") in ACROSS or e.get("target") in self.known
                                          or e.get("type") == CLIENT_ANSWER):  # (it says who answered itself)
                    drawn(self, i, e)
            elif node in self.known:
                drawn = ON_NODE.get(e.get("type"))
                if drawn is not None:
                    drawn(self, i, e, node, e.get("gen") or 0)
        return self._landed()

    def _landed(self) -> Diagram:
        """Arrivals: a request lands where its receiver answered it; an answer half a row on (between two rows, so
        never on a row where its receiver's marks are drawn); a message on a cut link, or to a node down, is lost."""
        d = self.d
        for i, arrow, receipt in self.pending:
            if receipt is None:
                arrow.end = None
            elif receipt == -1:
                arrow.end = arrow.row + 0.5
            elif receipt in self.row_of:
                arrow.end, arrow.arrive = self.take(receipt), self.n_of(receipt)
            else:
                arrow.end = arrow.row + 0.5
            d.arrows.append(arrow)
        d.rows = int(self.row)
        for node, since in self.down_since.items():
            d.down.setdefault(node, []).append((since, self.row + 1))
            d.down_n.setdefault(node, []).append((self.down_from[node], None))
        return d

    # ---- rows, marks and arrows --------------------------------------------------------------------------------

    def n_of(self, i: int) -> int:
        return self.number[id(self.events[i])]

    def put(self, i: int, mark: Mark) -> None:
        mark.n = self.n_of(i)
        mark.ns = [mark.n] if mark.links else []
        self.d.marks.append(mark)

    def down(self, node: str, i: int) -> None:
        self.down_since[node], self.down_from[node] = self.row, self.n_of(i)

    def up(self, node: str, i: int, r: float) -> None:
        self.d.down.setdefault(node, []).append((self.down_since.pop(node), r))
        self.d.down_n.setdefault(node, []).append((self.down_from.pop(node), self.n_of(i)))

    def take(self, i: int) -> float:
        if i not in self.row_of:
            self.row += 1
            self.row_of[i] = self.row
        return self.row_of[i]

    def send(self, i, src, dst, label, kind, gen, receipt):
        if dst not in self.known or src == dst:
            return
        if (src, dst) in self.cut and receipt == -1 or dst in self.down_since:
            receipt = None  # an answer on a cut link, or anything to a node that is down, is lost
        arrow = Arrow(src, dst, self.take(i), label, kind, gen, n=self.n_of(i))
        if receipt is not None and receipt >= 0 and not self.visible[receipt] or receipt is None and self.whole and \
                (src, dst) not in self.cut and dst not in self.down_since and \
                not any(e.get("node") == dst for e in self.events[i + 1:i + 1 + RECEIPT_HORIZON]):
            arrow.flying, receipt = True, -1  # the drawing ends before it lands: in flight, not lost
        self.pending.append((i, arrow, receipt))

    # ---- the cluster's events ----------------------------------------------------------------------------------

    def link(self, i: int, e: dict) -> None:
        kind, pair = e.get("type"), (e.get("src"), e.get("dst"))
        (self.cut.add if kind == LINK_CUT else self.cut.discard)(pair)
        prev = self.d.marks[-1] if self.d.marks else None
        if prev and prev.kind == kind and prev.row == self.row:
            prev.links.append(pair)  # one row for a node cut off from every other
            prev.ns.append(self.n_of(i))
        else:
            self.put(i, Mark(None, self.take(i), "", kind, [pair]))

    def killed(self, i: int, e: dict) -> None:
        self.put(i, Mark(e["target"], self.take(i), say("✕ killed"), "killed"))
        self.down(e["target"], i)

    def restarted(self, i: int, e: dict) -> None:
        r = self.take(i)
        if e["target"] in self.down_since:  # (its own first event may have come first)
            self.up(e["target"], i, r)
        self.put(i, Mark(e["target"], r, say("restarted"), "restarted"))

    def paused(self, i: int, e: dict) -> None:
        self.put(i, Mark(e["target"], self.take(i), say("paused") if e.get("type") == NODE_PAUSED
                         else say("resumed"), "paused"))

    def step(self, i: int, e: dict) -> None:
        step = (e.get("index") or 0) + 1
        if self.last_step_row != self.row:
            self.put(i, Mark(None, self.take(i), say("step {number}", number=step), STEP))
            self.last_step_row, self.first_step = self.row, step
        else:  # a step that drew nothing since the one before: one row names both
            next(m for m in reversed(self.d.marks) if m.kind == STEP).label = say(
                "steps {first}–{last}", first=self.first_step, last=step)

    # ---- a node's events ---------------------------------------------------------------------------------------

    def sent(self, i: int, e: dict, node: str, gen: int) -> None:
        g, hb = e.get, _heartbeat(e)
        if hb and not self.heartbeats:
            return
        dst, prev, span = g("to"), g("prev_index"), (g("first"), g("last"))
        label = say("♥ HWM {hwm}", hwm=g("hwm")) if hb else (
            say("append {index}", index=g("first")) if g("first") == g("last")
            else say("append {first}–{last}", first=g("first"), last=g("last")))
        receipt = _receipt(self.events, i, dst, REQUEST_RECEIPTS,
                           lambda r: r.get("from") == node and r.get("prev_index") == prev
                           and (r.get("type") == REPLICATION_REJECTED or (r.get("first"), r.get("last")) == span))
        self.send(i, node, dst, label, "heartbeat" if hb else "request", gen, receipt)

    def received(self, i: int, e: dict, node: str, gen: int) -> None:
        hb = _heartbeat(e)
        if hb and not self.heartbeats:
            return
        label = say("♥ ok") if hb else say("ack {index}", index=e.get("last"))
        self.send(i, node, e.get("from"), label, "heartbeat" if hb else "response", gen, -1)

    def rejected(self, i: int, e: dict, node: str, gen: int) -> None:
        self.send(i, node, e.get("from"), say("✗ differs at {index}", index=e.get("prev_index")), "refusal", gen, -1)

    def campaign(self, i: int, e: dict, node: str, gen: int) -> None:
        election, generation = e.get("type") == ELECTION_STARTED, e.get("generation")
        answers = (VOTE_GRANTED, VOTE_DENIED) if election else (PREVOTE_GRANTED, PREVOTE_DENIED)
        label = say("vote? g{generation}", generation=generation) if election else \
            say("could I win g{generation}?", generation=generation)
        for other in self.d.nodes:
            if other != node:
                receipt = _receipt(self.events, i, other, answers,
                                   lambda r: r.get("candidate") == node and r.get("generation") == generation)
                self.send(i, node, other, label, "vote", generation or gen, receipt)

    def answer(self, i: int, e: dict, node: str, gen: int) -> None:
        self.send(i, node, e.get("candidate"), ANSWERS[e.get("type")], "vote", gen, -1)

    def leader(self, i: int, e: dict, node: str, gen: int) -> None:
        self.put(i, Mark(node, self.take(i), say("★ leader g{generation}", generation=e.get("generation")), "leader"))

    def append(self, i: int, e: dict, node: str, gen: int) -> None:
        text = say("{payload} at {index}", payload=e.get("payload") or "?", index=e.get("index"))
        if e.get("request") and e.get("request") not in self.acked:
            text = say("{entry}, not acknowledged", entry=text)
        self.put(i, Mark(node, self.take(i), text, "append"))

    def hwm(self, i: int, e: dict, node: str, gen: int) -> None:
        self.put(i, Mark(node, self.take(i), say("HWM {hwm}", hwm=e.get("hwm")), "hwm"))

    def truncated(self, i: int, e: dict, node: str, gen: int) -> None:
        removed = e.get("removed") or []
        what = Listed(str(self.payload_of.get(r[2], r[2])) if len(r) > 2 else str(r[0]) for r in removed[:4])
        self.put(i, Mark(node, self.take(i), say("✂ truncates from {index}: {entries}", index=e.get("from_index"),
                                                 entries=what), TRUNCATED))

    def started(self, i: int, e: dict, node: str, gen: int) -> None:
        if e.get("boot", 0) and node in self.down_since:
            self.up(node, i, self.take(i))

    def answered(self, i: int, e: dict) -> None:
        """A client's answer draws nothing, unless it is a stale read's: marked on the node that refused it."""
        stale = self.stale
        if stale is not None and stale.node in self.known:
            label = say("✗ stale read {index}: mark {hwm}, leader {leader} {leader_hwm}", index=stale.index,
                        hwm=stale.hwm, leader=stale.leader, leader_hwm=stale.leader_hwm) \
                if stale.leader is not None else say("✗ stale read {index}: mark {hwm}", index=stale.index,
                                                     hwm=stale.hwm)
            self.put(i, Mark(stale.node, self.take(i), label, "stale"))


ACROSS = (LINK_CUT, LINK_HEALED, STEP)  # the cluster's events drawn across every line (the others, on their target's)
ANSWERS = {VOTE_GRANTED: say("vote ✓"), VOTE_DENIED: say("vote ✗"), PREVOTE_GRANTED: say("pre-vote ✓"),
           PREVOTE_DENIED: say("pre-vote ✗")}
# What each kind draws: the cluster's events (a cut or a healed link, a node killed, restarted, paused or resumed,
# a scenario's step), then a node's own (messages, votes, leadership, appends, its mark, truncations, a reboot).
ON_CLUSTER = {LINK_CUT: _Builder.link, LINK_HEALED: _Builder.link, NODE_KILLED: _Builder.killed,
              NODE_RESTARTED: _Builder.restarted, NODE_PAUSED: _Builder.paused, NODE_RESUMED: _Builder.paused,
              STEP: _Builder.step, CLIENT_ANSWER: _Builder.answered}
ON_NODE = {REPLICATION_SENT: _Builder.sent, REPLICATION_RECEIVED: _Builder.received,
           REPLICATION_REJECTED: _Builder.rejected, ELECTION_STARTED: _Builder.campaign,
           PREVOTE_STARTED: _Builder.campaign, **{kind: _Builder.answer for kind in ANSWERS},
           BECAME_LEADER: _Builder.leader, LEADER_APPEND: _Builder.append, HWM_CHANGED: _Builder.hwm,
           TRUNCATED: _Builder.truncated, NODE_STARTED: _Builder.started}
# The kinds that draw no mark of their own (the builder may still read them, as it reads which writes were acked):
# with ON_CLUSTER and ON_NODE, every declared kind (tests/test_sequence.py holds it), so a new kind is placed here.
NO_MARK = frozenset({
    ev.BECAME_FOLLOWER, ev.CAUGHT_UP, ev.CLIENT_READ, ev.CLIENT_WRITE, ev.CLIENT_WRITE_FAILED, ev.CLOCKS_HELD,
    ev.CLOCKS_RELEASED, ev.CLUSTER_STARTED, ev.CLUSTER_STOPPED, ev.DELAY_SET, ev.DISK_FULL, ev.DISK_OK, ev.DROP_SET,
    ev.EPOCH_ANSWER, ev.EPOCH_QUERY, ev.EPOCH_TRUNCATION, ev.EXPECTATION, ev.FOLLOWER_APPEND, ev.FSYNC_FAIL,
    ev.GENERATION_CHANGED, ev.LOG_PERSISTED, ev.LOG_SNAPSHOT, ev.MATCH_INDEX_UPDATED, ev.NEXT_INDEX_BACKED_UP,
    ev.NODE_EXITED, ev.NODE_STOPPED, ev.READ_FAILED, ev.READ_INDEX, ev.READ_REFUSED, ev.READ_SERVED,
    ev.RESPONSE_IGNORED, ev.RULE_BROKEN, ev.SETTINGS_CHANGED, ev.STUDENT_CALL, ev.TRUNCATION_REFUSED,
    ev.WAL_RECOVERED, ev.WAL_TRUNCATED, ev.WRITE_ACKED, ev.WRITE_FAILED, ev.WRITE_REQUESTED,
})


def sequence_svg(events: list[dict], *, heartbeats: bool = False, lang: str | None = None, upto: int | None = None,
                 nodes: list[str] | None = None, title: str | None = None, max_rows: int = MAX_ROWS,
                 width: int | None = None, cursor: bool = False, numbers: list[int] | None = None) -> str:
    """An SVG document of `events` (in trace order; up to `upto` of them, the rest only tell what was in flight).
    `lang` says the labels in that language; `nodes` names the lines (default: the trace's own); `width` spreads
    the lines over that many pixels (a page's own width).

    `cursor`: every row of the events, for a page to cut at any event (web/static/onefile.js): each element says
    the number of its event (`numbers`, default 1, 2, 3, ...) and its row, and an arrow that lands on a later row
    also says the number of the event it lands with and where it ends while still in flight."""
    return draw(build(list(events), heartbeats, upto, nodes, numbers), lang=lang, title=title, max_rows=max_rows,
                cursor=cursor, width=width)


def draw(d: Diagram, *, lang: str | None = None, title: str | None = None, max_rows: int = MAX_ROWS,
         cursor: bool = False, width: int | None = None) -> str:
    """A diagram (`build`) as an SVG document, its labels in `lang` (sequence_svg says the rest)."""
    first = 0 if cursor else max(0, d.rows - max_rows)  # keep the newest rows
    n = max(1, len(d.nodes))
    col_w = max(COL_W, (int(width) - LEFT) // n) if width else COL_W
    width = LEFT + col_w * n
    height = TOP + ROW_H * (d.rows - first + 2) + 24  # the names again at the foot: a long diagram scrolls
    x = {name: LEFT + col_w * k + col_w // 2 for k, name in enumerate(d.nodes)}
    y = lambda r: TOP + ROW_H * (r - first)  # noqa: E731
    t = lambda s: escape(str(localize(s, lang) if lang else s))  # noqa: E731
    geometry = f' data-top="{TOP}" data-row-h="{ROW_H}" data-left="{LEFT}" data-col-w="{col_w}"' if cursor else ""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="sequence" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, sans-serif" font-size="12"{geometry}>',
           "<defs><marker id=\"seq-head\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"5\" "
           "markerHeight=\"5\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"context-stroke\"/>"
           "</marker></defs>",
           f'<rect width="{width}" height="{height}" fill="#fff"/>']
    if title:
        out.append(f'<title>{t(title)}</title>')
    for name in d.nodes:
        label = f'text-anchor="middle" font-size="18" font-weight="700">{escape(name)}</text>'
        out.append(f'<g class="node" data-node="{escape(name)}" data-x="{x[name]}"><text x="{x[name]}" y="24" {label}'
                   f'<line class="life" x1="{x[name]}" y1="{TOP - 12}" x2="{x[name]}" y2="{height - 30}" '
                   f'stroke="#9aa3ad" stroke-width="2"/><text class="foot" x="{x[name]}" y="{height - 8}" {label}</g>')
        for (a, b), (since, until) in zip(d.down.get(name, []), d.down_n.get(name, [])):
            if b < first:
                continue
            numbered = (f' data-n="{since}" data-row="{a:g}" data-row-to="{b:g}"'
                        + (f' data-until="{until}"' if until is not None else "")) if cursor else ""
            out.append(f'<line class="down" x1="{x[name]}" y1="{y(max(a, first))}" x2="{x[name]}" y2="{y(b)}" '
                       f'stroke="#fff" stroke-width="4" stroke-dasharray="4 4"{numbered}/>')
    shown = [a for a in d.arrows if a.row >= first]
    heads = [head_box(x[a.dst], y(a.end)) for a in shown if a.end is not None]
    badges = []
    for m in d.marks:
        if m.row < first:
            continue
        if m.node is not None:
            w = _width(str(localize(m.label, lang) if lang else m.label)) + 10
            badges.append((x[m.node] - w / 2, y(m.row) - MARK_H / 2, w, MARK_H))
        if not cursor:
            out.append(_mark(m, x, y(m.row), width, t))
            continue
        # A row of cuts (or heals) reads as far as the cursor: one version of it per link, each until the next.
        for k in range(len(m.ns)) if len(m.ns) > 1 else [None]:
            mark = m if k is None else replace(m, links=m.links[:k + 1])
            gone = f' data-gone="{m.ns[k + 1]}"' if k is not None and k + 1 < len(m.ns) else ""
            n = m.n if k is None else m.ns[k]
            out.append(_mark(mark, x, y(m.row), width, t, f' data-n="{n}" data-row="{m.row:g}"{gone}'))
    # One message to many (a candidate's votes) is labelled once, on its longest arrow: the same words twice on
    # one row would overlap.
    longest: dict[tuple, Arrow] = {}
    for a in d.arrows:
        key = (a.src, a.row, str(a.label))
        if key not in longest or abs(x[a.dst] - x[a.src]) > abs(x[longest[key].dst] - x[longest[key].src]):
            longest[key] = a
    for a in shown:
        labelled = longest[(a.src, a.row, str(a.label))] is a
        out.append(_arrow(a, x, y, t, labelled=labelled, free=heads + badges, numbered=cursor))
    out.append("</svg>")
    return "\n".join(out)


# Where along its arrow a label is tried, the middle first, then nearer one end or the other; on the line, then
# just above it.
LABEL_AT = [(k, lift) for lift in (0, 9) for k in (0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9)]


def _crosses(a: tuple, b: tuple) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def head_box(x: float, y: float) -> tuple:
    """The box an arrowhead that ends at (x, y) takes, whichever way it points."""
    return (x - HEAD_ALONG, y - HEAD_ACROSS, 2 * HEAD_ALONG, 2 * HEAD_ACROSS)


def label_box(text: str, lx: float, ly: float) -> tuple:
    """The box an arrow's label takes (11 px type, centred on lx, its baseline at ly)."""
    w = _width(text) * 11 / 12
    return (lx - w / 2, ly - 10, w, 13)


def _width(text: str) -> int:
    """About how wide `text` is in the diagram's 12 px bold type (a Han character twice a Latin one)."""
    return sum(13 if ord(c) >= 0x2E80 else 7 for c in text)


STYLE = {"killed": ("#b3261e", "#fff"), "restarted": ("#1b7f3b", "#fff"), "paused": ("#6b4b00", "#fff0c2"),
         "leader": ("#0072B2", "#fff"), "append": ("#333", "#f1f3f5"), "hwm": ("#111", "#fff"),
         TRUNCATED: ("#b3261e", "#fff"), "ack": ("#1b7f3b", "#fff"), "read": ("#333", "#fff"),
         "stale": ("#b3261e", "#fff")}


def _mark(m: Mark, x: dict, top: float, width: int, t, numbered: str = "") -> str:
    if m.links:
        links = Listed(f"{a}→{b}" for a, b in m.links)
        m.label = say("✂ cut: {links}", links=links) if m.kind == LINK_CUT else say("healed: {links}", links=links)
    label = t(m.label)
    if m.node is None:
        color = "#b3261e" if m.kind == LINK_CUT else "#1b7f3b" if m.kind == LINK_HEALED else "#0072B2"
        return (f'<g class="mark {m.kind}"{numbered}><line x1="{LEFT - 60}" y1="{top}" x2="{width}" y2="{top}" '
                f'stroke="{color}" '
                f'stroke-dasharray="6 4" opacity=".6"/><text x="4" y="{top - 3}" fill="{color}" font-weight="700" '
                f'font-size="11">{label}</text></g>')
    fg, bg = STYLE.get(m.kind, ("#333", "#fff"))
    filled = m.kind in ("killed", "restarted", "leader", "hwm", TRUNCATED, "stale")
    w = _width(html.unescape(label)) + 10
    cx = x[m.node]
    return (f'<g class="mark {m.kind}" data-node="{escape(m.node)}"{numbered}><rect x="{cx - w / 2:.1f}" '
            f'y="{top - MARK_H / 2}" width="{w}" height="{MARK_H}" rx="4" fill="{fg if filled else bg}" stroke="{fg}"/>'
            f'<text x="{cx}" y="{top + 4}" text-anchor="middle" fill="{bg if filled else fg}" font-weight="700">'
            f'{label}</text></g>')


def _arrow(a: Arrow, x: dict, y, t, labelled: bool = True, free: list | None = None, numbered: bool = False) -> str:
    x0, x1, y0 = x[a.src], x[a.dst], y(a.row)
    color = {"response": "#1b7f3b", "refusal": "#b3261e", "vote": "#4b2a87", "heartbeat": "#9aa3ad"}.get(
        a.kind, COLORS[((a.gen - 1) % 7) + 1] if a.gen else COLORS[0])
    lost = a.end is None
    if lost:  # part of the way, then a cross
        xe, ye = x0 + (x1 - x0) * 0.4, y0 + ROW_H * 0.4  # (not on a line between: it reached nobody)
    else:
        xe, ye = x1, y(a.end)
    dash = ' stroke-dasharray="5 3"' if a.kind == "heartbeat" or a.flying else ""
    head = "" if lost else ' marker-end="url(#seq-head)"'
    cls = f'msg {a.kind}{" lost" if lost else ""}{" flying" if a.flying else ""}'
    more = ""
    if numbered:  # its event, its row, and where it lands: before then it is drawn in flight, as `upto` draws it
        more = f' data-n="{a.n}" data-row="{a.row:g}"'
        if a.arrive is not None and not lost:
            fly = y(a.row + 0.5)  # (an answer lands half a row on)
            more += f' data-arrive="{a.arrive}" data-fly="{fly:.1f} {y0 + (fly - y0) * 0.5 - 4:.1f}"'
    parts = [f'<g class="{cls}" data-src="{escape(a.src)}" data-dst="{escape(a.dst)}"{more}>',
             f'<line x1="{x0}" y1="{y0}" x2="{xe:.1f}" y2="{ye:.1f}" stroke="{color}" stroke-width="2"{dash}{head}/>']
    if lost:
        parts.append(f'<path class="cross" d="M{xe - 6:.1f},{ye - 6:.1f} l12,12 m0,-12 l-12,12" stroke="#b3261e" '
                     f'stroke-width="3"/>')
    if not labelled:
        parts.append("</g>")
        return "".join(parts)
    # Along the arrow (a lost message's: the stretch it travelled), the first place where the label covers no
    # arrowhead and no mark.
    text = html.unescape(t(a.label))
    spots = [(x0 + (xe - x0) * k, y0 + (ye - y0) * (0.5 if lost else k) - 4 - lift) for k, lift in LABEL_AT]
    lx, ly = next((spot for spot in spots if not any(_crosses(label_box(text, *spot), box) for box in free or ())),
                  spots[0])
    parts.append(f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="middle" fill="{color}" '
                 f'font-size="11" paint-order="stroke" stroke="#fff" stroke-width="3">{t(a.label)}</text></g>')
    return "".join(parts)


def around(events: list[dict], position: int, before: int = 80, after: int = 20) -> list[dict]:
    """The events to draw around event number `position` (0-based, in `events`): `before` events before it,
    `after` after, and the run's cluster_started (which names the lines). For a grader's first violation or an
    explorer's counterexample."""
    lo, hi = max(0, position - before), min(len(events), position + after + 1)
    head = [e for e in events[:lo] if e.get("type") == CLUSTER_STARTED][:1]
    return head + list(events[lo:hi])


def write_sequence_svg(trace_dir, out, *, heartbeats: bool = False, lang: str | None = None,
                       start: int = 0, end: int | None = None) -> Path:
    """Draw the trace directory's events [start:end] (trace order) to the file `out`; answers its path."""
    from lab.ports.trace import read_trace

    trace = read_trace(trace_dir)
    events = list(trace.events)
    window = events[start:end]
    starts = [e for e in events[:start] if e.get("type") == CLUSTER_STARTED]  # the lines' names and order
    out = Path(out)
    out.write_text(sequence_svg(starts[:1] + window, heartbeats=heartbeats, lang=lang,
                                title=str(trace_dir)), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m lab.i18n.sequence", description="Draw a trace directory's messages as "
                                "a message-sequence diagram (SVG).")
    p.add_argument("trace_dir")
    p.add_argument("out", help="the SVG file to write")
    p.add_argument("--heartbeats", action="store_true", help="draw heartbeats too")
    p.add_argument("--start", type=int, default=0, help="first event (0-based, trace order)")
    p.add_argument("--end", type=int, default=None, help="event after the last one drawn")
    p.add_argument("--lang", default=None, help="language of the labels (en, es, zh)")
    args = p.parse_args(argv)
    from lab.ports.trace import TraceError

    try:
        path = write_sequence_svg(args.trace_dir, args.out, heartbeats=args.heartbeats, lang=args.lang,
                                  start=args.start, end=args.end)
    except (TraceError, OSError) as exc:
        print(f"lab.i18n.sequence: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
