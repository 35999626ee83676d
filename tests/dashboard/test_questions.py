"""Questions to the room: the choices and the answer come from the lab's own model of the scenario (the simulator,
the reference solutions), never from a table; every page answers once, counted but never named; only the
instructor asks and closes; the reveal comes after the step has played; the lecture's answers save as a CSV."""

from __future__ import annotations

import csv
import io
from dataclasses import replace

import pytest

from lab.harness import script as scripts
from lab.harness.commands import ScenarioError
from lab.harness.scenario import simulate
from lab.i18n import localize, say
from tests.dashboard.conftest import FakeHost, make_app, received, wait_until
from tests.dashboard.test_app import connect, control
from lab.i18n.scenarios import steps as step_texts
from web.guide import GONE, GUIDED, REPLACED
from web.questions import SERVED, Ask, Model, asks_of, electable, outcome, rule_why

STRATEGIES = ("generation", "high-water-mark", "leader-epoch")


def model(name: str, truncation: str | None = None) -> Model:
    scenario = scripts.load(name)
    return Model(replace(scenario, truncation=truncation or scenario.truncation))


# ---- the questions, from the model ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in GUIDED if n != "d1"])
def test_each_teaching_scenario_asks_at_its_moments_and_its_answers_are_the_scripts_own(name):
    """With its own strategy every declared question is offered, its answer is among its choices, and it is what
    the simulator shows after the step for every seed (the scripts' expectations hold it: the stage will agree)."""
    scenario = scripts.load(name)
    m = model(name)
    declared = {k: asks_of(scenario, k) for k in range(len(scenario.steps)) if asks_of(scenario, k)}
    assert sum(map(len, declared.values())) >= 3, "a few questions per scenario, at its teaching moments"
    for step, asks in declared.items():
        offered = m.questions(step)
        assert [q.ask for q in offered] == asks, (name, step + 1)
        for q in offered:
            assert 2 <= len(q.labels) == len(q.values) and len(set(q.values)) == len(q.values)
            assert q.source == {"scenario": name, "step": step + 1, "truncation": scenario.truncation}
            for seed in range(8):  # other runs than the model's own: the same answer
                verdict, after = _after_step(name, scenario.truncation, seed, step)
                assert verdict.passed and outcome(q.ask, after) == q.values[q.right], (name, step + 1, seed)


def _after_step(name, truncation, seed, step):
    from lab.harness.scenario import Run, SimDriver
    from lab.sim.cluster import SimCluster

    scenario = replace(scripts.load(name), truncation=truncation)
    cluster = SimCluster(scenario.nodes, seed=100 + seed, truncation=truncation,
                         fsync={n: scenario.fsync.get(n, "always") for n in "ABCDEFG"[:scenario.nodes]})
    run = Run(scenario, SimDriver(cluster), seed=seed)
    for _ in range(step + 1):
        run.run_step()
    after = cluster.status()
    run.run_all()
    return run.verdict, after


def test_the_right_answer_follows_the_strategy_it_is_computed_from():
    """K1's restart: the same question, two strategies, two answers (none of them typed anywhere)."""
    for truncation, held in (("generation", ("m1", "m2")), ("high-water-mark", ("m1",)),
                             ("leader-epoch", ("m1", "m2"))):
        q = model("k1", truncation).questions(2)[0]
        assert q.ask == Ask("entries", "A") and q.values[q.right] == held, truncation
        assert set(q.values) >= {("m1",), ("m1", "m2")}  # either way, the other outcome is offered too
    generation = model("k1").questions(4)[0]
    assert [str(c) for c in generation.labels] == ["m1", "m1 m2", "m1 m3", "m1 m2 m3"]
    assert generation.labels[generation.right] == "m1 m2 m3"
    hwm = model("k1", "high-water-mark").questions(4)[0]
    assert hwm.labels[hwm.right] == "m1 m3" and "m1 m2 m3" not in hwm.labels  # m2 is lost: nobody holds it


def test_n4_offers_the_articles_sorted_middle_beside_the_majority():
    q = model("n4").questions(2)[0]
    assert q.ask == Ask("hwm", "A") and q.values[q.right] == 5
    assert 7 in q.values  # sorted([7, 7, 5, 3])[4 // 2]: the article's rule, wrong for an even size
    assert "fewer than 3" in q.why and "Index 6 is held only by A and B" in q.why


def test_a_leader_is_asked_only_where_the_vote_rule_leaves_one_node():
    assert [q.ask.kind for q in model("k1").questions(3)] == ["leader"]
    # with high-water-mark truncation A and C both hold [m1]: either may win, so timing would decide
    assert model("k1", "high-water-mark").questions(3) == []
    scenario = scripts.load("k1")
    before = model("k1", "high-water-mark").runs[0][3][0]
    assert electable(before, scenario.steps[3]) == {"A", "C"}
    assert electable(model("k1").runs[0][3][0], scenario.steps[3]) == {"A"}


def test_the_reasons_are_the_rules_with_the_models_figures():
    s1 = model("s1")
    hwm, read, entries = s1.questions(1)[0], s1.questions(2)[0], s1.questions(6)[0]
    assert str(hwm.why).startswith("The leader's high-water mark is the highest index that a majority (2 of 3)")
    assert "Index 4 is held only by A: fewer than 2." in hwm.why
    assert read.values[read.right] != SERVED and "above A's high-water mark 3" in read.why
    assert "A removed index 4 and after: they conflict with the leader's entries" in entries.why
    said = localize(entries.why, "es")
    assert said != str(entries.why) and "e5" in said


def test_a_bad_ask_line_is_refused_when_the_script_is_read():
    for line in ("ask", "ask hwm A", "ask read x on A", "ask read 0 on A", "ask colour on A", "ask leader of A"):
        with pytest.raises(ScenarioError, match="line 3"):
            scripts.parse(f'nodes 3\nstep "x"\n  {line}\n  campaign A\n')
    assert simulate("s1", seed=1).passed  # the runner passes over a step's questions


# ---- the room ----------------------------------------------------------------------------------------------------


@pytest.fixture
def classroom():
    host = FakeHost()
    host.start(3)
    app, socketio, dashboard = make_app(CLUSTER_HOST=host, TOKEN="secret")
    yield app, socketio, dashboard
    host.stop()


def guide_to(dashboard, instructor, name: str, done: int) -> None:
    assert control(instructor, "guide_start", scenario=name, replace=True)["ok"]
    assert wait_until(lambda: not dashboard.guide.state()["busy"] and dashboard.guide.model is not None, 30)
    for _ in range(done):
        assert control(instructor, "guide_next")["ok"]
        assert wait_until(lambda: not dashboard.guide.state()["busy"], 30)
    assert dashboard.guide.state()["done"] == done and dashboard.guide.state()["error"] is None


def questions(client) -> list[dict]:
    return [m["args"][0] if m["args"] else None for m in received(client)
            if m["name"] in ("question", "question_count")]


def test_the_room_answers_once_each_sees_only_the_count_and_the_reveal_follows_the_step(classroom):
    app, socketio, dashboard = classroom
    instructor = connect(socketio, app, auth={"token": "secret"})
    students = [connect(socketio, app, auth={"seat": f"seat-{k}-abcdef", "lang": lang})
                for k, lang in enumerate(("en", "es", "zh"))]
    guide_to(dashboard, instructor, "k1", 4)
    asks = dashboard.guide.state()["asks"]
    assert [str(a["prompt"]) for a in asks] == ["Which entries will C hold after this step?"]
    for page in students:  # a student's page may neither ask nor close
        assert control(page, "question_ask", n=0)["ok"] is False
    assert dashboard.room.shown is None
    for page in [instructor, *students]:
        received(page)
    asked = control(instructor, "question_ask", n=0)
    assert asked["ok"] and asked["question"]["state"] == "open"
    q = asked["question"]
    labels = q["choices"]
    right = labels.index("m1 m2 m3")
    wrong = labels.index("m1 m3")
    shown_es = [m for m in questions(students[1]) if m and "prompt" in m][0]
    assert shown_es["prompt"] == localize(dashboard.room.shown.question.prompt, "es") != q["prompt"]
    assert control(students[0], "question_close")["ok"] is False
    assert students[0].emit("answer", {"id": q["id"], "choice": wrong}, callback=True)["ok"]
    assert students[0].emit("answer", {"id": q["id"], "choice": right}, callback=True)["ok"]  # changed, not twice
    assert students[1].emit("answer", {"id": q["id"], "choice": right}, callback=True)["ok"]
    assert students[2].emit("answer", {"id": q["id"], "choice": wrong}, callback=True)["ok"]
    refused = students[2].emit("answer", {"id": q["id"], "choice": 9}, callback=True)
    assert refused["ok"] is False and refused["error"] == localize(say("choose one of the choices shown"), "zh")
    assert wait_until(lambda: any(m.get("count") == 3 for m in questions(instructor) if m), 15)
    late = connect(socketio, app, auth={"seat": "seat-late-abcdef"})
    hello = received(late, "hello")[0]["args"][0]
    assert hello["question"]["id"] == q["id"] and hello["question"]["count"] == 3 and hello["answered"] is None
    for page in [instructor, *students, late]:  # before the reveal: no distribution, no right answer anywhere
        for m in questions(page) + [hello["question"]]:
            assert m is None or not {"counts", "right", "why"} & set(m), m
    assert late.emit("answer", {"id": q["id"], "choice": right}, callback=True)["ok"]
    assert dashboard.room.shown.state == "open"

    closed = control(instructor, "question_close")
    assert closed["ok"] and closed["question"]["state"] in ("closed", "revealed")  # (the simulator is quick)
    assert students[0].emit("answer", {"id": q["id"], "choice": wrong}, callback=True)["ok"] is False
    assert wait_until(lambda: dashboard.room.shown.state == "revealed", 30)
    assert dashboard.guide.state()["done"] == 5  # the step played before the reveal
    got = []  # what the student's page received, in order (the reveal's message may still be on its way)

    def seen() -> list:
        got.extend((m["name"], m["args"][0]) for m in received(students[1])
                   if m["name"] in ("guide", "question") and m["args"])
        return [(name, p["done"] if name == "guide" else p["state"]) for name, p in got if p and not p.get("busy")]

    assert wait_until(lambda: ("question", "revealed") in seen(), 15), seen()
    order = seen()
    assert order.index(("question", "closed")) < order.index(("guide", 5)) < order.index(("question", "revealed"))
    revealed = next(p for name, p in reversed(got) if name == "question" and p and p.get("state") == "revealed")
    assert revealed["right"] == right and revealed["counts"][right] == 3 and revealed["counts"][wrong] == 1
    assert sum(revealed["counts"]) == 4 and "stage" not in revealed  # the stage agreed with the model
    # why, from what the stage played (its states and events in step 5), said in the page's language
    assert revealed["why"] == localize(dashboard.room.shown.why, "es") and "m2" in revealed["why"]
    assert dashboard.room.shown.why is not None and dashboard.guide.watched["step"] == 5

    rows = list(csv.DictReader(io.StringIO(app.test_client().get(
        "/api/dashboard/answers.csv", headers={"X-HWM-Token": "secret"}).get_data(as_text=True))))
    assert len(rows) == 4 and {r["scenario"] for r in rows} == {"k1"} and {r["before_step"] for r in rows} == {"5"}
    assert {r["truncation"] for r in rows} == {"generation"}  # the strategy the room's answers were about
    assert sorted(r["correct"] for r in rows) == ["no", "yes", "yes", "yes"]
    assert len({r["seat"] for r in rows}) == 4 and not any("seat-" in r["seat"] for r in rows)  # hashed
    assert app.test_client().get("/api/dashboard/answers.csv").status_code == 403


def test_the_reveals_why_is_said_from_the_stages_own_step(classroom):
    # K1 before step 3: which entries will A hold once it restarts? The stage's own step says why: A restarted and
    # kept its log (the generation strategy), not the model's words restating the answer.
    app, socketio, dashboard = classroom
    instructor = connect(socketio, app, auth={"token": "secret"})
    guide_to(dashboard, instructor, "k1", 2)
    q = control(instructor, "question_ask", n=0)["question"]
    assert q["kind"] == "entries"
    assert control(instructor, "question_close")["ok"]
    assert wait_until(lambda: dashboard.room.shown.state == "revealed", 30)
    view = dashboard.room.view()
    assert view["choices"][view["right"]] == "m1 m2" and "stage" not in view
    assert str(view["why"]).startswith("A restarted and kept its whole log: with the generation strategy ")
    watched = dashboard.guide.watched
    assert watched["step"] == 3 and any(e.get("type") == "node_restarted" for e in watched["events"])


def test_a_stage_that_departs_from_the_rule_is_told_the_rule_without_the_models_figures():
    room, _, q = room_with_question()
    asked = room.close()
    other = next(v for v in q.values if v != q.values[q.right])
    view = room.reveal(asked, q.right, stage=other, why=say("A made-up reason of the stage"))
    assert view["why"] == rule_why(q.ask) and "stage" in view  # no figure of a run the room did not watch
    agreeing = room.reveal(asked, q.right, why=say("what the room watched"))
    assert agreeing["why"] == "what the room watched"


def test_no_page_is_sent_the_narration_of_a_step_before_it_plays(classroom):
    # S1 asked at each question: every message any page gets (hello, guide, question, frames) before a step plays
    # holds none of that step's narration, nor its questions' answers before the reveal.
    app, socketio, dashboard = classroom
    instructor = connect(socketio, app, auth={"token": "secret"})
    student = connect(socketio, app)
    scenario = scripts.load("s1")
    texts = [str(t) for t in step_texts(scenario)]
    hello = received(student, "hello")[0]["args"][0]
    assert not any(t in repr(hello) for t in texts)
    guide_to(dashboard, instructor, "s1", 0)
    for step in range(len(scenario.steps)):
        got = repr([m["args"] for m in received(student)])
        for later in texts[step:]:  # the steps not played yet
            assert later not in got, (step, later)
        assert "next_text" not in got
        if asks_of(scenario, step):
            assert control(instructor, "question_ask", n=0)["ok"]
            shown = repr([m["args"] for m in received(student)])
            assert texts[step] not in shown and "'right'" not in shown and "'why'" not in shown
            assert control(instructor, "question_close")["ok"]
            assert wait_until(lambda: dashboard.room.shown.state == "revealed", 30)
            assert control(instructor, "question_dismiss")["ok"]
        else:
            assert control(instructor, "guide_next")["ok"]
        assert wait_until(lambda: not dashboard.guide.state()["busy"] and dashboard.guide.state()["done"] == step + 1,
                          30)
        dashboard.tick()


def test_a_cluster_started_by_hand_ends_the_guided_run_and_keeps_the_rooms_own_strategy(classroom):
    app, socketio, dashboard = classroom
    instructor = connect(socketio, app, auth={"token": "secret"})
    spanish = connect(socketio, app, auth={"lang": "es"})
    assert control(instructor, "guide_start", scenario="k1", truncation="high-water-mark", replace=True)["ok"]
    assert wait_until(lambda: not dashboard.guide.state()["busy"], 30)
    assert dashboard.host.started[-1][1] == {"truncation": "high-water-mark"}  # the guided run's own
    assert control(instructor, "guide_next")["ok"]
    assert wait_until(lambda: not dashboard.guide.state()["busy"] and dashboard.guide.state()["done"] == 1, 30)
    received(spanish)
    assert control(instructor, "start_cluster", nodes=3)["ok"]
    assert "truncation" not in dashboard.host.started[-1][1]  # not inherited from the guided run
    state = dashboard.guide.state()
    assert state["active"] is False and state["error"] == REPLACED  # one sentence, no stale "step 1 of 5"
    pushed = [m["args"][0] for m in received(spanish, "guide")]
    assert pushed and pushed[-1]["error"] == localize(REPLACED, "es") != str(REPLACED)
    assert control(instructor, "guide_next")["ok"] is False
    # a strategy the room chose by hand is kept, a guided run's or not
    dashboard.tick()
    assert control(instructor, "settings", truncation="leader-epoch")["ok"]
    assert control(instructor, "start_cluster", nodes=3)["ok"]
    assert dashboard.host.started[-1][1]["truncation"] == "leader-epoch"


def test_a_guide_whose_cluster_is_gone_ends_in_the_readers_language(classroom, monkeypatch):
    from lab.core.reasons import CONTROL_UNREACHABLE, Reason
    from lab.processes.client import ClusterUnavailable

    app, socketio, dashboard = classroom
    instructor = connect(socketio, app, auth={"token": "secret"})
    chinese = connect(socketio, app, auth={"lang": "zh"})
    guide_to(dashboard, instructor, "s1", 1)

    def gone(*args, **kwargs):
        raise ClusterUnavailable(Reason(CONTROL_UNREACHABLE, url="http://127.0.0.1:9", error="refused"))

    monkeypatch.setattr(dashboard.guide.run, "run_step", gone)
    received(chinese)
    assert control(instructor, "guide_next")["ok"]
    assert wait_until(lambda: not dashboard.guide.state()["busy"], 30)
    state = dashboard.guide.state()
    assert state["active"] is False and state["error"] == GONE
    said = [m["args"][0]["error"] for m in received(chinese, "guide") if m["args"][0].get("error")]
    assert said[-1] == localize(GONE, "zh") and "ClusterUnavailable" not in said[-1] and "127.0.0.1" not in said[-1]


def test_next_with_a_question_open_closes_it_and_a_dismissed_one_goes_from_every_page(classroom):
    app, socketio, dashboard = classroom
    instructor = connect(socketio, app, auth={"token": "secret"})
    student = connect(socketio, app)
    guide_to(dashboard, instructor, "s1", 1)
    q = control(instructor, "question_ask", n=0)["question"]
    assert control(instructor, "question_ask", n=0)["ok"] is False  # one at a time
    assert control(instructor, "guide_next")["ok"]
    assert wait_until(lambda: dashboard.room.shown.state == "revealed", 30)
    assert dashboard.guide.state()["done"] == 2
    assert student.emit("answer", {"id": q["id"], "choice": 0}, callback=True)["ok"] is False
    received(student)
    assert control(instructor, "question_dismiss")["ok"]
    assert [m["args"] for m in received(student, "question")] in ([[None]], [[]])  # the question goes


def test_a_live_read_is_asked_then_made_and_judged_by_the_rule(classroom):
    app, socketio, dashboard = classroom
    instructor = connect(socketio, app, auth={"token": "secret"})
    student = connect(socketio, app, auth={"seat": "a-student-seat"})
    host = dashboard.host
    host.fake.elect("A")
    dashboard.tick()
    assert control(instructor, "write", payload="e1")["ok"]
    q = control(instructor, "question_ask", node="B", index=2)["question"]
    assert q["choices"] == ["served", "refused", "no answer: the node is down"]
    assert student.emit("answer", {"id": q["id"], "choice": 0}, callback=True)["ok"]
    revealed = control(instructor, "question_close")["question"]
    assert revealed["state"] == "revealed" and revealed["choices"][revealed["right"]] == "refused"
    assert revealed["counts"] == [1, 0, 0] and "stage" not in revealed
    assert [p for p in host.fake.posts if p[0] == "/api/read"][-1][1] == {"index": 2, "node": "B"}
    assert control(instructor, "question_ask", node="B", index=0)["ok"] is False
    assert control(instructor, "question_ask", node="Q", index=1)["ok"] is False


# ---- the room's record, by itself --------------------------------------------------------------------------------


def room_with_question():
    from web.room import Room

    published = []
    room = Room(lambda event, payload: published.append((event, payload)), spawn=lambda fn: None)
    q = model("s1").questions(1)[0]  # where will A's high-water mark be?
    room.ask(q)
    return room, published, q


def test_a_burst_of_answers_reaches_the_pages_as_a_few_counts_not_one_message_each():
    import threading

    from web.room import Room

    published = []
    room = Room(lambda event, payload: published.append((event, payload)),
                spawn=lambda fn: threading.Thread(target=fn, daemon=True).start(), count_every=0.1)
    number = room.ask(model("s1").questions(1)[0])["question"]["id"]
    for k in range(300):
        assert room.answer(f"seat-{k:05d}", number, k % 3)["ok"]
    assert wait_until(lambda: published[-1] == ("question_count", {"id": number, "count": 300}), 15)
    counts = [p for e, p in published if e == "question_count"]
    assert len(counts) <= 5 and counts[-1]["count"] == 300
    room.close()


def test_the_stage_is_named_when_it_departs_from_the_rule_and_the_csv_names_no_page():
    room, published, q = room_with_question()
    right = q.values[q.right]
    assert room.answer("a-page-0001", 1, q.right)["ok"] and room.answer("a-page-0002", 1, (q.right + 1) % 3)["ok"]
    assert room.answer("a-page-0003", 1, True)["ok"] is False  # a choice is a number, not a flag
    assert room.answer("a-page-0003", 2, 0)["error"] == "that question is no longer asked"
    asked = room.close()
    other = next(v for v in q.values if v != right)
    view = room.reveal(asked, q.right, stage=other)
    assert view["stage"] == (f"The cluster on the stage showed {other}: it departs from the lab's rule here.")
    assert sum(view["counts"]) == 2 and view["counts"][q.right] == 1
    assert "stage" not in room.reveal(asked, q.right, stage=right)  # agreeing with the rule: nothing to say
    text = room.csv()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["correct"] for r in sorted(rows, key=lambda r: r["answer"] != str(right))] == ["yes", "no"]
    assert "a-page" not in text and rows[0]["prompt"] == "Where will A's high-water mark be after this step?"
    room.dismiss()
    assert published[-1] == ("question", None) and room.view() is None


def test_a_page_names_itself_within_bounds_or_is_named_by_its_connection():
    from web.room import seat_of

    assert seat_of("a1b2c3d4e5f6", "sid-x") == "a1b2c3d4e5f6"
    for claimed in (None, "", "short", "x" * 65, "has space in it", "../../etc/passwd", 12345678, ["a" * 10]):
        assert seat_of(claimed, "sid-x") == "sid-x", claimed


def test_a_replayed_scenario_asks_its_steps_questions_and_reveals_what_the_run_showed(tmp_path):
    """K1 simulated with high-water-mark truncation, replayed: the model answers with the trace's own strategy,
    closing tells the instructor's page where the step ends, and the reveal reads the run there."""
    trace = tmp_path / "k1"
    simulate("k1", seed=0, out=trace, truncation="high-water-mark")
    app, socketio, dashboard = make_app(REPLAY_DIR=str(trace), TOKEN="secret")
    instructor = connect(socketio, app, auth={"token": "secret"})
    student = connect(socketio, app, auth={"seat": "replay-student-1"})
    asks = received(instructor, "hello")[0]["args"][0]["replay"]["asks"]
    assert [len(a) for a in asks] == [0, 0, 1, 0, 1]  # who leads (step 4) is not asked: the rule leaves A or C
    assert asks[4] == ["Which entries will C hold after this step?"]
    q = control(instructor, "question_ask", replay_step=5, n=0)["question"]
    assert control(instructor, "question_ask", replay_step=4, n=0)["ok"] is False
    labels = q["choices"]
    assert student.emit("answer", {"id": q["id"], "choice": labels.index("m1 m3")}, callback=True)["ok"]
    closed = control(instructor, "question_close")
    steps = dashboard.replay.info()["steps"]
    # (the last step's tick is its last event: the run's)
    assert closed["question"]["state"] == "closed" and closed["play_to"] == len(dashboard.replay) >= steps[-1]["n"]
    assert control(student, "question_reveal")["ok"] is False  # the instructor's page asks for it
    revealed = control(instructor, "question_reveal")["question"]
    assert revealed["choices"][revealed["right"]] == "m1 m3" and revealed["counts"][revealed["right"]] == 1
    assert "stage" not in revealed  # the run agrees with the rule
    step3 = control(instructor, "question_ask", replay_step=3, n=0)  # a revealed question gives way to the next
    assert step3["ok"] and closed["question"]["id"] != step3["question"]["id"]
    assert control(instructor, "question_close")["play_to"] == steps[3]["n"] - 1
