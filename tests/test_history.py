"""The clients' history (lab/harness/history.py): on planted histories it finds each kind it names (a stale read, a
session that reads back in time, a dirty read served above the mark by a broken check_read) and passes a
linearizable one; the linearizability search agrees with trying every order; the dashboard's rule agrees with it."""

from __future__ import annotations

import itertools
import json
import zipfile

import pytest
from hypothesis import given, settings, strategies as st

from lab.cli import main
from lab.harness import history
from lab.harness.history import DIRTY, MONOTONIC, REFUSED, RYW, SERVED, STALE, UNANSWERED, StaleWatch, check
from lab.harness.linearizable import NEVER, READ, REGISTER_ONCE, WRITE, Op, check_part
from lab.harness.scenario import simulate
from lab.i18n import localize
from lab.i18n.history import report
from lab.i18n.intervals import intervals_svg
from lab.ports.trace import read_trace


# ---- planted histories: the clients' lines of a cluster's trace, in their order -----------------------------------


class Planted:
    """A history written as the cluster's file would hold it: each line numbered in order, at the time given."""

    def __init__(self):
        self.events: list[dict] = []

    def line(self, time: float, kind: str, node: str = "cluster", **fields) -> None:
        self.events.append({"v": 1, "seq": len(self.events) + 1, "time": time, "node": node, "boot": 1 if node !=
                            "cluster" else 0, "gen": 1, "type": kind, **fields})

    def write(self, t0: float, t1: float, request: str, payload: str, index: int, by: str, client: str = "c1"):
        self.line(t0, "client_write", request=request, payload=payload, digest=f"d-{payload}", client=client)
        self.line(t1, "client_answer", request=request, ok=True, answered_by=by, index=index, hwm=index,
                  digest=f"d-{payload}")

    def read(self, t0: float, t1: float, request: str, index: int, node: str, hwm: int, served: str | None,
             client: str = "c1"):
        self.line(t0, "client_read", request=request, index=index, target=node, client=client)
        if served is None:
            self.line(t1, "client_answer", request=request, ok=False, answered_by=node, index=index, hwm=hwm,
                      refusal="above_hwm")
        else:
            self.line(t1, "client_answer", request=request, ok=True, answered_by=node, index=index, hwm=hwm,
                      digest=f"d-{served}")


def test_a_read_refused_after_its_index_was_acknowledged_is_stale_and_breaks_its_sessions_read_your_writes():
    h = Planted()
    h.line(0.0, "became_leader", node="A", generation=1)
    h.line(0.0, "hwm_changed", node="A", from_hwm=3, hwm=4, role="leader", committed=[[4, 1, "d-e4"]])
    h.write(1.0, 1.1, "w1", "e4", 4, "A")
    h.read(1.2, 1.3, "r2", 4, "C", hwm=3, served=None)
    found = check(h.events)
    (read,) = found.reads
    assert read.verdict == STALE and read.node == "C" and read.hwm == 3
    assert read.acked_before.request == "w1" and (read.leader, read.leader_hwm) == ("A", 4)
    assert [(v.kind, v.client, v.earlier.request) for v in found.sessions] == [(RYW, "c1", "w1")]
    assert found.linearizable is False and found.not_linearizable() == [4]
    assert found.by_node() == {"C": {STALE: 1}}


def test_the_same_refusal_while_the_write_is_still_under_way_is_neither_stale_nor_a_break_of_order():
    h = Planted()
    h.line(1.0, "client_write", request="w1", payload="e4", digest="d-e4", client="c1")
    h.read(1.2, 1.3, "r2", 4, "C", hwm=3, served=None, client="c2")  # asked before the write's answer came
    h.line(1.4, "client_answer", request="w1", ok=True, answered_by="A", index=4, hwm=4, digest="d-e4")
    found = check(h.events)
    assert found.reads[0].verdict == REFUSED and found.sessions == []
    assert found.linearizable is True


def test_a_session_that_reads_an_index_then_is_refused_it_elsewhere_breaks_monotonic_reads():
    h = Planted()
    h.write(0.5, 0.6, "w1", "e5", 5, "A", client="writer")
    h.read(1.0, 1.1, "r2", 5, "B", hwm=5, served="e5", client="reader")
    h.read(1.2, 1.3, "r3", 4, "C", hwm=3, served=None, client="reader")  # an earlier index, gone back in time
    found = check(h.events)
    assert [(v.kind, v.client, v.earlier.request, v.later.request) for v in found.sessions] == \
        [(MONOTONIC, "reader", "r2", "r3")]
    assert found.sessions_of(MONOTONIC) == {"reader": 1, "writer": 0}
    assert found.sessions_of(RYW) == {"reader": 0, "writer": 0}
    assert [op.verdict for op in found.reads] == [SERVED, REFUSED]  # index 4's write is nobody's: not stale


def test_a_broken_check_read_serves_above_the_mark_and_the_history_calls_it_dirty(tmp_path):
    """S1 with exercise 4 serving whatever the log holds: A serves its local-only e4, which e5 replaces."""
    simulate("s1", impl="tests.wrong_variants.ex4_serves_above_hwm", out=tmp_path)
    found = history.check_dir(tmp_path)
    (dirty,) = found.of_verdict(DIRTY)
    assert (dirty.node, dirty.index, dirty.hwm) == ("A", 4, 3)
    assert found.linearizable is False and 4 in found.not_linearizable()
    said = localize(report(found, "s1"), "en")
    assert "dirty: A served index 4" in said and "above its mark 3" in said


def test_a_history_with_no_stale_read_is_linearizable_and_says_so(tmp_path):
    simulate("s1", out=tmp_path)
    found = history.check_dir(tmp_path)
    assert found.from_answers and found.linearizable is True
    assert {op.verdict for op in found.reads} == {SERVED, REFUSED}
    assert found.sessions == [] and found.of_verdict(STALE) == []
    assert "linearizable: yes" in localize(report(found, "s1"), "en")


def test_r1s_trace_holds_one_stale_read_at_c_and_its_linearizable_read_is_served_by_a(tmp_path):
    assert simulate("r1", out=tmp_path).passed
    found = history.check_dir(tmp_path)
    (stale,) = found.of_verdict(STALE)
    assert (stale.node, stale.index, stale.hwm, stale.leader, stale.leader_hwm) == ("C", 4, 3, "A", 4)
    linearizable = [op for op in found.reads if op.linearizable]
    assert [(op.target, op.node, op.verdict) for op in linearizable] == [("C", "A", SERVED)]
    assert found.not_linearizable() == [4]


@pytest.mark.parametrize("read_at, stale", [(1.3, True), (1.1, False)])
def test_without_the_clients_lines_the_nodes_lines_still_show_a_stale_read(read_at, stale):
    """An older trace (no client lines): intervals from the nodes' own lines, each widened to its whole instant, so
    that a read at the very instant of the acknowledgement is taken as concurrent, never as after it."""
    h = Planted()
    h.line(1.0, "write_requested", node="A", request="w1", digest="d-e4", payload="e4")
    h.line(1.0, "leader_append", node="A", index=4, generation=1, digest="d-e4", payload="e4", request="w1")
    h.line(1.1, "write_acked", node="A", request="w1", index=4, generation=1, digest="d-e4")
    h.line(read_at, "read_refused", node="C", index=4, hwm=3, reason="not available", request="r2")
    found = check(h.events)
    assert not found.from_answers
    assert [op.verdict for op in found.reads] == [STALE if stale else REFUSED]
    assert found.linearizable is (not stale)


def test_the_feeds_rule_finds_the_stale_reads_the_history_finds(tmp_path):
    from lab.sim.cluster import SimCluster
    from lab.harness.scenario import SimDriver

    cluster = SimCluster(3, seed=3)
    driver = SimDriver(cluster)
    cluster.run_until(lambda: cluster.leader() is not None)
    leader = cluster.leader()
    lagging = [n for n in cluster.names if n != leader]
    for k in range(1, 4):
        driver.write(f"e{k}")
    cluster.cut(leader, lagging[1], one_way=True)
    for k in range(4, 7):
        driver.write(f"e{k}")
        cluster.read(k, lagging[1], client="c1")
        cluster.read(k - 1, lagging[0], client="c2")
    events = sorted(cluster.events, key=lambda e: (e["time"], e["node"], e["seq"]))
    watch = StaleWatch()
    said = [s for s in (watch.observe(e) for e in events) if s is not None]
    found = check(cluster.events).of_verdict(STALE)
    assert found and [(s.request, s.node, s.index) for s in said] == [(op.request, op.node, op.index) for op in found]


def test_unanswered_reads_are_counted_for_the_node_they_asked():
    h = Planted()
    h.line(1.0, "client_read", request="r1", index=2, target="B", client="c1")
    h.line(1.1, "client_answer", request="r1", ok=False, index=2, refusal="node_down")
    found = check(h.events)
    assert [op.verdict for op in found.reads] == [UNANSWERED] and found.by_node() == {"B": {UNANSWERED: 1}}


# ---- the search ---------------------------------------------------------------------------------------------


def op(start, end, kind, value=None, output=None):
    return Op((start, 0), NEVER if end is None else (end, 0), (kind, value), output, None)


def test_a_write_once_register_by_hand():
    assert check_part([op(0, 1, WRITE, "a"), op(2, 3, READ, output="a")]).ok
    assert not check_part([op(0, 1, WRITE, "a"), op(2, 3, READ, output=None)]).ok  # read after: not empty
    assert check_part([op(0, 3, WRITE, "a"), op(1, 2, READ, output=None)]).ok  # concurrent: before the write
    assert not check_part([op(0, 1, WRITE, "a"), op(2, 3, WRITE, "b")]).ok  # written once
    assert check_part([op(0, None, WRITE, "a"), op(5, 6, READ, output="a")]).ok  # never answered, yet seen
    assert not check_part([op(5, None, WRITE, "a"), op(0, 1, READ, output="a")]).ok  # seen before it was asked
    assert check_part([op(0, 1, READ, output=None), op(2, 3, WRITE, "a"), op(4, 5, READ, output="a")]).ok


OPS = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 4), st.sampled_from([WRITE, READ]),
                         st.sampled_from(["a", "b", None]), st.booleans()), min_size=1, max_size=6)


def by_every_order(ops: list[Op]) -> bool:
    """Every order of the operations that respects their times, tried in turn on the model."""
    for order in itertools.permutations(ops):
        if any(order.index(x) > order.index(y) for x in ops for y in ops if x.end < y.start):
            continue
        state, ok = REGISTER_ONCE.init, True
        for o in order:
            ok, state = REGISTER_ONCE.step(state, o.input, o.output)
            if not ok:
                break
        if ok:
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_the_search_finds_an_order_exactly_when_one_exists(drawn):
    ops = []
    for start, length, kind, value, pending in drawn:
        end = None if pending and kind == WRITE else start + length
        ops.append(op(start, end, kind, value if kind == WRITE else None, value if kind == READ else None))
    ops = [o for o in ops if o.input[0] == READ or o.input[1] is not None]
    if ops:
        assert check_part(ops).ok == by_every_order(ops)


def test_a_search_out_of_budget_says_it_decided_nothing():
    ops = [op(0, 10, READ, output=None) for _ in range(8)] + [op(0, 10, WRITE, "a"), op(11, 12, READ, output="b")]
    assert check_part(ops, budget=5).ok is None


# ---- hwm-lab history ----------------------------------------------------------------------------------------


def test_hwm_lab_history_prints_the_report_draws_the_intervals_and_exits_1_on_a_stale_read(tmp_path, capsys):
    simulate("r1", out=tmp_path / "r1")
    code = main(["history", str(tmp_path / "r1"), "--svg", str(tmp_path / "r1.svg")])
    out = capsys.readouterr().out
    assert code == 1
    assert "  C: served 1, refused 0, stale 1, dirty 0" in out
    assert "stale: C refused index 4" in out and "the leader A's mark was 4" in out
    assert "client: read-your-writes 1, monotonic reads 0" in out
    assert "linearizable: no" in out
    svg = (tmp_path / "r1.svg").read_text(encoding="utf-8")
    assert svg.count('class="op stale"') == 1 and 'class="acked-before"' in svg


def test_hwm_lab_history_reads_a_folder_of_runs_and_a_submissions_zip_and_speaks_spanish(tmp_path, capsys):
    simulate("s1", out=tmp_path / "runs" / "s1")
    simulate("n4", out=tmp_path / "runs" / "n4")
    assert main(["history", str(tmp_path / "runs"), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["run"] for r in runs] == ["n4-generation-seed0", "s1-generation-seed0"]
    assert all(r["linearizable"] is True and r["stale"] == [] for r in runs)
    with zipfile.ZipFile(tmp_path / "hand-in.zip", "w") as zf:
        for path in (tmp_path / "runs" / "s1").iterdir():
            zf.write(path, f"runs/s1/{path.name}")
    assert main(["history", str(tmp_path / "hand-in.zip"), "--lang", "es"]) == 0
    said = capsys.readouterr().out
    assert "linealizable: sí" in said and "lecturas por nodo" in said


def test_hwm_lab_history_on_a_folder_without_a_trace_says_so(tmp_path, capsys):
    assert main(["history", str(tmp_path)]) == 2
    assert "no trace in" in capsys.readouterr().err
    assert main(["history", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_intervals_drawing_keeps_a_long_history_around_its_first_stale_read():
    h = Planted()
    h.write(0.0, 0.1, "w1", "e1", 1, "A")
    for k in range(600):
        h.read(1 + k, 1.5 + k, f"r{k}", 1, "B", hwm=1, served="e1" if k != 450 else None)
    found = check(h.events)
    svg = intervals_svg(found, lang="zh")
    assert svg.count('class="op stale"') == 1 and svg.count("<g class=\"op ") == 400
    assert "陈旧读" in svg


def test_the_feeds_rule_remembers_a_bounded_number_of_requests_and_indexes(monkeypatch):
    """A dashboard runs for hours: what its stale-read rule remembers stays bounded, the newest kept."""
    monkeypatch.setattr(StaleWatch, "KEPT", 10)
    watch = StaleWatch()
    for k in range(1, 101):
        watch.observe({"node": "cluster", "type": "client_write", "request": f"w{k}"})
        watch.observe({"node": "cluster", "type": "client_answer", "request": f"w{k}", "ok": True, "index": k,
                       "answered_by": "A"})
    assert len(watch.acked) == 11 and 100 in watch.acked and 1 not in watch.acked
    watch.observe({"node": "cluster", "type": "client_read", "request": "r1", "index": 100})
    stale = watch.observe({"node": "cluster", "type": "client_answer", "request": "r1", "ok": False, "index": 100,
                           "answered_by": "C", "hwm": 90, "refusal": "above_hwm"})
    assert (stale.node, stale.index, stale.hwm, stale.write) == ("C", 100, 90, "w100")


def test_hwm_lab_history_refuses_a_budget_below_one_in_the_readers_language(tmp_path, capsys):
    assert main(["history", str(tmp_path), "--budget", "0", "--lang", "es"]) == 2
    assert "--budget debe ser un número entero a partir de 1, no 0" in capsys.readouterr().err
