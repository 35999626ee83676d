"""The layers of docs/architecture.md: every import of the lab, web/, exercises/ and solutions/ points down, never up."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Lowest first; a module may import its own part and any part of a lower layer.
LAYERS = (
    ("core", ("lab.core",)),  # the replica and its values: imports nothing of the lab but itself
    ("handout", ("exercises", "solutions")),  # the student's code: handed the core's contract, nothing more
    ("ports", ("lab.ports",)),  # the driver and its ports; the fault vocabulary
    ("processes", ("lab.processes",)),  # node process, supervisor, clients
    ("sim", ("lab.sim",)),  # the simulator and its scenarios; the explorer's world, whose network waits for a choice
    ("harness", ("lab.harness",)),  # the scenario runner (simulator, processes, world) and the nemesis
    ("i18n", ("lab.i18n",)),  # the catalogues, the scenarios' own words, a trace drawn in them
    ("student", ("lab.student", "lab.explore")),  # exercise checks, submission, and the search over a student's code
    # the hwm-lab command (lab/cli.py, its entry point, and its groups), the grader, the dashboard
    ("edges", ("lab.commands", "lab.cli", "lab.grade", "web")),
)
SOURCES = ("lab", "web", "exercises", "solutions")


def layer_of(module: str) -> int | None:
    """The rank of the layer `module` belongs to (None: not the lab's, as the standard library)."""
    for rank, (_, parts) in enumerate(LAYERS):
        if any(module == part or module.startswith(part + ".") for part in parts):
            return rank
    return None


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str, is_package: bool = False) -> list[tuple[str, int]]:
    """Every module `source` imports (at any depth: in functions too), with its line."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from lab import i18n` imports lab.i18n; `from lab.core.messages import Answer` imports lab.core.messages
            found += [(f"{base}.{alias.name}" if layer_of(f"{base}.{alias.name}") is not None
                       and layer_of(base) is None else base, node.lineno) for alias in node.names]
    return found


def upward(path: Path) -> list[str]:
    module = module_name(path)
    own = layer_of(module)
    problems = []
    for target, line in imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"):
        rank = layer_of(target)
        if rank is not None and own is not None and rank > own:
            problems.append(f"{path.relative_to(ROOT)}:{line} ({LAYERS[own][0]}) imports {target} "
                            f"({LAYERS[rank][0]})")
    return problems


def python_files() -> list[Path]:
    return sorted(p for top in SOURCES for p in (ROOT / top).rglob("*.py"))


def test_no_import_points_up():
    problems = [problem for path in python_files() for problem in upward(path)]
    assert problems == []


def test_every_module_has_a_layer():
    assert len(python_files()) > 50
    assert [module_name(p) for p in python_files() if layer_of(module_name(p)) is None] == ["lab"]  # lab/__init__


@pytest.mark.parametrize("module, source, expected", [
    ("lab.core.replica", "from lab.sim.cluster import SimCluster\n", ["lab.sim.cluster"]),
    ("lab.ports.wal", "def f():\n    import lab.processes.node\n", ["lab.processes.node"]),
    ("lab.processes.node", "from lab import i18n\n", ["lab.i18n"]),
    ("lab.sim.cluster", "from lab.core.messages import Answer\nimport json\n", []),
    ("solutions.leader", "from .follower import follower_append\n", []),
])
def test_the_walk_finds_an_upward_import(module, source, expected):
    own = layer_of(module)
    found = [target for target, _ in imports(source, module) if (layer_of(target) or 0) > own]
    assert found == expected
