"""The dashboard in Spanish and in Chinese, in Debian's Chromium at 1280x720 against `hwm-lab demo --lang LANG`:
the instructor walks guided S1 to the end in large type, a student's page follows in the room's language, no text
overflows a lane or a button, Chinese renders with a real CJK font, and a third page in the pseudo-language shows
nothing that skipped the catalogue. In Spanish, the instructor then switches the room to Chinese and the student's
page follows. Screenshots go to test-artifacts/i18n/ (gitignored); docs/img/dashboard-guide-es.png and -zh.png come
from them."""

from __future__ import annotations

import pytest

from lab import i18n
from lab.i18n import PSEUDO, localize
from lab.i18n.scenarios import command_text
from lab.harness.script import load
from tests.dashboard.browser import BROWSER_MARKS, OUTSIDE_VIEWPORT, chromium, open_page, running_demo, shots_dir
from tests.test_i18n import untranslated

pytestmark = BROWSER_MARKS

# Text that does not fit: every visible button's label inside the button, and the button inside its part of the page
# (the panel, the header, a lane, the timeline); everything a lane draws inside the lane, and its lines not cut.
OVERFLOWS = """() => {
  const out = [], W = innerWidth;
  const shown = (el) => el.getClientRects().length > 0 && !el.closest('[hidden]');
  const name = (el) => (el.id ? '#' + el.id : el.className) + ' "' + el.textContent.trim().slice(0, 40) + '"';
  const cut = (el) => el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
  for (const b of document.querySelectorAll('button')) {
    if (!shown(b)) continue;
    const r = b.getBoundingClientRect();
    const part = (b.closest('#panel, header, .lane, #timeline, #feed-wrap') || document.body).getBoundingClientRect();
    if (cut(b)) out.push('text cut in button ' + name(b));
    if (r.left < part.left - 0.5 || r.right > part.right + 0.5 || r.right > W + 0.5) out.push('button out of its box ' + name(b));
  }
  // The legend shows whole items on its one line: an item is either inside its box or wrapped out of sight.
  const G = document.querySelector('#legend').getBoundingClientRect();
  for (const item of document.querySelectorAll('#legend > span')) {
    const r = item.getBoundingClientRect();
    const inside = r.left >= G.left - 0.5 && r.right <= G.right + 0.5 && r.top >= G.top - 0.5 && r.bottom <= G.bottom + 0.5;
    if (!inside && r.top < G.bottom - 0.5) out.push('legend item cut ' + name(item) + JSON.stringify([r.left,r.right,r.top,r.bottom,G.left,G.right,G.top,G.bottom]));
  }
  for (const lane of document.querySelectorAll('.lane')) {
    const L = lane.getBoundingClientRect();
    for (const el of lane.querySelectorAll('.info .line, .info .state, .role, .cutchips, .cell, .mark-label, .above-label, .index-marker, .conflict-note')) {
      if (!shown(el)) continue;
      const r = el.getBoundingClientRect();
      if (r.left < L.left - 0.5 || r.right > L.right + 0.5 || r.top < L.top - 0.5 || r.bottom > L.bottom + 0.5)
        out.push('out of lane ' + lane.dataset.node + ': ' + name(el));
      if (el.matches('.line, .state, .role') && cut(el)) out.push('text cut in lane ' + lane.dataset.node + ': ' + name(el));
    }
  }
  return out;
}"""

# Every text the page holds (shown or not yet: the help, the other tabs) and the words it gives assistive technology.
PAGE_TEXTS = """() => {
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (n.parentElement.closest('script, style, #lang')) continue;
    if (n.textContent.trim()) out.push(n.textContent.trim());
  }
  for (const el of document.querySelectorAll('[title], [placeholder], [aria-label]'))
    for (const a of ['title', 'placeholder', 'aria-label']) if (el.getAttribute(a)) out.push(el.getAttribute(a));
  for (const t of document.querySelectorAll('svg title')) if (t.textContent.trim()) out.push(t.textContent.trim());
  return out;
}"""

# Two different Han characters drawn on a canvas: with no CJK font both are the same empty box.
CJK_GLYPHS = """() => {
  const draw = (ch) => { const c = document.createElement('canvas'); c.width = c.height = 40;
    const g = c.getContext('2d'); g.font = '32px "Noto Sans CJK SC", sans-serif'; g.fillText(ch, 2, 32);
    return Array.from(g.getImageData(0, 0, 40, 40).data).join(); };
  return [draw('高') !== draw('口'), document.fonts.check('16px "Noto Sans CJK SC"')];
}"""


def say(lang: str, msgid: str, context: str | None = None, **values) -> str:
    return i18n.gettext(lang, msgid, context).format(**values)


@pytest.mark.parametrize("lang", ["es", "zh"])
def test_guided_s1_in_the_rooms_language_fits_the_screen_in_large_type(tmp_path, lang):
    from playwright.sync_api import expect

    s1 = load("s1")
    # the room reads the scripts' words without their Markdown marks (lab.i18n.scenarios.Narration)
    steps = [say(lang, step.text, f"s1 step {k}").replace("`", "") for k, step in enumerate(s1.steps, start=1)]
    shots = shots_dir("i18n")
    errors: list[str] = []
    with running_demo(tmp_path, "eventlet", ["--token", "room", "--lang", lang]) as demo, chromium() as browser:
        base = demo.url.split("?")[0]
        teacher = open_page(browser, demo.url, errors, timeout_ms=60_000)  # no ?lang: the room's language
        student = open_page(browser, base, errors, timeout_ms=60_000)
        pseudo = open_page(browser, f"{base}?lang={PSEUDO}", errors, timeout_ms=60_000)
        for page in (teacher, student):
            expect(page.locator("html")).to_have_attribute("lang", "zh-Hans" if lang == "zh" else lang)
            expect(page.locator("#conn")).to_have_text(say(lang, "live"))
        expect(teacher.locator(".lane")).to_have_count(3)
        teacher.keyboard.press("l")  # large type, as on a projector

        teacher.click("button[data-tab=guide]")
        teacher.select_option("#guide-scenario", "s1")
        teacher.click("#btn-guide-start")
        expect(teacher.locator("#guide-progress")).to_have_text(say(lang, "Step {done} of {total}", done=0, total=7),
                                                            timeout=60_000)  # a fresh cluster: slower on a busy machine
        for step in range(1, 8):
            teacher.keyboard.press("n")
            if step == 7:  # A comes back and truncates its conflicting entry: the longest note a lane shows
                expect(teacher.locator("#lane-A .conflict-note")).to_be_visible(timeout=90_000)
                assert teacher.evaluate(OVERFLOWS) == [], f"{lang}, large type, A truncating"
            expect(teacher.locator("#guide-progress")).to_have_text(
                say(lang, "Step {done} of {total}", done=step, total=7), timeout=90_000)
            expect(teacher.locator("#guide .outcome.fail")).to_have_count(0)
            caption = say(lang, "{name} · step {done} of {total}: {text}", name="S1", done=step, total=7,
                          text=steps[step - 1])
            expect(student.locator("#caption")).to_have_text(caption)
            if step == 3:
                refused = localize(command_text("expect read 4 refused on A,B,C"), lang)
                expect(teacher.locator("#guide .outcome.ok").first).to_contain_text(refused)
        expect(teacher.locator("#guide .next-preview")).to_have_text(say(lang, "Done: every expectation held."))
        expect(teacher.locator("#guide .outcome.ok").first).to_contain_text(
            localize(command_text("expect truncated 4 on A"), lang))
        expect(student.locator("#feed")).to_contain_text(say(lang, "Step {number}: {text}", number=7, text=steps[6]))
        for n in "ABC":
            expect(student.locator(f"#lane-{n} .l2")).to_have_text(say(lang, "log end {end} · HWM {hwm}", end=4, hwm=4))
        teacher.wait_for_timeout(1500)  # the truncation's animation is over, the cells are in place

        assert teacher.evaluate(OVERFLOWS) == [], f"{lang}, large type"
        assert student.evaluate(OVERFLOWS) == [], f"{lang}, normal type"
        assert teacher.evaluate(OUTSIDE_VIEWPORT) == [] and student.evaluate(OUTSIDE_VIEWPORT) == []
        teacher.screenshot(path=str(shots / f"{lang}-s1-done-large.png"))
        student.screenshot(path=str(shots / f"{lang}-s1-done.png"))
        if lang == "zh":
            differ, loaded = teacher.evaluate(CJK_GLYPHS)
            assert differ and loaded, "no CJK font: Han characters are drawn as empty boxes"

        # The pseudo-language page followed the whole walk: every word it holds went through the catalogue.
        expect(pseudo.locator("#caption")).to_contain_text(localize(i18n.Text(s1.steps[6].text, None, "s1 step 7"),
                                                                    PSEUDO))
        left = {text: words for text in pseudo.evaluate(PAGE_TEXTS) if (words := untranslated(text))}
        assert left == {}, left

        if lang == "es":  # the instructor switches the room to Chinese: the student's page follows
            teacher.select_option("#lang", "zh")
            for page in (teacher, student):
                expect(page.locator("html")).to_have_attribute("lang", "zh-Hans", timeout=30_000)
                expect(page.locator("#caption")).to_contain_text(say("zh", s1.steps[6].text, "s1 step 7"))
            expect(pseudo.locator("html")).to_have_attribute("lang", "en")  # it chose its own language
            assert pseudo.evaluate("window.HWM_I18N.lang") == PSEUDO
    assert errors == [], errors


@pytest.mark.parametrize("lang, expected", [
    ("es", "muertes de nodos: 3, solicitudes de replicación enviadas: 2 y escrituras fallidas: 1"),
    ("zh", "被杀死的节点：3、发出的复制请求：2、失败的写入：1"),
])
def test_the_feeds_summary_names_any_kind_left_out_in_the_pages_language(lang, expected):
    """text.js's feedTop names the kinds a frame left out from the page's catalogue, whatever the kind (issue 34:
    only 13 routine kinds had names; a killed node or a failed write was only counted)."""
    import json
    from pathlib import Path

    script = (Path(__file__).resolve().parents[2] / "web" / "static" / "text.js").read_text(encoding="utf-8")
    page_i18n = {"lang": lang, "messages": i18n.for_page(lang), "kinds": i18n.event_names(lang)}
    with chromium() as browser:
        page = browser.new_page()
        page.set_content(f"<script>window.HWM_I18N = {json.dumps(page_i18n)};</script><script>{script}</script>")
        said = page.evaluate("window.HWM_TEXT.feedTop({node_killed: 3, replication_sent: 2, write_failed: 1, "
                             "clocks_held: 0})")
        page.close()
    assert said == expected, said
