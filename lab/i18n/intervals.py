"""The clients' history as a picture (Porcupine's page): one row per client session, each operation a bar from its
request to its answer on a time axis, a stale read in red with a line back to the acknowledgement it came after, a
dirty read hatched, an operation never answered open to the right. SVG, its labels in the reader's language;
`hwm-lab history --svg` writes it and the dashboard's replay (a one-file page too) shows it.

The axis is ordinal, as Porcupine's is: every instant where an operation begins or ends is one step, so that
operations of the same simulated tick stay apart and a long quiet stretch takes no room; the seconds are written
under it where they change.
"""

from __future__ import annotations

from html import escape

from lab.harness.history import DIRTY, READ, REFUSED, SERVED, STALE, UNANSWERED, History, Operation
from lab.i18n import Listed, localize, say

LEFT, TOP, ROW_H, BAR_H, STEP, MOST_OPS = 90, 74, 34, 20, 56, 400
COLORS = {"write": ("#0072B2", "#e6f1f8"), SERVED: ("#1b7f3b", "#e8f4ec"), REFUSED: ("#5b6470", "#f1f3f5"),
          STALE: ("#b3261e", "#fbe9e7"), DIRTY: ("#6a1b9a", "#f3e5f5"), UNANSWERED: ("#9aa3ad", "#ffffff")}


def shown_operations(h: History, most: int = MOST_OPS) -> list[Operation]:
    """The operations drawn: all of a short history; of a long one, `most` around its first stale or dirty read (a
    chaos run's), else its last."""
    ops = h.operations
    if len(ops) <= most:
        return list(ops)
    marked = next((k for k, op in enumerate(ops) if op.verdict in (STALE, DIRTY)), None)
    end = len(ops) if marked is None else min(len(ops), marked + most // 2)
    return ops[max(0, end - most):end]


def _label(op: Operation):
    if op.kind != READ:
        if op.ok:
            return say("write {payload} → {index}", payload=op.payload or "?", index=op.index)
        return say("write {payload}: not acknowledged", payload=op.payload or "?")
    values = dict(index=op.index, node=op.node or op.target or "?", hwm=op.hwm)
    if op.verdict == STALE:
        return say("read {index} at {node}: stale (mark {hwm})", **values)
    if op.verdict == DIRTY:
        return say("read {index} at {node}: dirty (mark {hwm})", **values)
    if op.verdict == SERVED:
        return say("read {index} at {node}: served", **values)
    if op.verdict == REFUSED:
        return say("read {index} at {node}: refused (mark {hwm})", **values)
    return say("read {index} at {node}: no answer from a mark", **values)


def _short(op: Operation):
    """What a bar holds (clipped to it; its whole sentence is its tooltip)."""
    if op.kind != READ:
        return f"{op.payload or '?'} → {op.index}" if op.ok else f"{op.payload or '?'} …"
    where = f"{op.index}@{op.node or op.target or '?'}"
    if op.verdict == STALE:
        return say("{read} stale", read=where)
    if op.verdict == DIRTY:
        return say("{read} dirty", read=where)
    return f"{where} {'✓' if op.verdict == SERVED else '✗' if op.verdict == REFUSED else '…'}"


def _rows(ops: list[Operation]) -> list[tuple[str, list[Operation]]]:
    """Each session's operations, on as many rows as its operations overlap (a client that does not wait)."""
    rows: list[tuple[str, list[Operation]]] = []
    for client in sorted({op.client for op in ops}):
        lanes: list[list[Operation]] = []
        for op in (o for o in ops if o.client == client):
            lane = next((lane for lane in lanes if lane[-1].end is not None and lane[-1].end < op.start), None)
            if lane is None:
                lanes.append(lane := [])
            lane.append(op)
        rows += [(client if k == 0 else "", lane) for k, lane in enumerate(lanes)]
    return rows


def intervals_svg(h: History, *, lang: str | None = None, title: str | None = None, most: int = MOST_OPS) -> str:
    t = lambda s: escape(str(localize(s, lang) if lang else s))  # noqa: E731
    ops = shown_operations(h, most)
    instants = sorted({op.start for op in ops} | {op.end for op in ops if op.end is not None})
    x_of = {instant: LEFT + STEP * (k + 1) for k, instant in enumerate(instants)}
    right = LEFT + STEP * (len(instants) + 2)
    rows = _rows(ops)
    width, height = right + 20, TOP + ROW_H * len(rows) + 40
    y_of = {id(op): TOP + ROW_H * r for r, (_, lane) in enumerate(rows) for op in lane}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="intervals" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, sans-serif" font-size="12">',
           '<defs><pattern id="iv-dirty" width="6" height="6" patternUnits="userSpaceOnUse" '
           'patternTransform="rotate(45)"><rect width="3" height="6" fill="#e1bee7"/></pattern></defs>',
           f'<rect width="{width}" height="{height}" fill="#fff"/>']
    if title:
        out.append(f"<title>{escape(title)}</title>")
    out.append(f'<text x="8" y="20" font-weight="700" font-size="14">{t(_heading(h, len(ops)))}</text>')
    out += _legend(t)
    for r, (client, _) in enumerate(rows):
        y = TOP + ROW_H * r
        out.append(f'<line x1="{LEFT}" y1="{y + BAR_H / 2}" x2="{right}" y2="{y + BAR_H / 2}" stroke="#eef0f2"/>')
        if client:
            out.append(f'<text class="session" x="8" y="{y + BAR_H / 2 + 4}" font-weight="700">{escape(client)}</text>')
    out += _axis(instants, x_of, TOP + ROW_H * len(rows) + 12)
    for op in ops:  # a stale read's arc back to the acknowledgement it came after, under the bars
        if op.verdict == STALE and op.acked_before is not None and op.acked_before.end in x_of:
            write, y = op.acked_before, y_of[id(op)]
            ax, bx = x_of[write.end], x_of[op.start]
            ay = y_of.get(id(write), y)
            out.append(f'<path class="acked-before" d="M{ax},{ay} Q{(ax + bx) / 2},{min(ay, y) - 18} {bx},{y}" '
                       f'fill="none" stroke="#b3261e" stroke-width="1.5" stroke-dasharray="4 3"/>')
    for op in ops:
        out += _bar(op, x_of, right, y_of[id(op)], t)
    out.append("</svg>")
    return "\n".join(out)


def _heading(h: History, shown: int):
    stale, values = len(h.of_verdict(STALE)), dict(ops=len(h.operations), shown=shown)
    if h.linearizable is False:
        return say("{ops} operations ({shown} drawn), {stale} stale reads: not linearizable at indexes {indexes}",
                   stale=stale, indexes=Listed(str(i) for i in h.not_linearizable()[:8]), **values)
    if h.linearizable:
        return say("{ops} operations ({shown} drawn), {stale} stale reads: linearizable", stale=stale, **values)
    return say("{ops} operations ({shown} drawn), {stale} stale reads: linearizability not decided", stale=stale,
               **values)


def _bar(op: Operation, x_of: dict, right: float, y: float, t) -> list[str]:
    fg, bg = COLORS["write"] if op.kind != READ else COLORS.get(op.verdict, COLORS[UNANSWERED])
    x0 = x_of[op.start]
    x1 = x_of[op.end] if op.end is not None else right
    fill = "url(#iv-dirty)" if op.verdict == DIRTY else bg
    open_end = ' stroke-dasharray="5 3"' if op.end is None else ""
    cls = "op " + (op.verdict or "write")
    seconds = f"{op.start[0]:.3f}–{op.end[0]:.3f} s" if op.end is not None else f"{op.start[0]:.3f} s –"
    w = max(8, x1 - x0 + 8)
    return [f'<g class="{cls}" data-request="{escape(op.request)}"><title>{t(_label(op))} ({seconds})</title>',
            f'<rect x="{x0 - 4}" y="{y}" width="{w}" height="{BAR_H}" rx="4" fill="{fill}" '
            f'stroke="{fg}" stroke-width="{2 if op.verdict in (STALE, DIRTY) else 1}"{open_end}/>',
            f'<svg x="{x0 - 2}" y="{y}" width="{max(4, w - 4)}" height="{BAR_H}"><text x="1" y="{BAR_H / 2 + 4}" '
            f'fill="{fg}" font-size="11" font-weight="{700 if op.verdict == STALE else 400}">{t(_short(op))}</text>'
            f'</svg></g>']


def _legend(t) -> list[str]:
    out, x = [], 8
    for key, text in (("write", say("write")), (SERVED, say("served")), (REFUSED, say("refused")),
                      (STALE, say("stale")), (DIRTY, say("dirty")), (UNANSWERED, say("not answered by a mark"))):
        fg, bg = COLORS[key]
        label = t(text)
        fill = "url(#iv-dirty)" if key == DIRTY else bg
        out.append(f'<rect x="{x}" y="30" width="12" height="12" rx="2" fill="{fill}" stroke="{fg}"/>'
                   f'<text x="{x + 16}" y="40" font-size="11" fill="{fg}">{label}</text>')
        x += 28 + 7 * len(str(label))
    return out


def _axis(instants: list, x_of: dict, y: float) -> list[str]:
    """Seconds under the steps where they change (at most one label per 80 px)."""
    out, last_x, last = [], -1e9, None
    for instant in instants:
        x, seconds = x_of[instant], round(instant[0], 2)
        if seconds != last and x - last_x >= 80:
            out.append(f'<text class="tick" x="{x}" y="{y + 12}" text-anchor="middle" fill="#5b6470">{seconds:g} s'
                       f'</text><line x1="{x}" y1="{y - 4}" x2="{x}" y2="{y + 2}" stroke="#9aa3ad"/>')
            last_x, last = x, seconds
    return out
