"""The lab's and the dashboard's Python sources name an event kind only through its constant in lab/core/events.py,
and read trace lines only through the trace format's one parser (lab.ports.trace.parse_line)."""

from __future__ import annotations

import ast
from pathlib import Path

from lab.core.events import KINDS

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for folder in ("lab", "web") for p in (ROOT / folder).rglob("*.py"))
DECLARATIONS = ROOT / "lab" / "core" / "events.py"


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
    offences = [f"{path.relative_to(ROOT)}:{line}: {kind!r}" for path in SOURCES if path != DECLARATIONS
                for line, kind in kind_literals(path.read_text(encoding="utf-8"))]
    assert offences == [], "use the constants of lab/core/events.py:\n" + "\n".join(offences)
