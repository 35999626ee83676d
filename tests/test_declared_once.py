"""The lab's and the dashboard's Python sources name an event kind only through its constant in lab/core/events.py,
an exercise's function only through lab/core/interface.py's table, and read trace lines only through the trace
format's one parser (lab.ports.trace.parse_line)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from lab.core.events import KINDS
from lab.core.interface import FUNCTIONS

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for folder in ("lab", "web") for p in (ROOT / folder).rglob("*.py"))
DECLARATIONS = ROOT / "lab" / "core" / "events.py"
TABLE = ROOT / "lab" / "core" / "interface.py"  # the exercises' table


def _field_access(node: ast.AST, parent: ast.AST | None) -> bool:
    """A literal that names a field, not a kind: a dict's key, a subscript, or `.get`'s key."""
    if isinstance(parent, ast.Dict) and any(k is node for k in parent.keys):
        return True
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return True
    return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
            and parent.func.attr in ("get", "pop", "setdefault") and bool(parent.args) and parent.args[0] is node)


def kind_literals(source: str) -> list[tuple[int, str]]:
    """The event kinds a module spells as string literals: (line, kind). A dict's keys count when they are all
    kinds (a table keyed by kind); a single key, a subscript or a `.get` names a field ("step", "disk_full")."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if len(keys) > 1 and all(k.value in KINDS for k in keys):
                found += [(k.lineno, k.value) for k in keys]
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KINDS):
            continue
        parent = parents.get(node)
        if isinstance(parent, (ast.JoinedStr, ast.Expr)) or _field_access(node, parent):
            continue
        found.append((node.lineno, node.value))
    return sorted(set(found))


def test_the_walker_finds_a_kind_spelled_out():
    """The check below could fail: a comparison, a call's argument and a table keyed by kinds are found; a field
    named like a kind is not."""
    source = ('if e["type"] == "hwm_changed": emit("node_killed", target=n)\n'
              'T = {"truncated": 1, "link_cut": 2}\n'
              'fault = {"step": 3, "scenario": "x"}; e.get("step"); info["disk_full"] = True\n')
    assert kind_literals(source) == [(1, "hwm_changed"), (1, "node_killed"), (2, "link_cut"), (2, "truncated")]


def test_each_event_kind_is_spelled_in_one_module():
    # A follower's append is traced under the name of the function it ran (follower_append): the exercises' table
    # spells that name as the function's, not as the event's.
    offences = [f"{path.relative_to(ROOT)}:{line}: {kind!r}" for path in SOURCES if path != DECLARATIONS
                for line, kind in kind_literals(path.read_text(encoding="utf-8"))
                if not (path == TABLE and kind in FUNCTIONS)]
    assert offences == [], "use the constants of lab/core/events.py:\n" + "\n".join(offences)


def quoted_kinds(source: str) -> list[tuple[int, str]]:
    """The event kinds a module quotes inside a longer string, as a query or a hand-made JSON line would:
    `"... type = 'hwm_changed' ..."`, `',"type":"write_acked",'`. (Backquoted, a kind is prose: a docstring.)"""
    quoted = re.compile(r"""['"]([a-z_]+)['"]""")
    return sorted({(node.lineno, m.group(1)) for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   for m in quoted.finditer(node.value) if m.group(1) in KINDS})


def test_the_walker_finds_a_kind_quoted_in_a_query_or_a_json_line():
    source = ("q = f\"type = 'hwm_changed' AND hwm > {k}\"\n"
              "line = f',\"type\":\"write_acked\",\"index\":{i}'\n"
              "doc = 'traced as `truncated`, of type {KIND}'\n")
    assert quoted_kinds(source) == [(1, "hwm_changed"), (2, "write_acked")]


def test_no_kind_is_quoted_inside_a_query_or_a_line_the_lab_writes_by_hand():
    """The grader's SQL and the trace writer's fast lines name a kind through its constant too."""
    offences = [f"{path.relative_to(ROOT)}:{line}: {kind!r}" for path in SOURCES if path != DECLARATIONS
                for line, kind in quoted_kinds(path.read_text(encoding="utf-8"))]
    assert offences == [], "use the constants of lab/core/events.py:\n" + "\n".join(offences)


# ---- each exercise's functions named in one table ----------------------------------------------------------------

# Everything that lists the exercises or their functions: the lab, the dashboard, the stubs and the answers, the
# benchmarks, and the tests' own stand-ins for an implementation.
EXERCISE_SOURCES = sorted([p for folder in ("lab", "web", "exercises", "solutions", "bench")
                           for p in (ROOT / folder).rglob("*.py")] + [ROOT / "tests" / "spy_impl.py",
                                                                      ROOT / "tests" / "conftest.py"])

# A function's name that is also another thing's, in these modules: not a list of the exercises.
ALSO_ANOTHER_THING = {
    ("lab/ports/codec.py", "high_water_mark"): "the wire's field: a replication request and a read's answer carry "
                                               "the serving node's mark",
    ("bench/fuzz.py", "high_water_mark"): "the wire's field, in the messages the fuzzer sends",
    ("lab/ports/state.py", "high_water_mark"): "the file a node keeps its mark in",
    ("lab/core/replica.py", "high_water_mark"): "the replica's Ready field (its __slots__)",
    ("lab/core/events.py", "follower_append"): "the event kind a follower's append is traced as",
}


def _reads_a_field(node: ast.AST, parent: ast.AST | None) -> bool:
    """A record's field read by name (`answer["high_water_mark"]`, `answer.get("high_water_mark")`)."""
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return True
    return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
            and parent.func.attr in ("get", "pop", "setdefault") and bool(parent.args) and parent.args[0] is node)


def function_literals(source: str) -> set[str]:
    """The exercise functions a module quotes as string constants (a field read by name aside)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in FUNCTIONS
            and not _reads_a_field(node, parents.get(node))}


def quoting_modules(paths) -> dict[str, list[str]]:
    """Each exercise function -> the modules that quote its name (the other things of that name aside)."""
    found: dict[str, list[str]] = {name: [] for name in FUNCTIONS}
    for path in paths:
        where = path.relative_to(ROOT).as_posix()
        for name in function_literals(path.read_text(encoding="utf-8")):
            if (where, name) not in ALSO_ANOTHER_THING:
                found[name].append(where)
    return found


def test_the_walker_finds_a_quoted_function():
    """The check below could fail: a table keyed by names, a tuple of names and a comparison are found; a field read
    by name and a sentence that mentions a function are not."""
    source = ('PROBES = {"check_read": 1}\nJUDGED = ("plan_truncation", "leader_epoch_end")\n'
              'if f == "high_water_mark": pass\nhwm = answer["follower_append"] + answer.get("epoch_truncation_point")\n'
              'say("on_replication_response (exercise 2)")\n')
    assert function_literals(source) == {"check_read", "plan_truncation", "leader_epoch_end", "high_water_mark"}


def test_each_exercise_function_is_quoted_in_at_most_two_modules():
    """Adding a function is adding a row to lab/core/interface.py's table (the stub and the answer define it by
    name): everything that lists the functions derives the list from the table (issue #38). On the code before the
    table, high_water_mark was quoted in 13 of these modules, follower_append in 8."""
    found = quoting_modules(EXERCISE_SOURCES)
    assert len(EXERCISE_SOURCES) > 60 and set(found) == set(FUNCTIONS)
    assert {name: where for name, where in found.items() if len(where) > 2} == {}, \
        "name the function through lab/core/interface.py (its constant, or its row of EXERCISES)"
    assert all(TABLE.relative_to(ROOT).as_posix() in where for where in found.values())


def test_the_table_says_what_the_stubs_and_the_answers_declare():
    """Each row's file holds its functions, with the parameters the table says, in exercises/ and in solutions/;
    each function's return annotation names one of the types the guard accepts."""
    import importlib
    import inspect

    from lab.core.interface import EXERCISES

    for ex in EXERCISES:
        for package in ("exercises", "solutions"):
            for f in ex.functions:
                # (through the package, as the lab takes them: importing exercises/high_water_mark.py by its name
                # would leave the package's attribute of that name the module, not the function)
                function = getattr(importlib.import_module(package), f.name)
                assert Path(inspect.getsourcefile(function)).relative_to(ROOT).as_posix() == f"{package}/{ex.file}.py"
                signature = inspect.signature(function)
                assert ", ".join(signature.parameters) == f.parameters, (package, f.name)
                said = str(signature.return_annotation).replace("typing.", "")
                assert all(t.__name__.replace("NoneType", "None") in said for t in f.returns), (package, f.name, said)


def test_each_row_of_the_table_has_its_checks():
    """`hwm-lab exercise check N` checks exactly the table's exercises, in its order."""
    from lab.core.interface import EXERCISES
    from lab.student.checks import EXERCISES as CHECKS

    assert [ex.number for ex in CHECKS] == [ex.number for ex in EXERCISES]
    assert [(ex.module, ex.functions) for ex in CHECKS] == [(ex.path, ex.names) for ex in EXERCISES]


def test_each_table_keyed_by_function_has_every_function():
    """Per-function data lives beside its use, keyed by the table's names: a new row without its entries fails here."""
    from lab.core.judges import JUDGES
    from lab.sim.reach import INPUTS
    from lab.student.runs import PROBES

    for table in (JUDGES, INPUTS, PROBES):
        assert list(table) == list(FUNCTIONS)


# ---- one parser of trace lines -------------------------------------------------------------------------------

PARSER = ROOT / "lab" / "ports" / "trace.py"


def line_parsers(source: str) -> list[int]:
    """Where a module decodes JSON line by line: json.loads of a name a `for` binds (or of its `.decode()`), as a
    reader of events files does. The trace format's own parse_line is the one place that may."""
    tree = ast.parse(source)
    found = []

    def walk(node: ast.AST, bound: frozenset) -> None:
        if isinstance(node, (ast.For, ast.comprehension)):
            bound = bound | {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("loads", "load")
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "json" and node.args):
            arg = node.args[0]
            if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "decode":
                arg = arg.func.value
            if isinstance(arg, ast.Name) and arg.id in bound:
                found.append(node.lineno)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in node.generators:
                bound = bound | {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        for child in ast.iter_child_nodes(node):
            walk(child, bound)

    walk(tree, frozenset())
    return found


def test_the_walker_finds_a_parser_of_lines():
    source = ("for line in f:\n    e = json.loads(line)\n"
              "events = [json.loads(raw.decode('utf-8')) for raw in data.splitlines()]\n"
              "meta = json.loads(path.read_text())\n")
    assert line_parsers(source) == [2, 3]


def test_trace_lines_are_parsed_in_one_place():
    """Every reader of events files (the trace reader, the supervisor's feed, the chaos run, the boot counter, the
    grader's look at a submission) calls lab.ports.trace.parse_line; none decodes lines itself."""
    offences = [f"{path.relative_to(ROOT)}:{line}" for path in SOURCES if path != PARSER
                for line in line_parsers(path.read_text(encoding="utf-8"))]
    assert offences == [], "call lab.ports.trace.parse_line:\n" + "\n".join(offences)
    assert line_parsers(PARSER.read_text(encoding="utf-8")) == []  # the trace reader calls parse_line too


def test_parse_line_takes_an_event_and_refuses_anything_else():
    from lab.ports.trace import parse_line

    line = b'{"v":1,"seq":3,"time":0.5,"node":"A","boot":1,"gen":2,"type":"hwm_changed","hwm":4}'
    assert parse_line(line)["hwm"] == 4 and parse_line(line.decode()) == parse_line(line)
    for bad in (b'{"v":1,"seq":3,"time":0.5', b"[1, 2]", b'{"seq":3,"time":0.5,"node":"A"}'):
        try:
            parse_line(bad)
        except ValueError:
            continue
        raise AssertionError(f"parse_line took {bad!r}")


# ---- a reason keeps its kind across a trace file, the control API and a node's exit -------------------------------


def test_a_trace_line_carries_its_reasons_kind_and_an_older_line_is_read_as_it_was(tmp_path):
    from lab.core import events as ev
    from lab.core import reasons
    from lab.core.events import Event
    from lab.core.reasons import Reason, Reasons
    from lab.i18n import localize
    from lab.ports.trace import TraceFile, parse_line, read_trace, write_meta

    refused = Reason(reasons.NOT_LEADER, leader="B")
    found = Reasons([Reason(reasons.LACKS_INDEX, node="A", index=2), Reason(reasons.LACKS_INDEX, node="C", index=2)])
    write_meta(tmp_path)
    trace = TraceFile(tmp_path, "A")
    trace.emit([Event(ev.WRITE_FAILED, {"gen": 1, "request": "w1", "reason": refused}),
                Event(ev.EXPECTATION, {"gen": 0, "name": "expect acked-survive", "ok": False, "detail": found})],
               time=0.5, boot=1)
    trace.close()
    lines = (tmp_path / "events-A.jsonl").read_bytes().splitlines()
    assert b'"reason":"not the leader: the leader is B"' in lines[0]  # the English is where it was
    read = read_trace(tmp_path).events
    assert read[0]["reason"] == refused and read[0]["reason"].kind == reasons.NOT_LEADER
    assert localize(read[1]["detail"], "es") == localize(found, "es") != str(found)
    older = parse_line(b'{"v":1,"seq":1,"time":0.5,"node":"A","type":"write_failed","reason":"not the leader: '
                       b'the leader is B"}')
    assert type(older["reason"]) is str  # said in English only: no sentence is read back
    lying = parse_line(lines[0].replace(b'"leader":"B"', b'"leader":"C"'))
    assert type(lying["reason"]) is str  # a `because` that says another sentence is not believed


def test_the_control_apis_refusal_and_a_nodes_exit_keep_their_kind(tmp_path, monkeypatch):
    from lab.core import events as ev
    from lab.core import reasons
    from lab.core.reasons import Reason
    from lab.processes.client import ApiError, ControlClient
    from lab.processes.runfiles import exit_reason

    refused = Reason(reasons.NODE_ALREADY, node="B", state="killed")
    client = ControlClient("http://127.0.0.1:9")
    monkeypatch.setattr(client, "call", lambda *a, **k: (409, {"ok": False, "error": str(refused),
                                                                "because": refused.as_record()}))
    try:
        client.kill("B")
    except ApiError as exc:
        assert exc.args[0] == refused and exc.args[0].kind == reasons.NODE_ALREADY
    else:
        raise AssertionError("kill was not refused")
    stopped = Reason(reasons.FSYNC_FAILED, where="fsync of the write-ahead log", os_error="Input/output error")
    (tmp_path / "exit_reason").write_bytes(f"{stopped}\n{json.dumps(stopped.as_record())}".encode() + b"\0" * 40)
    assert exit_reason(tmp_path, 74).kind == reasons.FSYNC_FAILED
    (tmp_path / "exit_reason").write_bytes(str(stopped).encode() + b"\0" * 40)  # an older node: its sentence only
    assert exit_reason(tmp_path, 74) == str(stopped)


def test_the_page_gets_the_kinds_from_the_declarations():
    """The dashboard's script spells no event kind: the feed's table of kinds comes from web/narrate.py (rendered as
    window.HWM_KINDS), built from the constants."""
    import re

    from web.kinds import FEED_KINDS

    listed = [k for v in FEED_KINDS.values() for k in (v if isinstance(v, list) else [v])]
    assert listed and set(listed) <= set(KINDS)
    quoted = re.compile(r"""["'`]([a-z_]+)["'`]""")
    spelled = [(p.name, m.group(1)) for p in sorted((ROOT / "web" / "static").glob("*.js"))
               for m in quoted.finditer(p.read_text(encoding="utf-8")) if m.group(1) in KINDS]
    assert spelled == []
    keyed = re.compile(r"(?<![\w.\"'`])([a-z]+(?:_[a-z]+)+)\s*:")  # an object's key: { hwm_changed: ... }
    keys = [(p.name, m.group(1)) for p in sorted((ROOT / "web" / "static").glob("*.js"))
            for m in keyed.finditer(p.read_text(encoding="utf-8")) if m.group(1) in KINDS]
    assert keys == []
    assert "window.HWM_KINDS = {{ kinds|tojson }}" in (ROOT / "web" / "templates" / "index.html").read_text()
