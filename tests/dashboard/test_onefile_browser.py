"""A run in one file (`hwm-lab replay DIR --html FILE`, web/onefile.py) opened from disk in Debian's Chromium with
every request outside the file refused: S1 plays to its end (A, B and C at HWM 4, A's e4 truncated before its
eyes), the sequence view shows it, at 1280x720 and at a phone's width, in the reader's language with the picker;
every frame is the one the dashboard's server sends; the sequence view cut at a cursor is the server's drawing at
that cursor; an explorer's counterexample.html marks the rule broken at its last step. Screenshots go to
test-artifacts/onefile/ (gitignored)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest

from lab.cli import main
from lab.i18n.sequence import sequence_svg
from tests.dashboard.browser import (BROWSER_MARKS, OUTSIDE_VIEWPORT, WATCH_DOOMED, chromium, offline_page,
                                    shots_dir)
from web.fold import Replay
from web.frames import replay_frame

pytestmark = BROWSER_MARKS
SVG = "{http://www.w3.org/2000/svg}"
ARTICLE = "tests.wrong_variants.ex1_article_formula"


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(args))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def s1(tmp_path_factory):
    """`hwm-lab simulate s1 --out D && hwm-lab replay D --html s1.html`, as the issue says."""
    folder = tmp_path_factory.mktemp("onefile")
    assert cli("simulate", "s1", "--out", str(folder / "D"))[0] == 0
    code, said = cli("replay", str(folder / "D"), "--html", str(folder / "s1.html"))
    assert code == 0 and "s1.html: " in said and " KB" in said
    return folder / "D", folder / "s1.html"


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def seek_all(page, positions: list[int]) -> list[dict]:
    """The page's own data source asked for each position, as the dashboard's page asks its server."""
    return page.evaluate("""async (positions) => {
      const socket = window.HWM_SOURCE.connect({}), out = [];
      for (const position of positions) out.push(await new Promise((r) => socket.emit("replay_seek", { position }, r)));
      return out;
    }""", positions)


def test_s1_plays_to_its_end_from_disk_with_the_network_off(s1, browser):
    trace, path = s1
    errors, refused = [], []
    page = offline_page(browser, path, errors, refused)
    assert page.locator(".lane").evaluate_all("ls => ls.map((l) => l.dataset.node)") == ["A", "B", "C"]
    page.evaluate(WATCH_DOOMED)
    page.select_option("#play-speed", "5")
    page.click("#btn-play")
    page.wait_for_function("window.hwmState.position === window.hwmState.total && !window.hwmState.playing")
    # the truncation shows its three phases (doomed, removed, replaced), then the lanes settle
    page.wait_for_function("!document.querySelector('.cell.conflict, .cell.slide-in')", timeout=10_000)
    lanes = page.evaluate("""() => [...document.querySelectorAll('.lane')].map((l) => [l.dataset.node,
        l.querySelector('.mark-label').textContent, [...l.querySelectorAll('.cell .p')].map((p) => p.textContent)])""")
    assert lanes == [[n, "HWM 4", ["e1", "e2", "e3", "e5"]] for n in "ABC"]
    # A's e4 was shown doomed (right of A's own HWM bar) as it was truncated, and never left of it
    assert page.evaluate("window.doomedSeen") > 0 and page.evaluate("window.doomedLeftOfBar") == []
    assert any("A truncated index 4" in t for t in page.locator("#feed li .x").all_text_contents())
    assert page.evaluate(OUTSIDE_VIEWPORT) == []
    page.screenshot(path=str(shots_dir("onefile") / "s1-end-720p.png"))
    page.keyboard.press("q")  # the sequence view, drawn up to the cursor
    page.wait_for_selector("#sequence svg")
    marks = page.locator("#sequence g.mark.truncated").all_text_contents()
    assert marks == ["✂ truncates from 4: e4"]
    assert page.locator("#sequence g.node").evaluate_all("gs => gs.map((g) => g.dataset.node)") == ["A", "B", "C"]
    page.screenshot(path=str(shots_dir("onefile") / "s1-sequence-720p.png"))
    assert errors == [] and refused == []
    # the guard itself: a request for anything outside the file does not get through
    page.evaluate("fetch('other.html').catch(() => null)")
    page.wait_for_timeout(200)
    assert len(refused) == 1 and refused[0].endswith("/other.html"), refused


def test_every_frame_is_the_one_the_dashboards_server_sends(s1, browser):
    trace, path = s1
    errors, refused = [], []
    page = offline_page(browser, path, errors, refused)
    replay = Replay(trace)
    positions = list(range(len(replay) + 1)) + [40, 3, 0]  # on, then back
    for position, got in zip(positions, seek_all(page, positions)):
        want = json.loads(json.dumps(replay_frame(replay, position, log_window=48)))
        got.pop("sent"), want.pop("sent")
        assert got == want, f"position {position}"
    by_time = page.evaluate("""() => new Promise((r) =>
      window.HWM_SOURCE.connect({}).emit("replay_seek", { time: 4.1 }, r))""")
    assert by_time["position"] == replay.position_at_time(4.1)
    assert errors == [] and refused == []


def visible(svg: str) -> list[tuple]:
    """What a sequence drawing shows: each message and mark (its words, ends, and where its arrow ends), its height."""
    root = ET.fromstring(svg)
    shown = []
    for g in root.iter(SVG + "g"):
        classes = set((g.get("class") or "").split())
        if g.get("display") == "none" or not classes & {"msg", "mark"}:
            continue
        line = g.find(SVG + "line")
        shown.append((" ".join(sorted(classes)), g.get("data-src"), g.get("data-dst"), g.get("data-node"),
                      "".join(g.itertext()).strip(), line.get("y2") if "msg" in classes else None,
                      line.get("stroke-dasharray") if "msg" in classes else None))
    return [root.get("height"), *shown]


def test_the_sequence_view_cut_at_a_cursor_is_the_servers_drawing_there(s1, browser):
    trace, path = s1
    errors, refused = [], []
    page = offline_page(browser, path, errors, refused)
    replay = Replay(trace)
    events = replay.events
    in_flight = next(i for i, e in enumerate(events) if e["type"] == "replication_sent" and e["first"] <= e["last"])
    killed = next(i for i, e in enumerate(events) if e["type"] == "node_killed")
    for position in (0, in_flight + 1, killed + 1, killed + 8, len(events) // 2, len(events)):
        for heartbeats in (False, True):
            got = page.evaluate("(url) => window.HWM_SOURCE.sequence(url)",
                                f"sequence.svg?position={position}&heartbeats={int(heartbeats)}")
            ids = sorted(replay.fold_at(position).nodes)
            want = sequence_svg(events, upto=position, nodes=ids, heartbeats=heartbeats)  # as web.app draws it
            assert visible(got) == visible(want), f"position {position}, heartbeats {heartbeats}"
    assert errors == [] and refused == []


def test_the_sequence_view_spreads_over_the_pages_width_as_the_servers_does(s1, browser):
    # (it was drawn 520 px wide in a view of 1,263: the server's drawing spreads its lines over the page's width)
    trace, path = s1
    errors, refused = [], []
    page = offline_page(browser, path, errors, refused)
    page.evaluate("window.hwmSeek({ position: window.hwmState.total })")
    page.wait_for_function("window.hwmState.position === window.hwmState.total")
    page.keyboard.press("q")
    page.wait_for_function("document.querySelectorAll('#sequence svg .node').length === 3")
    drawn, room, xs = page.evaluate("""() => {
      const svg = document.querySelector('#sequence svg');
      return [svg.getBoundingClientRect().width, document.querySelector('#sequence').clientWidth,
              [...svg.querySelectorAll('.node')].map((g) => Number(g.dataset.x))];
    }""")
    assert room > 1000 and drawn >= room * 0.95, (drawn, room)
    gaps = [b - a for a, b in zip(xs, xs[1:])]
    assert max(gaps) - min(gaps) <= 1 and gaps[0] > 300, xs  # the columns spread evenly over the width
    replay = Replay(trace)  # the server's drawing at that width: the same lines, at the same places
    want = sequence_svg(replay.events, upto=len(replay), nodes=sorted(replay.fold_at(len(replay)).nodes),
                        width=int(page.evaluate("document.querySelector('#sequence').clientWidth - 2")))
    assert [float(x) for x in re.findall(r'class="node" data-node="\w" data-x="([\d.]+)"', want)] == \
        pytest.approx(xs, abs=1)
    page.screenshot(path=str(shots_dir("onefile") / "s1-sequence-720p.png"))
    assert errors == [] and refused == []


def test_a_phone_in_spanish_and_the_language_picker(s1, browser):
    trace, path = s1
    errors, refused = [], []
    page = offline_page(browser, path, errors, refused, size="phone", locale="es-ES")  # the browser's language
    assert page.evaluate("document.documentElement.lang") == "es"
    assert page.locator("#btn-play").text_content().strip() == "▶ Reproducir"
    page.evaluate("window.hwmSeek({ position: window.hwmState.total })")
    page.wait_for_function("window.hwmState.position === window.hwmState.total")
    page.wait_for_timeout(400)
    assert page.evaluate(OUTSIDE_VIEWPORT) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.locator(".lane .mark-label").all_text_contents() == ["HWM 4"] * 3
    page.screenshot(path=str(shots_dir("onefile") / "s1-end-phone-es.png"))
    with page.expect_navigation():
        page.select_option("#lang", "zh")  # the picker: the same file, in Chinese
    page.wait_for_function("window.hwmState && window.hwmState.total > 0")
    assert page.evaluate("document.documentElement.lang") == "zh-Hans" and "?lang=zh" in page.url
    assert page.locator("#btn-play").text_content().strip() == "▶ 播放"
    assert errors == [] and refused == []


def test_an_explorers_counterexample_marks_the_rule_broken_at_its_last_step(tmp_path, browser):
    # (the article's formula: its counterexample takes an election, a write and two answers; a gate that serves above
    # the mark breaks its exercise's rule at the first read, one step)
    code, said = cli("explore", "--impl", ARTICLE, "--nodes", "4", "--budget", "20", "--out", str(tmp_path))
    assert code == 1 and "counterexample.html" in said
    errors, refused = [], []
    page = offline_page(browser, tmp_path / "counterexample.html", errors, refused)
    markers = page.locator("#markers .marker")
    steps = markers.count()
    assert steps >= 3
    assert [markers.nth(k).get_attribute("class") for k in range(steps)] == ["marker"] * (steps - 1) + ["marker broken"]
    page.evaluate("window.hwmSeek({ position: window.hwmState.total })")
    page.wait_for_function("window.hwmState.position === window.hwmState.total")
    broken = page.locator("#feed li.rule_broken .x").all_text_contents()
    assert broken and broken[0].startswith("✗ Rule broken:") and "2 of 4 nodes" in broken[0], broken
    assert page.locator("#caption").text_content().startswith(f"step {steps} of {steps}")
    page.screenshot(path=str(shots_dir("onefile") / "counterexample-end-720p.png"))
    assert errors == [] and refused == []


def test_a_counterexample_made_in_spanish_shows_chinese_captions_on_a_chinese_page(tmp_path, browser):
    """Issue 52: made with --lang es, a counterexample showed Spanish captions on a Chinese page, numbered twice
    ("paso 3 de 4: 3. ..."). Its script and trace hold data, and each page says the steps in its own language."""
    code, said = cli("explore", "--impl", ARTICLE, "--exercise", "1", "--nodes", "4", "--budget", "20", "--out",
                     str(tmp_path), "--lang", "es")
    assert code == 1 and "Reprodúcelo con" in said
    script = (tmp_path / "counterexample.txt").read_text(encoding="utf-8")
    assert '"' not in script and "\nstep\n" in script and "recibe" not in script, script
    errors, refused = [], []
    page = offline_page(browser, tmp_path / "counterexample.html", errors, refused, locale="zh-CN")
    assert page.evaluate("document.documentElement.lang") == "zh-Hans"
    total = page.locator("#markers .marker").count()
    captions = []
    for step in range(1, total + 1):
        start = page.evaluate(f"window.hwmState.replay.steps[{step - 1}].start")
        page.evaluate(f"window.hwmSeek({{ position: {start} }})")
        page.wait_for_function(f"window.hwmState.position === {start}")
        with contextlib.suppress(Exception):  # (the caption follows the seek's frame: wait for this step's, bounded)
            page.wait_for_function(f"document.querySelector('#caption').textContent.includes('第 {step} 步')",
                                   timeout=10_000)
        captions.append(page.locator("#caption").text_content())
    assert len(captions) == total >= 3
    for step, caption in enumerate(captions, start=1):
        assert f"第 {step} 步（共 {total} 步）：" in caption, caption
        text = caption.split("：", 1)[1]
        assert not re.match(r"\s*\d+\s*[.．、]", text), caption  # numbered once
        assert re.search(r"[\u4e00-\u9fff]", text) and not re.search(r"recibe|inicia|escribe|generación", text), \
            caption
    assert any("收到" in c for c in captions) and any("发起选举" in c for c in captions), captions
    page.screenshot(path=str(shots_dir("onefile") / "counterexample-es-made-zh-page.png"))
    assert errors == [] and refused == []


@pytest.mark.parametrize("lang, locale", [("es", "es-ES"), ("zh", "zh-CN"), ("en", "en-US")])
def test_the_legend_shows_every_item_at_1280_px(s1, browser, lang, locale):
    """Issue 52: at 1280 px the Spanish legend lost its last item, the ▲m/▲n marks, to the line it wraps away."""
    trace, path = s1
    errors, refused = [], []
    page = offline_page(browser, path, errors, refused, locale=locale)
    page.evaluate("window.hwmSeek({ position: window.hwmState.total })")
    page.wait_for_function("window.hwmState.position === window.hwmState.total")
    page.wait_for_timeout(300)
    items = page.evaluate("""() => { const G = document.querySelector('#legend').getBoundingClientRect();
      return [...document.querySelectorAll('#legend > span')].map((s) => { const r = s.getBoundingClientRect();
        return [s.textContent, r.top >= G.top - 0.5 && r.bottom <= G.bottom + 0.5 && r.right <= G.right + 0.5]; }); }""")
    assert len(items) >= 6 and items[-1][0].startswith("▲m"), items  # (S1 ends with two generations)
    assert [text for text, shown in items if not shown] == [], items
    assert errors == [] and refused == []
