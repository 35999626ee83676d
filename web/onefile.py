"""A run in one HTML file: the dashboard's own page and scripts, the replay's frames built ahead by the server's own
code (web.fold, web.frames, web.narrate) and the sequence view it draws, played by a small data source in place of
Socket.IO (static/onefile.js). Any trace directory, every language of the lab; no server, no network, no other file.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import jinja2

from lab import i18n
from lab.core.events import CLUSTER_STARTED, RULE_BROKEN, STEP
from lab.i18n import LANGUAGES, localize, say
from lab.harness import history
from lab.i18n import sequence
from lab.i18n.intervals import intervals_svg
from web.fold import ClusterFold, Replay, slim
from web.frames import LOG_WINDOW, RECENT, SEQUENCE_EVENTS, localize_tree, replay_snapshot
from web.live import STORY, STORY_HEAD, select_events
from web.kinds import FEED_KINDS
from web.scripts import ENTRY, MODULES, PREFIX, TEXT

# The dashboard page's own scripts (web.scripts): text.js, run first, then its modules, each named in the import
# map that static/onefile.js writes.
SCRIPTS = (TEXT, *(f"{name}.js" for name in MODULES))

HERE = Path(__file__).resolve().parent
STATIC, TEMPLATES = HERE / "static", HERE / "templates"
EVENTS_KEPT = 3000  # a longer run keeps the live feed's choice of its events (every rare one first); the rest counted
TAGS = {"zh": "zh-Hans"}  # the page's lang attribute where it is not the code (as web.app's index)
OUTER = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)  # the file around the parts
UNPACKED = say("This file unpacks itself with a browser's DecompressionStream: open it in a browser of 2023 or "
               "later.")


@dataclass
class OneFile:
    html: str
    events: int  # events of the run
    kept: int  # events the file shows (the rest are counted by type)
    path: Path | None = None

    @property
    def size(self) -> int:
        return len(self.html.encode("utf-8"))


def kept_positions(events: list[dict], keep: int = EVENTS_KEPT) -> list[int]:
    """The numbers (1-based) of the events a file shows: every one of a short run; of a longer one, those a page
    of the live dashboard is sent (web.live: every rare event first, then the newest routine ones), and the run's
    first story events, which a late page is never denied either."""
    if len(events) <= keep:
        return list(range(1, len(events) + 1))
    light = [{"n": n, "type": e.get("type")} for n, e in enumerate(events, start=1)]
    head = {e["n"] for e in light if e["type"] in STORY}
    head = set(sorted(head)[:min(STORY_HEAD, keep // 4)])
    kept, _ = select_events([e for e in light if e["n"] not in head], keep - len(head))
    return sorted({e["n"] for e in kept} | head)


def _frames(replay: Replay, positions: list[int], log_window: int) -> dict:
    """Every shown position's snapshot, as web.frames makes it for a page; the nodes, clusters and counts that
    repeat from one frame to the next are kept once and named by their place."""
    tables: dict[str, dict[str, int]] = {"nodes": {}, "clusters": {}, "skipped": {}}
    values: dict[str, list] = {table: [] for table in tables}
    last: dict[tuple, tuple] = {}  # (table, slot) -> (value, its place): most values are the frame before's

    def ref(table: str, value, slot=None) -> int:
        before = last.get((table, slot))
        if before is not None and before[0] == value:
            return before[1]
        key = json.dumps(value, sort_keys=True, ensure_ascii=False)
        if key not in tables[table]:
            tables[table][key] = len(values[table])
            values[table].append(value)
        last[(table, slot)] = (value, tables[table][key])
        return tables[table][key]

    fold = ClusterFold(list(replay.meta.get("nodes") or []),
                       {k: replay.meta[k] for k in ("truncation", "fsync", "impl") if k in replay.meta})
    wanted, skipped, applied, frames, base = set(positions), Counter(), 0, [], None
    for position in [0, *positions]:
        for event in replay.events[applied:position]:
            fold.apply(event)
        skipped.update(e["type"] for n, e in enumerate(replay.events[applied:position], start=applied + 1)
                       if n not in wanted)
        applied = position
        snapshot = replay_snapshot(replay, position, fold.status(log_window), [], log_window=log_window,
                                   skipped=skipped)
        frames.append([position, snapshot["time"], snapshot["play"], ref("clusters", snapshot["cluster"]),
                       [ref("nodes", n, n["id"]) for n in snapshot["nodes"]],
                       ref("skipped", snapshot["skipped_by_type"])])
        base = {k: v for k, v in snapshot.items() if k not in VARYING}
    return {"base": base, "frames": frames, **values}


# What changes from one frame to the next (the rest of a snapshot is the same in all of a replay's frames).
VARYING = ("seq", "sent", "position", "time", "play", "events_next", "nodes", "cluster", "events", "skipped",
           "skipped_by_type", "step_now")


def _sequence_window(replay: Replay) -> tuple[int, int]:
    """The stretch of events the sequence view draws (0-based, end excluded): all of a short run; of a longer
    one, as much as the dashboard's view draws (SEQUENCE_EVENTS), ending a little after the broken rule if there
    is one, else at the run's end."""
    total = len(replay.events)
    if total <= SEQUENCE_EVENTS:
        return 0, total
    broken = next((i for i, e in enumerate(replay.events) if e["type"] == RULE_BROKEN), None)
    end = total if broken is None else min(total, broken + 1 + SEQUENCE_EVENTS // 10)
    return max(0, end - SEQUENCE_EVENTS), end


def _sequences(replay: Replay, langs) -> dict:
    lo, hi = _sequence_window(replay)
    head = [(n, e) for n, e in enumerate(replay.events[:lo], start=1) if e["type"] == CLUSTER_STARTED][:1]
    numbers = [n for n, _ in head] + list(range(lo + 1, hi + 1))
    events = [e for _, e in head] + replay.events[lo:hi]
    nodes = sorted(replay.final.nodes)
    drawn = {name: sequence.build(events, heartbeats, None, nodes, numbers)  # one diagram, said in each language
             for name, heartbeats in (("plain", False), ("heartbeats", True))}
    return {"from": lo + 1, "to": hi, **{lang: {name: sequence.draw(d, lang=lang, cursor=True)
                                                for name, d in drawn.items()} for lang in langs}}


def _info(replay: Replay, lang: str, shown: int, broken: dict | None) -> dict:
    info = replay.info()
    info["run_dir"] = Path(replay.run_dir).name  # the reader's disk is not the writer's
    info["shown"] = shown
    if broken is not None:
        info["broken"] = broken
    return localize_tree(info, lang)


def broken_at(replay: Replay, node: str, seq: int, text: str) -> dict | None:
    """Where a rule broke that the run does not say itself (a grader's check found it): the event `seq` of `node`,
    and the scenario step it falls in, which the timeline marks as the explorer's broken step."""
    n = next((i for i, e in enumerate(replay.events, start=1) if e.get("node") == node and e.get("seq") == seq),
             None)
    if n is None:
        return None
    steps = sum(1 for e in replay.events[:n] if e["type"] == STEP)
    return {"n": n, "play": replay.play_time(n), "step": steps - 1 if steps else None, "text": text}


def run_data(replay: Replay, *, keep: int = EVENTS_KEPT, log_window: int = LOG_WINDOW,
             langs=tuple(LANGUAGES), broken: dict | None = None) -> dict:
    """What the page plays, as plain JSON: the frames, the events shown (their words in every language), the
    sequence view, the run's description (with `broken`: where a rule broke, web.onefile.broken_at)."""
    positions = kept_positions(replay.events, keep)
    events = []
    for n in positions:
        event = slim(replay.events[n - 1])
        event["n"] = n
        if n in replay.stale_reads:
            event["stale"] = True
        events.append(event)
    texts = {lang: [localize(replay.texts[n - 1], lang) for n in positions] for lang in langs}
    frames = _frames(replay, positions, log_window)
    # a node's reason for stopping is a sentence (web.frames.localized_frame): said in each language
    frames["exit_reasons"] = {lang: {i: localize(n["exit_reason"], lang) for i, n in enumerate(frames["nodes"])
                                     if n.get("exit_reason")} for lang in langs}
    found = history.check(replay.events)
    return {"recent": RECENT, **frames, "events": events, "texts": texts,
            "info": {lang: _info(replay, lang, len(positions), broken) for lang in langs},
            "sequence": _sequences(replay, langs),
            "history": {lang: intervals_svg(found, lang=lang) for lang in langs}}


@functools.lru_cache(maxsize=2)
def packed_page(langs: tuple[str, ...]) -> str:
    """The page part of a file, packed: the same in every file a process writes (a grade writes many)."""
    return packed(page_part(langs))


def page_part(langs) -> dict:
    """The page, the same in every file: the dashboard's style sheets and scripts (web.scripts), and its markup
    (web/templates/index.html, its block `page`), title and catalogue in each language (only the sentences the
    page's script builds: lab.i18n.for_page)."""
    views = {}
    for lang in langs:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                 extensions=["jinja2.ext.i18n"])
        env.install_gettext_translations(i18n.catalogue(lang).gnu(), newstyle=False)
        template = env.get_template("index.html")
        languages = list(LANGUAGES.items())
        context = template.new_context({"mode": "replay", "lang": lang, "languages": languages, "onefile": True})
        views[lang] = {"body": "".join(template.blocks["page"](context)), "tag": TAGS.get(lang, lang),
                       "title": i18n.gettext(lang, "HWM Lab dashboard"),
                       "i18n": {"lang": lang, "room": None, "chosen": None, "languages": dict(languages),
                                "messages": i18n.for_page(lang), "plurals": i18n.plurals_for_page(lang),
                                "kinds": i18n.event_names(lang)}}
    return {"views": views, "kinds": FEED_KINDS,
            "css": "".join((STATIC / name).read_text(encoding="utf-8") for name in ("dashboard.css", "onefile.css")),
            "scripts": [(STATIC / name).read_text(encoding="utf-8") for name in SCRIPTS],
            "modules": {"names": [PREFIX + name for name in MODULES], "entry": PREFIX + ENTRY}}


def packed(value) -> str:
    """JSON, gzip (no time stamp: the same run makes the same file), base64: text that sits in the page."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, 9, mtime=0)).decode("ascii")


def build(source, *, keep: int = EVENTS_KEPT, log_window: int = LOG_WINDOW,
          violation: dict | None = None) -> OneFile:
    """The file of a trace directory (or of a Replay already open): its HTML, and how many events it shows.
    `violation` ({"node", "seq", "text"}): a rule broken at that event, which the timeline marks."""
    replay = source if isinstance(source, Replay) else Replay(source)
    langs = tuple(LANGUAGES)
    broken = broken_at(replay, violation["node"], violation["seq"], violation["text"]) if violation else None
    data = run_data(replay, keep=keep, log_window=log_window, langs=langs, broken=broken)
    page = OUTER.get_template("onefile.html").render(
        run=replay.meta.get("run") or Path(replay.run_dir).name, page=packed_page(langs), data=packed(data),
        loader=(STATIC / "onefile.js").read_text(encoding="utf-8").replace("</script", "<\\/script"),
        unpacked={lang: i18n.gettext(lang, UNPACKED) for lang in langs},
        icon="data:image/svg+xml;base64," + base64.b64encode((STATIC / "favicon.svg").read_bytes()).decode("ascii"))
    return OneFile(page, len(replay.events), len(data["events"]))


def write(source, out, **options) -> OneFile:
    """Build the file and put it at `out`: written aside first, so an interrupted build leaves what was there."""
    built = build(source, **options)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    aside = out.with_name(f".{out.name}.{os.getpid()}.part")
    try:
        aside.write_text(built.html, encoding="utf-8")
        os.replace(aside, out)
    finally:
        aside.unlink(missing_ok=True)
    built.path = out
    return built
