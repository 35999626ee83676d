"""Linearizable reads and the clients' history on real node processes: scenario R1 gives the simulator's verdict;
the control API and `hwm-lab read --linearizable` send a read asked of a follower on to the leader, and refuse
fields of the wrong kind by their reason; a short chaos run with linearizable reads has no stale read."""

from __future__ import annotations

import json

import pytest
from procutil import running_cluster, wait_until
from test_trust import raw

from lab.cli import main
from lab.commands import cluster as cluster_commands
from lab.harness import chaos, history
from lab.i18n.chaos import report as said_report
from lab.processes.client import ControlClient, pid_alive

EXERCISES_NEEDED = (1, 2, 3, 4, 5)
pytestmark = pytest.mark.processes


def test_scenario_r1_as_processes_gives_the_simulators_verdict_and_the_same_stale_read(tmp_path):
    from lab.harness.realdriver import run_real
    from lab.harness.scenario import simulate

    real = run_real("r1", out=tmp_path / "real")[0]
    sim = simulate("r1", out=tmp_path / "sim")
    assert real.passed, real.summary()
    assert [(o.name, o.ok) for o in real.outcomes] == [(o.name, o.ok) for o in sim.outcomes]
    for run in ("real", "sim"):
        found = history.check_dir(tmp_path / run)
        assert [(op.node, op.index, op.hwm, op.leader) for op in found.of_verdict(history.STALE)] == \
            [("C", 4, 3, "A")], run
        assert [(op.target, op.node, op.ok) for op in found.reads if op.linearizable] == [("C", "A", True)], run


def test_a_linearizable_read_asked_of_a_follower_is_answered_by_the_leader(tmp_path, monkeypatch, capsys):
    with running_cluster(tmp_path, nodes=3) as sup:
        leader = wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        follower = next(n for n in sup.names if n != leader)
        api = ControlClient(sup.control_url, token=sup.api_token)
        assert api.write("e1", client="s1")["ok"]
        read = api.read(1, follower, linearizable=True, client="s1")
        assert read["ok"] and read["payload"] == "e1" and read["node"] == leader
        lines = [e for e in sup.event_dicts(0) if e.get("request") == read["request"] or e.get("type") ==
                 "client_read" and e.get("client") == "s1"]
        asked = next(e for e in lines if e["type"] == "client_read")
        answered = next(e for e in lines if e["type"] == "client_answer")
        assert (asked["target"], asked["linearizable"], answered["answered_by"]) == (follower, True, leader)
        assert [e["node"] for e in lines if e["type"] == "read_served"] == [leader]
        # the command line, on this cluster
        monkeypatch.setattr(cluster_commands, "cluster_info", lambda _dir: {"control_url": sup.control_url,
                                                                           "token": sup.api_token})
        assert main(["read", "1", "--node", follower, "--linearizable"]) == 0
        assert f"from the leader {leader}, which confirmed it still leads" in capsys.readouterr().out
        assert main(["read", "1", "--node", follower, "--linearizable", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["node"] == leader
        # fields of the wrong kind, refused by their reason
        headers = {"Content-Type": "application/json", "X-HWM-Token": sup.api_token}
        for body, kind in (({"index": 1, "linearizable": "yes"}, "api_yes_no"),
                           ({"index": 1, "client": "a b/../c"}, "api_client_name"),
                           ({"index": 1, "client": 7}, "api_text")):
            status, said = raw(sup.control_url, "POST", "/api/read", json.dumps(body).encode(), headers)
            assert status == 400 and said["because"]["kind"] == kind, (body, said)


def test_a_short_chaos_run_with_linearizable_reads_has_no_stale_read(tmp_path):
    report = chaos.run({"nodes": 3, "duration": 6.0, "interval": 0.4, "seed": 4, "settle": 30.0,
                        "linearizable": True, "dir": str(tmp_path / "run")}, out=lambda *_, **__: None)
    found = report.history
    served = [op for op in found.reads if op.linearizable and op.ok]
    assert len(served) > 20 and found.of_verdict(history.STALE) == [] and found.linearizable is True
    assert {op.node for op in served} <= set(report.final)
    assert [name for name, *_ in report.targets[-2:]] == ["stale reads", "linearizable"]
    assert all(met for *_, met in report.targets[-2:])
    said = str(said_report(report))
    assert "reads by node: served" in said and "  w0: read-your-writes 0, monotonic reads 0" in said
    assert "PASS  stale reads: 0 (target 0)" in said and "PASS  linearizable: yes (target yes)" in said
    assert not any(pid_alive(pid) for pid in report.pids)
