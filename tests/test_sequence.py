"""The message-sequence diagram (lab.i18n.sequence): S1's story in order, lost messages as crosses, heartbeats only when
asked, a cursor that leaves later messages in flight, labels in the page's language, valid SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from lab.ports.trace import read_trace
from lab.i18n.sequence import build, sequence_svg, write_sequence_svg
from lab.sim.cluster import SimCluster
from lab.harness.scenario import simulate

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def s1(tmp_path_factory):
    out = tmp_path_factory.mktemp("seq") / "s1"
    assert simulate("s1", seed=3, out=out).passed
    return out


def texts(svg: str, cls: str) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(g.itertext()).strip() for g in root.iter(SVG + "g")
            if cls in (g.get("class") or "").split()]


def test_s1_shows_the_cut_the_unacknowledged_e4_the_new_leaders_e5_and_the_truncation_in_order(s1):
    events = list(read_trace(s1).events)
    d = build(events)
    rows = {}
    for m in d.marks:
        label = str(m.label)
        if m.kind == "link_cut" and ("A", "B") in m.links:
            rows.setdefault("cut", m.row)
        elif m.kind == "append" and label.startswith("e4 at 4") and "not acknowledged" in label:
            rows["e4"] = m.row
        elif m.kind == "append" and label.startswith("e5 at 4") and m.node in "BC":
            rows["e5"] = m.row
        elif m.kind == "truncated" and m.node == "A" and "e4" in label:
            rows["truncation"] = m.row
        elif m.kind == "killed" and m.node == "A":
            rows["kill"] = m.row
        elif m.kind == "restarted" and m.node == "A":
            rows["restart"] = m.row
    assert set(rows) == {"cut", "e4", "e5", "truncation", "kill", "restart"}, rows
    assert rows["cut"] < rows["e4"] < rows["kill"] < rows["e5"] < rows["restart"] < rows["truncation"]
    # e4's replication requests never arrive: each ends in a cross, between the cut and the kill
    lost = [a for a in d.arrows if a.end is None and a.src == "A" and str(a.label) == "append 4"]
    assert {a.dst for a in lost} == {"B", "C"} and all(rows["e4"] < a.row < rows["kill"] for a in lost)
    # every other message before the cut arrived: the first election's votes among them
    assert all(a.end is not None for a in d.arrows if a.row < rows["cut"])
    assert {a.dst for a in d.arrows if str(a.label) == "vote? g1"} == {"B", "C"}
    # the new leader's requests to the dead A are lost too; the one after A's restart lands on A's answer
    assert any(a.end is None and a.dst == "A" and a.row > rows["kill"] for a in d.arrows)
    landed = [a for a in d.arrows if a.dst == "A" and a.kind == "request" and a.row > rows["restart"]]
    assert landed and all(a.end is not None and a.end > a.row for a in landed)
    # the high-water marks' changes are marked, 3 then 4 on A
    assert [str(m.label) for m in d.marks if m.kind == "hwm" and m.node == "A"] == ["HWM 1", "HWM 2", "HWM 3",
                                                                                      "HWM 4"]
    assert sum(1 for _ in d.down.get("A", [])) == 1  # A's line is broken from its kill to its restart


def test_the_svg_is_valid_and_labels_every_arrow(s1, tmp_path):
    out = write_sequence_svg(s1, tmp_path / "s1.svg")
    svg = out.read_text()
    root = ET.fromstring(svg)  # well-formed XML, an SVG root
    assert root.tag == SVG + "svg" and int(root.get("width")) > 3 * 100
    assert [g.get("data-node") for g in root.iter(SVG + "g") if g.get("class") == "node"] == ["A", "B", "C"]
    labels = texts(svg, "msg")
    assert "append 1" in labels and "ack 1" in labels and "vote? g1" in labels and "vote? g2" in labels
    assert len(texts(svg, "lost")) >= 3
    assert any("✂ cut: A→B" in t for t in texts(svg, "link_cut"))
    # every arrow has its label, but one message to many (a candidate's votes) has it once, on its longest arrow
    root_groups = [g for g in root.iter(SVG + "g") if "msg" in (g.get("class") or "").split()]
    bare = [g for g in root_groups if not "".join(g.itertext()).strip()]
    assert bare and all("vote" in g.get("class") and g.get("data-src") in "AB" for g in bare)
    assert labels.count("vote? g1") == 1 and len(bare) < len(root_groups) / 4


def test_heartbeats_are_hidden_unless_asked(s1):
    events = list(read_trace(s1).events)
    quiet, loud = build(events), build(events, heartbeats=True)
    assert not [a for a in quiet.arrows if a.kind == "heartbeat"]
    hb = [a for a in loud.arrows if a.kind == "heartbeat"]
    assert hb and any(str(a.label).startswith("♥ HWM") for a in hb)
    assert loud.rows > quiet.rows


def test_a_cursor_leaves_the_messages_after_it_in_flight(s1):
    events = list(read_trace(s1).events)
    sent = next(i for i, e in enumerate(events) if e["type"] == "replication_sent" and e["first"] <= e["last"])
    d = build(events, upto=sent + 1)
    assert d.arrows and all(a.flying and a.end is not None for a in d.arrows if a.kind == "request")
    whole = build(events)
    assert not any(a.flying for a in whole.arrows)


def test_a_crash_and_a_restart_of_a_simulated_node_and_labels_in_spanish(tmp_path):
    sim = SimCluster(3, seed=2, trace_dir=tmp_path / "t")
    sim.campaign("A")
    assert sim.run_until(lambda: sim.leader() == "A", 500)
    sim.write("x1")
    sim.run(20)
    sim.kill("B")
    sim.write("x2")
    sim.run(20)
    sim.restart("B")
    sim.run(60)
    sim.close()
    events = list(read_trace(tmp_path / "t").events)
    d = build(events)
    kinds = [(m.kind, m.node) for m in d.marks]
    assert ("killed", "B") in kinds and ("restarted", "B") in kinds
    assert kinds.index(("killed", "B")) < kinds.index(("restarted", "B"))
    svg_es = sequence_svg(events, lang="es")
    assert "✕ killed" not in svg_es and ET.fromstring(svg_es) is not None
    # a request to the dead B is lost (a cross); the restarted B catches up on x2
    assert any(a.end is None and a.dst == "B" for a in d.arrows)
    assert any(str(m.label).startswith("HWM 2") and m.node == "B" for m in d.marks)


def test_around_a_violation_and_the_command_line(s1, tmp_path, capsys):
    from lab.i18n.sequence import around, main

    events = list(read_trace(s1).events)
    at = next(i for i, e in enumerate(events) if e["type"] == "truncated")
    window = around(events, at, before=30, after=5)
    assert window[0]["type"] == "cluster_started" and events[at] in window and len(window) == 1 + 30 + 1 + 5
    d = build(window)
    assert d.nodes == ["A", "B", "C"] and any(m.kind == "truncated" for m in d.marks)
    assert main([str(s1), str(tmp_path / "s1.svg")]) == 0 and (tmp_path / "s1.svg").read_text().startswith("<svg")
    assert main([str(tmp_path / "nowhere"), str(tmp_path / "x.svg")]) == 2
    assert "not a trace directory" in capsys.readouterr().err


# ---- the room reads it: no label over an arrowhead, the stage's width, a whole scenario --------------------------


def drawn(svg: str) -> tuple[list, list, list]:
    """The arrowheads (their boxes), the arrows' labels and the marks' badges (their boxes) of a drawing."""
    from lab.i18n.sequence import HEAD_ACROSS, HEAD_ALONG, label_box

    root = ET.fromstring(svg)
    heads, labels, badges = [], [], []
    for g in root.iter(SVG + "g"):
        cls = (g.get("class") or "").split()
        if "msg" in cls:
            line = g.find(SVG + "line")
            if line.get("marker-end"):
                x, y = float(line.get("x2")), float(line.get("y2"))
                heads.append((x - HEAD_ALONG, y - HEAD_ACROSS, 2 * HEAD_ALONG, 2 * HEAD_ACROSS))
            text = g.find(SVG + "text")
            if text is not None:
                labels.append((text.text, label_box(text.text, float(text.get("x")), float(text.get("y")))))
        elif "mark" in cls and g.get("data-node"):
            rect = g.find(SVG + "rect")
            badges.append(("".join(g.itertext()), tuple(float(rect.get(k)) for k in ("x", "y", "width", "height"))))
    return heads, labels, badges


def crossing(a, b) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


@pytest.mark.parametrize("name", ["s1", "k1", "f8", "n4"])
def test_no_label_and_no_mark_is_drawn_over_an_arrowhead(tmp_path, name):
    assert simulate(name, seed=3, out=tmp_path / name).passed
    events = list(read_trace(tmp_path / name).events)
    for width, heartbeats, lang in ((None, False, None), (1000, False, "es"), (700, True, "zh")):
        svg = sequence_svg(events, width=width, heartbeats=heartbeats, lang=lang)
        heads, labels, badges = drawn(svg)
        assert len(heads) > 10 and labels and badges
        over = [(text, head) for text, box in labels + badges for head in heads if crossing(box, head)]
        assert over == [], (name, width, over[:5])


def test_the_drawing_spreads_its_lines_over_the_width_it_is_given_and_names_them(s1):
    events = list(read_trace(s1).events)
    root = ET.fromstring(sequence_svg(events, width=1200))
    assert int(root.get("width")) == 1200 - (1200 - 70) % 3
    xs = [float(g.get("data-x")) for g in root.iter(SVG + "g") if g.get("class") == "node"]
    assert len(xs) == 3 and xs[0] > 70 and xs[2] > 1000  # the lines take the stage's width, not a third of it
    narrow = ET.fromstring(sequence_svg(events))
    assert int(narrow.get("width")) == 70 + 150 * 3  # without a width: as before


def test_every_declared_kind_draws_its_mark_or_is_declared_to_draw_none():
    """The drawing is a table keyed by the declared kinds: a kind drawn across the lines or on its target's
    (ON_CLUSTER), on its node's (ON_NODE), or in NO_MARK; never two of them, never a kind nobody declared."""
    from lab.core.events import KINDS
    from lab.i18n.sequence import NO_MARK, ON_CLUSTER, ON_NODE

    tables = (set(ON_CLUSTER), set(ON_NODE), set(NO_MARK))
    assert set().union(*tables) == set(KINDS)
    assert sum(len(t) for t in tables) == len(KINDS)  # each kind in one table only
