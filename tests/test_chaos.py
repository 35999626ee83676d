"""The nemesis (lab/harness/chaos.py, hwm-lab chaos): its checker (checker.py) reports a planted lost write and a planted
read above the high-water mark, and nothing in a clean history; a short seeded run against real processes checks clean; and against a
replica that serves above the high-water mark, the same run catches it.

Every process a run starts is stopped before `run` returns, pass or fail; each run is a few seconds long.
"""

from __future__ import annotations

import json

import pytest
from procutil import track

from lab import cli
from lab.core.messages import digest
from lab.harness import chaos, checker
from lab.i18n import localize
from lab.i18n.chaos import report as said_report
from lab.processes.client import pid_alive

EXERCISES_NEEDED = (1, 2, 3, 4, 5)


# ---- the checker, on fabricated histories ----------------------------------------------------------------------


def _entry(index, generation, payload):
    return [index, generation, digest(payload)]


def _history():
    """Three entries committed in generation 1 on A (leader) and B, a read of index 2 on B: all correct."""
    log = [[1, 1, "a"], [2, 1, "b"], [3, 1, "c"]]
    writes = [checker.WriteRecord("w0", p, True, index=i, generation=1, node="A") for i, _, p in log]
    reads = [checker.ReadRecord("r0", "B", 2, True, generation=1, payload="b", hwm=3)]
    events = [
        {"type": "became_leader", "node": "A", "generation": 1, "time": 0.1, "seq": 1},
        {"type": "hwm_changed", "node": "A", "time": 0.2, "seq": 2, "hwm": 3,
         "committed": [_entry(*e) for e in log]},
        {"type": "write_acked", "node": "A", "time": 0.2, "seq": 3, "request": "w1", "index": 3, "generation": 1,
         "digest": digest("c")},
        {"type": "read_served", "node": "B", "time": 0.3, "seq": 1, "index": 2, "hwm": 3,
         "entry": _entry(2, 1, "b"), "payload": "b"},
    ]
    final = {"A": {"log": [list(e) for e in log], "hwm": 3}, "B": {"log": [list(e) for e in log], "hwm": 3},
             "C": {"log": [list(e) for e in log], "hwm": 3}}
    return writes, reads, events, final


def test_the_checker_passes_a_clean_history():
    verdict = checker.check(*_history())
    assert verdict.lost == [] and verdict.violations == []
    assert (verdict.acknowledged, verdict.acked_by_nodes, verdict.reads_served, verdict.reads_traced) == (3, 1, 1, 1)


def test_the_checker_reports_a_lost_write_and_a_read_above_the_hwm():
    writes, reads, events, final = _history()
    # C came back without index 3, which the client was told is committed (C's log ends at 2)
    final["C"] = {"log": final["C"]["log"][:2], "hwm": 2}
    # B served index 3 while its high-water mark was 2, and a node traced a read of index 3 above its mark of 2
    reads.append(checker.ReadRecord("r1", "B", 3, True, generation=1, payload="c", hwm=2))
    events.append({"type": "read_served", "node": "C", "time": 0.4, "seq": 2, "index": 3, "hwm": 2,
                   "entry": _entry(3, 1, "c"), "payload": "c"})

    verdict = checker.check(writes, reads, events, final)

    assert len(verdict.lost) == 1
    assert "'c' acknowledged to w0 at index 3" in verdict.lost[0] and "C (log ends at 2)" in verdict.lost[0]
    assert "B served index 3 above its high-water mark 2" in verdict.violations
    assert "C served index 3 above its high-water mark 2" in verdict.violations


def test_the_checker_reports_overwritten_history_and_wrong_reads():
    writes, reads, events, final = _history()
    # B's log was rewritten below its high-water mark: index 2 holds another generation's entry
    final["B"]["log"][1] = [2, 2, "x"]
    # a read served an entry that was never committed there; two leaders claimed generation 1
    reads.append(checker.ReadRecord("r1", "A", 1, True, generation=1, payload="not-a", hwm=3))
    events.append({"type": "became_leader", "node": "C", "generation": 1, "time": 0.5, "seq": 1})

    verdict = checker.check(writes, reads, events, final)

    assert any("disagree at index 2" in v for v in verdict.violations), verdict.violations
    assert any("A served generation 1" in v and "at index 1" in v for v in verdict.violations), verdict.violations
    assert "two leaders in generation 1: A and C" in verdict.violations
    assert any("'b' acknowledged" in lost and "B (holds generation 2 'x')" in lost for lost in verdict.lost)


def test_leader_gaps_are_measured_from_the_kill_to_a_later_generation():
    faults = [checker.Fault(time=1.0, op="kill", target="A", leader="A", leader_generation=3),
              checker.Fault(time=5.0, op="kill", target="B", leader="A", leader_generation=4)]  # not the leader
    events = [{"type": "node_killed", "node": "cluster", "target": "A", "time": 1.2},
              {"type": "became_leader", "node": "A", "generation": 3, "time": 1.3},  # a stale claim: ignored
              {"type": "became_leader", "node": "C", "generation": 4, "time": 1.9},
              {"type": "node_killed", "node": "cluster", "target": "B", "time": 5.1}]
    gaps, without = checker.leader_gaps(faults, events)
    assert gaps == [(1.2, pytest.approx(0.7))] and without == 0


# ---- real processes ----------------------------------------------------------------------------------------


def _run(tmp_path, **options):
    """A few seconds of faults on 3 nodes; `run` stops every process it started before it returns or raises."""
    report = chaos.run({"nodes": 3, "duration": 5.0, "interval": 0.3, "seed": 7, "settle": 30.0,
                        "dir": str(tmp_path / "run"), **options}, out=lambda *_, **__: None)
    track(*report.pids)  # belt and braces: procutil kills any survivor at exit
    return report


@pytest.mark.processes
def test_a_short_nemesis_run_checks_clean(tmp_path, impl, request):
    report = _run(tmp_path, impl=request.config.getoption("--impl"))

    kinds = {f.op for f in report.faults if not f.refused}
    assert len(report.faults) >= 8 and kinds & {"kill", "restart", "pause"} and kinds & {"cut", "cut_one_way",
                                                                                          "isolate"}, kinds
    assert report.verdict.acknowledged > 50, "the writers must get writes through between the faults"
    assert report.verdict.reads_served > 10
    assert report.converged and set(report.final) == {"A", "B", "C"}
    assert report.verdict.lost == [] and report.verdict.violations == []
    assert report.elections_won >= 1
    lines = str(said_report(report)).splitlines()
    # the clients' history beside the checks: every node's reads, every session's guarantees, linearizability
    counted = report.history.by_node()
    assert sum(sum(c.values()) for c in counted.values()) == len(report.history.reads) > 10
    assert {f"  {node}: served {c['served']}, refused {c['refused']}, stale {c['stale']}, dirty 0, not answered "
            f"{c['unanswered']}" for node, c in counted.items()} <= set(lines), lines
    sessions = {line.split(":")[0].strip() for line in lines if ": read-your-writes " in line}
    assert {"w0", "w1", "w2", "w3", "r0", "r1"} <= sessions, lines
    assert any(line.startswith("linearizable: ") for line in lines)
    spanish = localize(said_report(report), "es").splitlines()
    assert spanish[-4].startswith("PASA  escrituras con acuse de recibo perdidas: 0"), spanish
    assert any(line.startswith("PASS  acknowledged writes lost: 0") for line in lines), lines
    assert not any(pid_alive(pid) for pid in report.pids), "every node process is stopped"


@pytest.mark.processes
def test_the_nemesis_catches_a_replica_that_serves_above_the_hwm(tmp_path):
    report = _run(tmp_path, impl="tests.wrong_variants.ex4_serves_above_hwm", seed=5)

    above = [v for v in report.verdict.violations if "above its high-water mark" in v]
    assert above, report.verdict.violations
    assert not any(pid_alive(pid) for pid in report.pids)


@pytest.mark.processes
def test_the_nemesis_reports_the_articles_majority_broken_on_four_nodes(tmp_path):
    report = _run(tmp_path, nodes=4, impl="tests.wrong_variants.ex1_article_formula", seed=1)

    broken = [v for v in report.verdict.violations if v.startswith("hwm-majority:")]
    assert broken and "of 4 nodes (a majority is 3)" in broken[0], report.verdict.violations
    assert not any(pid_alive(pid) for pid in report.pids)


@pytest.mark.processes
def test_hwm_lab_chaos_runs_the_nemesis_and_says_why_it_cannot(tmp_path, capsys):
    code = cli.main(["chaos", "--nodes", "3", "--duration", "2", "--interval", "0.3", "--seed", "3", "--json",
                     "--dir", str(tmp_path / "run")])
    out = capsys.readouterr().out
    figures = json.loads(out.strip().splitlines()[-1])
    assert (figures["lost"], figures["violations"], figures["converged"]) == (0, 0, True), out
    assert figures["acknowledged"] > 0 and code == (0 if figures["passed"] else 1)
    history = figures["history"]  # the clients' history in figures: per node, per session, no list of operations
    assert sum(sum(c.values()) for c in history["reads_by_node"].values()) > 0 and "w0" in history["sessions"][
        "read_your_writes"] and history["linearizable"] in (True, False) and isinstance(history["stale"], int)
    assert "PASS  acknowledged writes lost: 0 (target 0)" in out

    assert cli.main(["chaos", "--impl", "no_such_module", "--duration", "1", "--dir", str(tmp_path / "bad")]) == 4
    assert "hwm-lab chaos: cannot import implementation 'no_such_module'" in capsys.readouterr().err


def test_the_checker_applies_the_graders_rules_to_the_trace(tmp_path):
    """The article's n/2 on 4 nodes loses nothing a client sees in a short run, but its leader raises the mark
    over what only 2 of 4 nodes hold: the checker reports the rule (lab.core.monitor), given the cluster's size."""
    from lab.harness.scenario import simulate

    simulate("n4", impl="tests.wrong_variants.ex1_article_formula", out=tmp_path / "article")
    simulate("n4", impl="solutions", out=tmp_path / "reference")
    article, reference = (checker.read_trace(tmp_path / name) for name in ("article", "reference"))
    broken = checker.check([], [], article, {}, size=4).violations
    assert any(v.startswith("hwm-majority: leader") and "of 4 nodes (a majority is 3)" in v for v in broken), broken
    assert not any(v.startswith("hwm-majority") for v in checker.check([], [], article, {}).violations)
    assert not [v for v in checker.check([], [], reference, {}, size=4).violations if ":" in v.split(" ")[0]]


def _a_report(tmp_path, **changes) -> chaos.Report:
    writes = [checker.WriteRecord("w0", f"p{i}", ok=i % 5 != 0, index=i, refusal="" if i % 5 else "timeout")
              for i in range(1, 1201)]
    reads = [checker.ReadRecord("r0", "A", 1, ok=i % 4 != 0, refusal="" if i % 4 else "above_hwm") for i in range(40)]
    faults = [checker.Fault(1.0, "kill", "A", leader="A"), checker.Fault(1.5, "pause", "B", leader="C"),
              checker.Fault(2.0, "restart", "A", leader="C", refused="not killed")]
    values = dict(options={}, faults=faults, writes=writes, reads=reads,
                  verdict=checker.Verdict(960, 960, 30, 30), elections_started=4, elections_won=2, prevotes_started=3,
                  leader_gaps=[(1.0, 0.75)], leader_kills_without_successor=0,
                  node_exits=[{"code": 73, "reason": "disk full: ..."}], converged=True, settle_seconds=2.25,
                  final={"A": {"hwm": 1100}}, not_live=[], pids=[], run_dir=str(tmp_path))
    return chaos.Report(**{**values, **changes})


def test_the_report_is_said_in_the_readers_language_with_its_numbers(tmp_path):
    from tests.test_i18n_commands import left_in

    report = _a_report(tmp_path)
    english = str(said_report(report)).splitlines()
    assert english[0] == "faults    kill 1, pause 1 (1 of the kills and restarts hit the leader; 1 refused by the " \
                         "supervisor)"
    assert english[1] == "writes    960 acknowledged, 240 not (timeout 240)"
    assert english[2] == "reads     30 served, 10 refused (above the high-water mark 10)"
    assert "PASS  acknowledged writes lost: 0 (target 0)" in english
    spanish, chinese = localize(said_report(report), "es"), localize(said_report(report), "zh")
    assert "fallos     muerte: 1 y pausa: 1 (" in spanish, spanish  # the faults named, listed as Spanish lists
    assert "escrituras con acuse de recibo: 960; sin él: 240 (tiempo agotado: 240)" in spanish, spanish
    assert "PASA  escrituras con acuse de recibo perdidas: 0 (objetivo 0)" in spanish
    assert "故障  杀死 1 次、暂停 1 次（" in chinese, chinese  # 、 between the items, no English comma
    assert "写入  已确认 960 次，未确认 240 次（超时 240 次）" in chinese, chinese
    assert "（高于高水位标记 10 次）" in chinese and "故障之后收敛：是，用时 2.2 秒（目标：是）" in chinese, chinese
    for lang, said in (("es", spanish), ("zh", chinese)):
        assert left_in(lang, said) == [], said
        assert len(said.splitlines()) == len(english)
        assert ", " not in said if lang == "zh" else True, said
    stuck = localize(said_report(_a_report(tmp_path, converged=False, not_live=[("B", "killed")], leader_gaps=[],
                                           elections_won=0, final={"A": {"hwm": 1100}, "C": {"hwm": 1099}})), "es")
    assert "NO convergió 2,2 s después" in stuck and "sin funcionar: B (muerto)" in stuck, stuck
    assert "marcas de agua alta A en 1.100 y C en 1.099" in stuck, stuck
    assert "高水位标记 A 为 1,100、C 为 1,099；未在运行：B（已被杀死）" in localize(said_report(_a_report(
        tmp_path, not_live=[("B", "killed")], final={"A": {"hwm": 1100}, "C": {"hwm": 1099}})), "zh")


@pytest.mark.parametrize("changes, one, many", [
    ({"leader_gaps": [(1.0, 0.75)]}, "leader    killed once: time to a new leader 0.75 s", "killed 1 times"),
    ({"leader_gaps": [(1.0, 0.75), (3.0, 1.5)]}, "leader    killed 2 times: time to a new leader median 1.12 s",
     "killed once"),
    ({"prevotes_started": 1}, "; 1 pre-vote asked first", "1 pre-votes"),
    ({"prevotes_started": 3}, "; 3 pre-votes asked first", "1 pre-vote "),
    ({"node_exits": [{"code": 73, "reason": "disk full: ..."}]}, "exits     1 node exited on its own (code 73 ×1; "
     "disk full 1)", "1 node exits"),
    ({"node_exits": [{"code": 73, "reason": "disk full: ..."}, {"code": 74, "reason": "fsync failed: ..."}]},
     "exits     2 node exits on their own (codes 73 ×1, 74 ×1; disk full 1, fsync failed 1)", "exited on its own"),
    ({"node_exits": []}, "exits     no node exited on its own", "0 node"),
])
def test_a_count_of_one_is_said_as_one_in_every_language(tmp_path, changes, one, many):
    """A count of one has a sentence of its own ("killed once", not "killed 1 times"), in English as in Spanish
    and Chinese: each variant is translated and none keeps English."""
    from tests.test_i18n_commands import left_in

    said = said_report(_a_report(tmp_path, **changes))
    assert one in str(said) and many not in str(said), str(said)
    for lang in ("es", "zh"):
        assert left_in(lang, localize(said, lang)) == [], localize(said, lang)
    if changes.get("leader_gaps") == [(1.0, 0.75)]:
        assert "líder      una muerte;" in localize(said, "es") and "muertes: 1" not in localize(said, "es")


def test_a_faults_target_and_setting_are_said_in_the_language(tmp_path):
    faults = [checker.Fault(1.0, "kill", "A", leader="A"), checker.Fault(1.2, "delay", "A->B", leader="C",
                                                                         delay_ms=30),
              checker.Fault(1.3, "drop", "*", leader="C", drop_rate=0.12)]
    said = said_report(_a_report(tmp_path, faults=faults))
    assert "new leader: kill A, delay A->B 30 ms, drop on every link (loss rate 0.12)" in str(said), str(said)
    assert "muerte A, retardo A->B (30 ms) y pérdida de mensajes en todos los enlaces (tasa de pérdida 0,12)" in \
        localize(said, "es")
    assert "杀死 A、延迟 A->B（30 ms）、所有链路上的消息丢弃（丢弃率 0.12）" in localize(said, "zh")
