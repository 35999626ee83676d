"""Issue 51: the room's answer stays hidden until the reveal, and large type holds with a question on the stage.

In Debian's Chromium against `hwm-lab demo`'s node processes: the instructor's page (the projector, large type) and
students' pages in English (large type), Spanish and Chinese walk guided S1, K1 and R1 with every question asked.
Before each step plays, no page shows that step's narration nor a later one's, in its own language, neither in its
text nor in anything its socket received (every event and every answer to its controls, recorded by the page
itself), and no page is sent the right choice, the counts or the why before the reveal. At 1280x720 in large type
every stage label (a cell's index, payload and generation, a node's details, the HWM tags, the leader's line, the
legend, the banners, the feed, the caption and the question) is 18 px or more and as tall as its type, inside the
viewport, none over another, with the question open, answered and revealed."""

from __future__ import annotations

import json

import pytest

from lab.harness import script as scripts
from lab.i18n import localize
from lab.i18n.scenarios import description, steps as step_texts
from tests.dashboard.browser import BROWSER_MARKS, CHROMIUM, SIZES, chromium, running_demo, shots_dir
from web.questions import asks_of

pytestmark = BROWSER_MARKS

# Every socket.io event a page receives, and every answer to what it emits, kept in the page (window.hwmHeard):
# the client library is wrapped as it loads, before the dashboard connects.
HEARD = """
(() => {
  window.hwmHeard = [];
  let real;
  Object.defineProperty(window, "io", { configurable: true, get: () => real, set: (lib) => {
    real = function (...args) {
      const socket = lib(...args);
      socket.onAny((event, ...payload) => window.hwmHeard.push(JSON.stringify([event, payload])));
      const emit = socket.emit.bind(socket);
      socket.emit = (event, ...rest) => {
        const last = rest[rest.length - 1];
        if (typeof last === "function") {
          rest[rest.length - 1] = (...answer) => { window.hwmHeard.push(JSON.stringify(["answer", answer])); last(...answer); };
        }
        return emit(event, ...rest);
      };
      return socket;
    };
    Object.assign(real, lib);
  } });
})();
"""

# Each label of the stage the back row reads: its type, its box, whether it is inside the viewport.
LABELS = """() => {
  const kinds = {
    // (a truncated entry shrinks as it goes: that cell is leaving, not read)
    cell: ['.i', '.p', '.g'].map((c) => `.lane .cell:not(.collapsed):not(.removing) ${c}`).join(', '),
    details: '.lane .info .l1, .lane .info .l2, .lane .info .state, .lane .info .cutchips',
    hwm_tag: '.lane .mark-label, .lane .above-label, .lane .index-marker, .lane .conflict-note',
    leader_line: '#hwm-line .hwm-label', legend: '#legend > span', banner: '#banners .banner',
    feed: '#feed li .x, #feed-latest', caption: '#caption',
    question: '#question .q-prompt, #question .q-count, #question .q-label, #question .q-mine, #question .q-n, ' +
              '#question .q-right, #question .q-note, #q-why, #q-stage'};
  // what of a box its ancestors show (one that clips, as the legend's one line, hides what wraps below it)
  const shown = (e) => {
    let r = e.getBoundingClientRect(), [x0, y0, x1, y1] = [r.left, r.top, r.right, r.bottom];
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX === 'visible' && cs.overflowY === 'visible') continue;
      const c = a.getBoundingClientRect();
      [x0, y0, x1, y1] = [Math.max(x0, c.left), Math.max(y0, c.top), Math.min(x1, c.right), Math.min(y1, c.bottom)];
    }
    return x1 - x0 > 1 && y1 - y0 > 1;
  };
  const out = [];
  for (const [kind, selector] of Object.entries(kinds)) {
    for (const e of document.querySelectorAll(selector)) {
      if (!e.textContent.trim() || e.closest('[hidden]') || getComputedStyle(e).display === 'none') continue;
      const r = e.getBoundingClientRect();
      if ((r.width === 0 && r.height === 0) || !shown(e)) continue;
      const type = parseFloat(getComputedStyle(e).fontSize);
      const inside = r.left >= -1 && r.top >= -1 && r.right <= innerWidth + 1 && r.bottom <= innerHeight + 1;
      out.push({kind, text: e.textContent.trim().slice(0, 40), px: type, h: r.height, inside,
                box: [r.left, r.top, r.right, r.bottom], cell: e.closest('.cell') ? e.closest('.cell').dataset.i || '' : null,
                id: [...document.querySelectorAll(selector)].indexOf(e)});
    }
  }
  return out;
}"""


def overlapping(labels: list[dict]) -> list[tuple[str, str]]:
    """Labels drawn one over the other (more than a pixel each way), the caption and the question aside (they hold
    other labels: the question its choices)."""
    found = []
    flat = [x for x in labels if x["kind"] not in ("caption", "question", "feed")]
    for i, a in enumerate(flat):
        for b in flat[i + 1:]:
            ax0, ay0, ax1, ay1 = a["box"]
            bx0, by0, bx1, by1 = b["box"]
            if min(ax1, bx1) - max(ax0, bx0) > 1 and min(ay1, by1) - max(ay0, by0) > 1:
                found.append((f"{a['kind']} {a['text']!r}", f"{b['kind']} {b['text']!r}"))
    return found


def check_large_type(page, state: str) -> None:
    labels = page.evaluate(LABELS)
    kinds = {x["kind"] for x in labels}
    assert {"cell", "details", "hwm_tag", "leader_line", "legend", "question"} <= kinds, (state, kinds)
    small = [(x["kind"], x["text"], x["px"], round(x["h"], 1)) for x in labels
             if x["px"] < 18 or x["h"] < 0.9 * min(x["px"], 18)]
    assert small == [], (state, small)
    outside = [(x["kind"], x["text"]) for x in labels if not x["inside"] and x["kind"] != "feed"]
    assert outside == [], (state, outside)
    assert overlapping(labels) == [], state


def page_at(browser, url: str, errors: list):
    page = browser.new_page(viewport=SIZES["720p"])
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.set_default_timeout(30_000)
    page.add_init_script(HEARD)
    page.goto(url)
    return page


def heard(page) -> str:
    return "\n".join(page.evaluate("window.hwmHeard"))


def test_guided_s1_k1_and_r1_keep_the_answer_until_the_reveal_in_large_type_that_holds(tmp_path):
    from playwright.sync_api import expect

    assert CHROMIUM
    shots = shots_dir("room-secret")
    errors: list[str] = []
    with running_demo(tmp_path, "eventlet", ["--token", "room"]) as demo, chromium() as browser:
        base = demo.url.split("?")[0]
        projector = page_at(browser, demo.url + "&large=1", errors)
        students = {"en": page_at(browser, f"{base}?lang=en&large=1", errors),
                    "es": page_at(browser, f"{base}?lang=es", errors),
                    "zh": page_at(browser, f"{base}?lang=zh", errors)}
        pages = {"projector": projector, **students}
        expect(projector.locator(".lane.leader")).to_have_count(1, timeout=60_000)
        langs = {"projector": "en", "en": "en", "es": "es", "zh": "zh"}

        def done(n: int) -> None:
            projector.wait_for_function("(n) => { const g = window.hwmState.guide; return g && g.done === n && "
                                        "!g.busy; }", arg=n, timeout=120_000)

        def nothing_told_of(scenario, upcoming: int, moment: str) -> None:
            """No page shows or was sent the narration of step `upcoming` (from 1) or of any later step."""
            texts = step_texts(scenario)
            for name, page in pages.items():
                lang = langs[name]
                shown, got = page.evaluate("document.body.innerText"), heard(page)
                for k in range(upcoming - 1, len(texts)):
                    said = str(localize(texts[k], lang))
                    assert said not in shown, (scenario.name, moment, name, "shows", k + 1)
                    assert json.dumps(said)[1:-1] not in got, (scenario.name, moment, name, "was sent", k + 1)
                assert "next_text" not in got, (scenario.name, name)

        def no_answer_sent() -> None:
            for name, page in pages.items():
                for line in page.evaluate("window.hwmHeard"):
                    event, payload = json.loads(line)
                    for p in payload:
                        q = p.get("question") if isinstance(p, dict) and "question" in p else p
                        if event in ("question", "answer", "hello") and isinstance(q, dict) and q.get("state") in (
                                "open", "closed"):
                            assert not {"right", "counts", "why"} & set(q), (name, event, q)

        for number, name in enumerate(("s1", "k1", "r1")):
            scenario = scripts.load(name)
            projector.click("button[data-tab=guide]")
            projector.select_option("#guide-scenario", name)
            projector.click("#btn-guide-start")
            if number:  # the last scenario's cluster holds entries: starting asks first, in the page
                expect(projector.locator("#guide-confirm")).to_be_visible()
                projector.click("#btn-guide-replace")
            projector.wait_for_function("(n) => { const g = window.hwmState.guide; return g && g.name === n; }",
                                        arg=name, timeout=60_000)
            done(0)
            expect(projector.locator("#btn-next")).to_be_enabled(timeout=120_000)
            for page in pages.values():  # what each page is told from here on is this scenario's (R1's first step
                page.evaluate("window.hwmHeard.length = 0")  # is S1's own words: S1 told them once played)
            # the opening caption poses the scenario's question: it is its description, no step's narration; the
            # header, in large type, names the strategy the guided run uses
            expect(projector.locator("#caption")).to_contain_text(str(description(scenario))[:40])
            expect(projector.locator("#summary")).to_contain_text(scenario.truncation)
            for step in range(1, len(scenario.steps) + 1):
                nothing_told_of(scenario, step, "before")
                asks = asks_of(scenario, step - 1)
                if not asks:
                    projector.click("#btn-next")
                    done(step)
                    continue
                expect(projector.locator("#btn-ask-0")).to_be_visible(timeout=60_000)
                for n in range(len(asks)):
                    if n:  # a second question of the same step: the first is taken away unanswered
                        projector.click("#btn-q-dismiss")
                        expect(projector.locator(f"#btn-ask-{n}")).to_be_visible()
                    projector.click(f"#btn-ask-{n}")
                    for page in pages.values():
                        expect(page.locator("#question")).to_have_attribute("data-state", "open")
                    projector.wait_for_timeout(600)  # (a frame or two: the lanes laid out again)
                    check_large_type(projector, f"{name} step {step}: open")
                    nothing_told_of(scenario, step, "asked")
                    no_answer_sent()
                student = students["en"]
                student.locator("#question button.q-choice").first.click()
                expect(student.locator("#question .q-choice.mine")).to_have_count(1)
                students["es"].locator("#question button.q-choice").last.click()
                expect(projector.locator("#q-count")).to_contain_text("2")
                student.wait_for_timeout(600)
                check_large_type(student, f"{name} step {step}: answered")
                nothing_told_of(scenario, step, "answered")
                no_answer_sent()
                projector.screenshot(path=str(shots / f"{name}-{step}-open.png"))
                projector.click("#btn-q-close")
                done(step)
                for page in (projector, student):
                    expect(page.locator("#question")).to_have_attribute("data-state", "revealed", timeout=60_000)
                projector.wait_for_timeout(600)
                projector.screenshot(path=str(shots / f"{name}-{step}-revealed.png"))
                check_large_type(projector, f"{name} step {step}: revealed")
                check_large_type(student, f"{name} step {step}: revealed (student)")
                projector.screenshot(path=str(shots / f"{name}-{step}-revealed.png"))
                projector.click("#btn-q-dismiss")
            expect(projector.locator("#guide .next-preview")).to_have_text("Done: every expectation held.")
    assert errors == [], errors
