"""The back row reads everything, in Debian's Chromium at 1280x720 in large type against `hwm-lab demo`: guided S1
(its clocks held, so the "clocks held" banner is up the whole time) on the projector in English and on two
students' pages in Spanish and Chinese. At every step: a log cell's index, a line of the feed and a node's details
are drawn at 18 px or more, the caption is shown whole (never cut after two lines), and nothing lies over the
legend. Once the guide is over and the room writes by hand, its caption goes."""

from __future__ import annotations

import re

import pytest

from tests.dashboard.browser import BROWSER_MARKS, chromium, open_page, running_demo, shots_dir

pytestmark = BROWSER_MARKS

# The rendered size (px) of what the back row must read; None when the page draws no such thing yet.
FONT_SIZES = """() => {
  const size = (sel) => {
    const e = document.querySelector(sel);
    return e ? parseFloat(getComputedStyle(e).fontSize) : null;
  };
  return {index: size('.cell:not(.collapsed) .i'), generation: size('.cell:not(.collapsed) .g'),
          payload: size('.cell:not(.collapsed) .p'), feed: size('#feed li .x'), role: size('.info .l1'),
          log: size('.info .l2'), state: size('.info .state')};
}"""

# The caption's text, and whether all of it is in view (a caption longer than its box would scroll, not be cut).
CAPTION = """() => { const c = document.querySelector('#caption');
  return [c.hidden ? null : c.textContent, c.scrollHeight <= c.clientHeight + 1, getComputedStyle(c).overflowY]; }"""

# What covers the legend: every item of it in view is what the page shows at its centre, no other element's box
# crosses the legend's, and every generation of the legend is in view (none wrapped away).
OVER_LEGEND = """() => {
  const out = [], L = document.querySelector('#legend'), box = L.getBoundingClientRect();
  const cross = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const items = [...L.children];
  const inView = items.filter((i) => {
    const r = i.getBoundingClientRect();
    return r.top < box.bottom - 1 && r.height > 0;
  });
  for (const item of inView) {
    const r = item.getBoundingClientRect();
    const at = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
    if (!at || !L.contains(at))
      out.push('over "' + item.textContent + '": ' + (at ? at.id || at.className : 'nothing'));
  }
  const others = '#banners, #banners .banner, #caption, #question, #btn-sequence, .hb-toggle, #toast';
  for (const other of document.querySelectorAll(others))
    if (other.getClientRects().length && cross(other.getBoundingClientRect(), box))
      out.push('crosses the legend: ' + (other.id || other.className));
  const generations = items.filter((i) => i.querySelector('.sw:not(.uncommitted):not(.ring)'));
  for (const g of generations) if (!inView.includes(g)) out.push('generation ' + g.textContent + ' wrapped away');
  if (!generations.length) out.push('no generation in the legend');
  return out;
}"""


# The sequence view as the page shows it: its steps, its width against its box's, and its nodes' names (in view at
# the top of the box, scrolled to its newest rows).
SEQUENCE = """() => {
  const box = document.querySelector('#sequence'), svg = box.querySelector('svg'), B = box.getBoundingClientRect();
  const names = [...box.querySelectorAll('.seq-names span')];
  return {steps: [...svg.querySelectorAll('g.mark.step')].map((g) => g.textContent.trim()),
          width: svg.getBoundingClientRect().width, box: box.clientWidth, scrolled: box.scrollTop > 0,
          names: names.map((n) => n.textContent),
          namesInView: names.every((n) => {
            const r = n.getBoundingClientRect();
            return r.top >= B.top - 1 && r.bottom <= B.top + 40;
          })};
}"""


def test_large_type_at_720p_reads_from_the_back_row(tmp_path):
    from playwright.sync_api import expect

    shots = shots_dir("back-row")
    errors: list[str] = []
    with running_demo(tmp_path, "eventlet", ["--token", "row"]) as demo, chromium() as browser:
        base = demo.url.split("?")[0]
        projector = open_page(browser, demo.url, errors)
        pages = {"en": projector, "es": open_page(browser, f"{base}?lang=es", errors),
                 "zh": open_page(browser, f"{base}?lang=zh", errors)}
        for page in pages.values():
            expect(page.locator(".lane")).to_have_count(3, timeout=60_000)
            page.keyboard.press("l")
            assert page.evaluate("document.body.classList.contains('large')")
        projector.click("button[data-tab=guide]")
        projector.select_option("#guide-scenario", "s1")
        projector.click("#btn-guide-start")
        expect(projector.locator("#btn-next")).to_be_enabled(timeout=120_000)
        for step in range(1, 8):
            projector.keyboard.press("n")
            projector.wait_for_function("(n) => { const g = window.hwmState.guide; return g && g.done === n && "
                                        "!g.busy; }", arg=step, timeout=120_000)
            for lang, page in pages.items():
                expect(page.locator("#caption")).to_contain_text("S1", timeout=30_000)
                page.wait_for_timeout(300)  # the lanes take their new size
                where = f"{lang}, step {step}"
                text, whole, overflow = page.evaluate(CAPTION)
                assert text and whole, (where, text)  # the caption is shown whole
                assert overflow in ("auto", "scroll"), where  # (and would scroll, never be cut, were it longer)
                expect(page.locator("#banners .banner.held")).to_be_visible()
                assert page.evaluate(OVER_LEGEND) == [], where
                sizes = page.evaluate(FONT_SIZES)
                small = {k: v for k, v in sizes.items() if v is not None and v < 18}
                assert not small, (where, sizes)
                assert sizes["index"] and sizes["feed"] and sizes["log"], (where, sizes)
            if step in (2, 7):
                for lang, page in pages.items():
                    page.screenshot(path=str(shots / f"s1-step{step}-{lang}.png"))
        # The sequence view, on the projector: the whole scenario, as wide as the stage, its nodes named at the
        # top of the view however far it has scrolled.
        projector.keyboard.press("q")
        expect(projector.locator("#sequence svg")).to_be_visible(timeout=30_000)
        projector.wait_for_function("document.querySelectorAll('#sequence svg g.mark.step').length >= 5",
                                    timeout=30_000)
        seen = projector.evaluate(SEQUENCE)
        named = [int(n) for m in seen["steps"] for n in re.findall(r"\d+", m)]
        assert named[0] == 1 and named[-1] == 7, seen  # S1 whole, from its first step to its last
        assert seen["scrolled"] and seen["width"] >= 0.9 * seen["box"], seen
        assert seen["names"] == ["A", "B", "C"] and seen["namesInView"], seen
        projector.screenshot(path=str(shots / "s1-sequence.png"))
        projector.keyboard.press("q")

        # the guide is over; the room writes by hand: the finished guide's caption goes
        assert projector.evaluate("() => window.hwmControl('write', {payload: 'x1'})")["ok"]
        for page in pages.values():
            expect(page.locator("#caption")).to_be_hidden(timeout=30_000)
    assert errors == [], errors
