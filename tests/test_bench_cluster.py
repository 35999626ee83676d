"""bench/cluster.py's own pieces: the legs of a write read from a trace, a peer that is not installed skipped with
one line, and the etcd request it sends (the figures themselves are measured by running it, never in tests)."""

from __future__ import annotations

import argparse
import json

import pytest

from bench import cluster, etcd_peer


def write_events(run_dir, node, lines):
    with open(run_dir / f"events-{node}.jsonl", "w", encoding="utf-8") as f:
        for seq, (time, kind, fields) in enumerate(lines, start=1):
            f.write(json.dumps({"v": 1, "seq": seq, "time": time, "node": node, "boot": 1, "gen": 1, "type": kind,
                                **fields}) + "\n")


def test_the_legs_of_a_write_come_from_its_trace_and_show_the_two_fsyncs_side_by_side(tmp_path):
    # The client sent w1 at 10.000 s of the run and had its answer at 10.0010. A wrote and sent it at 10.0001 and
    # had it on disk at 10.0004; B wrote it at 10.0002 and had it on disk at 10.0006, C later; A acknowledged at
    # 10.0008. Both fsyncs were under way from 10.0002 to 10.0004: 0.2 ms side by side.
    write_events(tmp_path, "A", [(10.0001, "write_requested", {"request": "w1"}),
                                 (10.0004, "log_persisted", {"index": 1, "generation": 1}),
                                 (10.0008, "write_acked", {"request": "w1", "index": 1})])
    write_events(tmp_path, "B", [(10.0002, "follower_append", {"index": 1}),
                                 (10.0006, "log_persisted", {"index": 1, "generation": 1})])
    write_events(tmp_path, "C", [(10.0003, "follower_append", {"index": 1}),
                                 (10.0009, "log_persisted", {"index": 2, "generation": 1})])
    marks = cluster.latency_split(tmp_path, 1000.0, "A", {1: ("w1", 1010.0, 1010.001)})
    assert [round(m * 1e3, 3) for m in marks[:-1]] == [0.0, 0.1, 0.4, 0.2, 0.6, 0.8, 1.0]
    assert round(marks[-1] * 1e3, 3) == 0.2
    assert len(cluster.LEG_MARKS) == len(marks) - 1 and all(0 <= a < len(cluster.LEG_MARKS) and 0 <= b <
                                                            len(cluster.LEG_MARKS) for _, a, b, _ in cluster.LEGS)


def test_a_peer_that_is_not_installed_is_skipped_with_one_line_saying_how(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(etcd_peer, "etcd_binary", lambda: None)
    args = argparse.Namespace(samples=1, total=1, peer_total=0, in_flight=1, payload_bytes=1)
    assert cluster.run_peer("etcd", args, tmp_path) is None
    said = capsys.readouterr().out.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("peer: etcd not run (") and "apt-get install etcd-server" in said[0]


@pytest.mark.parametrize("value, length", [(b"v", b"\x01"), (b"x" * 200, b"\xc8\x01")])
def test_the_put_request_is_etcds_wire_format(value, length):
    """etcdserverpb.PutRequest: field 1 (key) and field 2 (value), each length-delimited with a varint length."""
    assert etcd_peer.put_request(b"k", value) == b"\x0a\x01k\x12" + length + value
