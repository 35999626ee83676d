"""The room predicts, in Debian's Chromium against `hwm-lab demo` (3 node processes): the instructor's page (the
projector) and three students' pages (English, Spanish, Chinese). The instructor starts K1 (asked in the page, not
by a browser dialog, since the cluster holds the room's entry), asks the room who will lead before step 4 (a fourth
page opened after the question sees it and answers), then asks the teaching question before step 5; two students
answer right and one wrong; the projector shows 3 answers, never who; the reveal shows 2 and 1 beside the right
choice once the step has played. A student's page that tries to ask or close is refused."""

from __future__ import annotations

import pytest

from lab.harness import script as scripts
from lab.i18n import localize
from tests.dashboard.browser import BROWSER_MARKS, ROOT, chromium, open_page, running_demo, shots_dir
from web.actions import VIEWERS_ONLY
from web.questions import Ask, prompt

pytestmark = BROWSER_MARKS

NO_COUNTS = "document.querySelectorAll('#question .q-n, #question .q-right, #q-why').length"


def expected_log(name: str, step: int, node: str) -> str:
    """What the script itself expects a node to hold after a step (`expect log ... on A,C`): the right answer,
    read without the dashboard's model."""
    for command in scripts.load(name).steps[step - 1].commands:
        words = command.words
        if words[:2] == ("expect", "log") and node in words[-1].split(","):
            return " ".join(words[2:-2])
    raise AssertionError(f"{name} step {step} expects no log on {node}")


def test_the_room_predicts_and_the_cluster_answers(tmp_path):
    from playwright.sync_api import expect

    shots = shots_dir("room")
    errors: list[str] = []
    dialogs: list[str] = []
    with running_demo(tmp_path, "eventlet", ["--token", "room"]) as demo, chromium() as browser:
        base = demo.url.split("?")[0]
        projector = open_page(browser, demo.url, errors)
        projector.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        students = {lang: open_page(browser, f"{base}?lang={lang}", errors) for lang in ("en", "es", "zh")}
        expect(projector.locator(".lane.leader")).to_have_count(1, timeout=60_000)

        # The room's own entry is on the cluster: starting K1 asks first, in the page.
        assert projector.evaluate("() => window.hwmControl('write', {payload: 'x1'})")["ok"]
        projector.click("button[data-tab=guide]")
        projector.select_option("#guide-scenario", "k1")
        projector.click("#btn-guide-start")
        expect(projector.locator("#guide-confirm")).to_be_visible()
        expect(projector.locator("#guide-confirm-text")).to_contain_text("replaces the live cluster")
        projector.click("#btn-guide-replace")
        expect(projector.locator("#btn-next")).to_be_enabled(timeout=120_000)
        assert dialogs == []

        def step(done: int) -> None:
            projector.wait_for_function("(n) => { const g = window.hwmState.guide; return g && g.done === n && "
                                        "!g.busy; }", arg=done, timeout=120_000)

        for done in range(1, 4):
            projector.click("#btn-next")
            step(done)

        # Before step 4: who will lead? A page opened after the question sees it and answers.
        expect(projector.locator("#btn-ask-0")).to_have_text(f"Ask the room: {prompt(Ask('leader'))}")
        projector.click("#btn-ask-0")
        late = open_page(browser, f"{base}?lang=es", errors)
        expect(late.locator("#question .q-prompt")).to_have_text(localize(prompt(Ask("leader")), "es"))
        leaders = late.locator("#question button.q-choice .q-label").all_text_contents()
        late.locator("#question button.q-choice").nth(leaders.index("A")).click()
        expect(late.locator("#question .q-choice.mine .q-label")).to_have_text("A")
        expect(projector.locator("#q-count")).to_have_text("answers: 1")
        projector.click("#btn-q-close")
        step(4)
        expect(projector.locator("#question")).to_have_attribute("data-state", "revealed", timeout=60_000)
        expect(late.locator("#question .q-choice.right .q-label")).to_have_text("A")  # the rule: C's log is behind
        projector.click("#btn-q-dismiss")
        expect(late.locator("#question")).to_be_hidden()

        # Before step 5, K1's teaching moment: which entries will C hold?
        teaching = prompt(Ask("entries", "C"))
        expect(projector.locator("#btn-ask-0")).to_have_text(f"Ask the room: {teaching}")
        projector.click("#btn-ask-0")
        for lang, page in students.items():
            expect(page.locator("#question .q-prompt")).to_have_text(localize(teaching, lang))
        right = expected_log("k1", 5, "C")
        wrong = "m1 m3"  # what the high-water-mark strategy would leave
        labels = students["en"].locator("#question button.q-choice .q-label").all_text_contents()
        assert right in labels and wrong in labels and len(labels) >= 3
        for lang, choice in (("en", right), ("es", right), ("zh", wrong)):
            page = students[lang]
            page.locator("#question button.q-choice").nth(labels.index(choice)).click()
            expect(page.locator("#question .q-choice.mine .q-label")).to_have_text(choice)
        expect(projector.locator("#q-count")).to_have_text("answers: 3")
        for page in [projector, late, *students.values()]:  # who answered what, and what is right: not yet
            assert page.evaluate(NO_COUNTS) == 0
        assert projector.locator("#question button.q-choice").count() == 0  # the projector does not answer
        projector.screenshot(path=str(shots / "asked.png"))

        # A student's page may answer, not ask or close.
        zh = students["zh"]
        for action in ("question_close", "question_ask"):
            refused = zh.evaluate("(a) => window.hwmControl(a, {n: 0})", action)
            assert refused["ok"] is False and refused["error"] == localize(VIEWERS_ONLY, "zh")
        assert zh.locator("#btn-q-close").count() == 0
        expect(projector.locator("#question")).to_have_attribute("data-state", "open")

        projector.click("#btn-q-close")
        step(5)  # the step plays; then the reveal
        for page in [projector, *students.values()]:
            expect(page.locator("#question")).to_have_attribute("data-state", "revealed", timeout=60_000)
            right_row = page.locator("#question .q-choice.right")
            expect(right_row.locator(".q-label")).to_have_text(right)
            expect(right_row.locator(".q-n")).to_have_text("2")
            expect(page.locator("#question .q-choice", has_text=wrong).locator(".q-n")).to_have_text("1")
        expect(students["es"].locator("#q-why")).to_contain_text("m2")
        expect(projector.locator("#caption")).to_contain_text("step 5 of 5")
        for node in "AC":  # the step played on the cluster: C holds what the room was told
            expect(projector.locator(f"#lane-{node} .l2")).to_have_text("log end 3 · HWM 3")
        projector.screenshot(path=str(ROOT / "docs" / "img" / "dashboard-room-reveal.png"))  # docs/dashboard.md
        students["zh"].screenshot(path=str(shots / "revealed-zh.png"))
    assert errors == [], errors
