"""The layers of docs/architecture.md: every import of the lab, web/, exercises/ and solutions/ points down, never up;
the grader's four rooms (inputs, sandbox, outputs, spark) import only the rooms under them; and no two modules import
each other, directly or through others."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from web.scripts import ENTRY, MODULES, PREFIX

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


# ---- the grader's four rooms (lab/grade/__init__.py) ----------------------------------------------------------

# Lowest first; a room may import its own modules and the rooms it names (never one that names it).
GRADE_ROOMS = {
    "inputs": (),  # where a class is, each submission opened safely, the rubric, the seeds: no other room
    "sandbox": ("inputs",),  # what runs or talks to a student's code: the seeds a task draws, where a path is
    "outputs": ("inputs",),  # what a grade writes: from the rubric and the submissions, never the sandbox
    "spark": ("inputs", "sandbox", "outputs"),  # the job: reads the inputs, runs the sandboxes, writes the outputs
    "entry": ("spark",),  # lab/grade/__init__.py, __main__.py and cli.py: `python -m lab.grade`, `hwm-lab grade`
}


def room_of(module: str) -> str | None:
    """The room of lab.grade `module` is in (None: not the grader's)."""
    if module != "lab.grade" and not module.startswith("lab.grade."):
        return None
    room = module.split(".")[2] if module.count(".") >= 2 else ""
    return room if room in GRADE_ROOMS and room != "entry" else "entry"


def crossings(source: str, module: str, is_package: bool = False) -> list[tuple[str, int]]:
    """The imports of `source` (module `module`) that cross the grader's rooms the wrong way."""
    own = room_of(module)
    if own is None:
        return []
    package = module if is_package else module.rpartition(".")[0]
    named = []  # every name imported, under its module: `from lab.grade import cli` names lab.grade.cli
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            named += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            named += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return [(target, line) for target, line in named if room_of(target) not in (None, own, *GRADE_ROOMS[own])]


def test_the_grader_is_four_rooms_and_each_module_is_in_one():
    grader = [p for p in python_files() if p.is_relative_to(ROOT / "lab" / "grade")]
    rooms = {p.relative_to(ROOT / "lab" / "grade").parts[0] for p in grader if p.parent != ROOT / "lab" / "grade"}
    assert rooms == set(GRADE_ROOMS) - {"entry"}
    assert sorted(p.name for p in grader if p.parent == ROOT / "lab" / "grade") == ["__init__.py", "__main__.py",
                                                                                   "cli.py"]
    for room in rooms:  # each says what it holds
        assert len(ast.get_docstring(ast.parse((ROOT / "lab" / "grade" / room / "__init__.py").read_text())) or "") > 80


def test_no_import_crosses_the_graders_rooms_the_wrong_way():
    problems = [f"{path.relative_to(ROOT)}:{line} ({room_of(module_name(path))}) imports {target} "
                f"({room_of(target)})" for path in python_files()
                for target, line in crossings(path.read_text(encoding="utf-8"), module_name(path),
                                              path.name == "__init__.py")]
    assert problems == []


@pytest.mark.parametrize("module, source, expected", [
    ("lab.grade.sandbox.pair", "from lab.grade.spark import job\n", ["lab.grade.spark.job"]),
    ("lab.grade.inputs.rubric", "def f():\n    from lab.grade.outputs.report import FEEDBACK\n",
     ["lab.grade.outputs.report.FEEDBACK"]),
    ("lab.grade.sandbox.wire", "from ..spark import job\n", ["lab.grade.spark.job"]),
    ("lab.grade.outputs.report", "from lab.grade.sandbox import proof\n", ["lab.grade.sandbox.proof"]),
    ("lab.grade.sandbox.proof", "from lab.grade import cli\n", ["lab.grade.cli"]),
    ("lab.grade.spark.job", "from lab.grade.sandbox import proof\nfrom lab.grade.outputs import report\n", []),
    ("lab.grade.outputs.lms", "from lab.grade.inputs.rubric import Rubric\nfrom lab.core import events\n", []),
])
def test_the_walk_finds_an_import_across_the_rooms(module, source, expected):
    assert [target for target, _ in crossings(source, module)] == expected


# ---- no import circles -------------------------------------------------------------------------------------------

# Circles left in rooms another change was working in, each with the issue that removes it (none left today: a new
# one fails the test below; add it here only with the issue that will remove it).
KNOWN_CIRCLES: set[tuple[str, ...]] = set()


def import_graph(paths: list[Path]) -> dict[str, set[str]]:
    """Module -> the modules of these files it imports (at any depth: in functions and TYPE_CHECKING blocks too).
    `from lab.ports import codec` is an import of lab.ports.codec; of a name a module defines, of that module."""
    modules = {module_name(p): p for p in paths}
    graph = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            else:
                continue
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    targets.add(name)
        graph[module] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The groups of modules that import each other, directly or through others (Tarjan's strongly connected
    components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(tuple(sorted(group)))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_no_two_modules_import_each_other():
    found = circles(import_graph(python_files()))
    assert set(found) <= KNOWN_CIRCLES, "modules that import each other, directly or through others:\n" + "\n".join(
        " <-> ".join(group) for group in found if group not in KNOWN_CIRCLES)


def test_the_walk_finds_a_circle_through_others():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}, "f": {"a"}}
    assert circles(graph) == [("a", "b", "c"), ("e", "e2")]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_reads_a_lazy_import_and_a_module_named_from_its_package(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "lab" / "harness").mkdir(parents=True)
    files = {"lab/harness/__init__.py": "",
             "lab/harness/scenario.py": "def simulate():\n    from lab.harness import replay\n",
             "lab/harness/replay.py": "from .scenario import Run\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    graph = import_graph([tmp_path / name for name in files])
    assert graph["lab.harness.scenario"] == {"lab.harness.replay"} and graph["lab.harness.replay"] == {
        "lab.harness.scenario"}
    assert circles(graph) == [("lab.harness.replay", "lab.harness.scenario")]


# ---- the size of a function and of a module ---------------------------------------------------------------------

MOST_FUNCTION_LINES = 80
MOST_MODULE_LINES = 600
ONE_FILE = {Path("lab/core/replica.py")}  # the replica's state machine may stay one file (docs/architecture.md)


def long_functions(source: str, most: int = MOST_FUNCTION_LINES) -> list[tuple[int, str, int]]:
    """Every function or method of `source` longer than `most` lines, its decorators and docstring included:
    (line, name, lines)."""
    return sorted((node.lineno, node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.end_lineno - node.lineno + 1 > most)


def lab_and_web() -> list[Path]:
    return sorted(p for top in ("lab", "web") for p in (ROOT / top).rglob("*.py"))


def test_the_size_walker_finds_a_long_method_and_a_long_inner_function():
    four = "".join(f"        x{i} = {i}\n" for i in range(4))
    source = (f"class A:\n    def long(self):\n{four}"  # lines 2-6
              "def short():\n    return 1\n"  # 7-8
              f"def outer():\n    def inner():\n{four}    return inner\n")  # 9-15, inner 10-14
    assert long_functions(source, most=4) == [(2, "long", 5), (9, "outer", 7), (10, "inner", 5)]


def test_no_function_in_lab_or_web_is_over_80_lines():
    offences = [f"{path.relative_to(ROOT)}:{line} {name} ({n} lines)" for path in lab_and_web()
                for line, name, n in long_functions(path.read_text(encoding="utf-8"))]
    assert offences == [], f"split each along what it does (at most {MOST_FUNCTION_LINES} lines):\n" + \
        "\n".join(offences)


def test_every_module_of_lab_and_web_is_at_most_600_lines_but_the_replica():
    sizes = {path.relative_to(ROOT): len(path.read_text(encoding="utf-8").splitlines()) for path in lab_and_web()}
    assert all(path in sizes for path in ONE_FILE)  # the exception names a module that is there
    offences = [f"{path} ({n} lines)" for path, n in sorted(sizes.items())
                if n > MOST_MODULE_LINES and path not in ONE_FILE]
    assert offences == [], "\n".join(offences)


def test_the_entry_point_is_on_top():
    """lab/cli.py runs the parser that lab/commands/parser.py builds: nothing of the lab imports it back (the help's
    extractor and the guides' samples read the parser where it is built)."""
    found = [f"{path.relative_to(ROOT)}:{line}" for path in python_files()
             for target, line in imports(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")
             if target == "lab.cli" and module_name(path) != "lab.cli"]
    assert found == []


# ---- the dashboard's page: its ES modules (web/scripts.py) -------------------------------------------------------

STATIC = ROOT / "web" / "static"
# Lowest first; a module may import only modules of a lower layer (not its own layer's: those are side by side).
# text.js is a classic script run before them (window.HWM_TEXT); onefile.js the one-file replay's loader.
PAGE_LAYERS = (
    ("ground", ("page", "state", "marks")),  # the sentences and DOM helpers, the state S, the stage's colours
    ("wire", ("socket",)),  # the connection (or a one-file replay's source) and the controls sent over it
    # the parts, each on its own: a guided scenario, the room's language and following, the panels, the feed, the
    # header, the question, the explorer; a lane and the messages in flight
    ("parts", ("guide", "room", "panels", "feed", "header", "question", "explore", "lanes", "flights")),
    ("panel", ("controls", "stage")),  # the controls panel (with the guide's buttons); the stage (lanes, flights)
    ("board", ("board",)),  # the stage wired to the controls
    ("flow", ("frames", "views")),  # what a frame does and the replay's seeks; the sequence and history views
    ("replay", ("replay",)),  # the replay's timeline
    ("keys", ("keys",)),  # the keyboard, which reaches everything above
    ("entry", ("dashboard",)),  # hello, the questions, the drawing
)
NOT_MODULES = {"text.js", "onefile.js"}
MOST_SCRIPT_LINES = 400
IMPORT = re.compile(r"""^\s*(?:import\s*(?:[\w$*{}\s,]+?\s*from\s*)?|export\s*[\w$*{}\s,]+?\s*from\s*)["']([^"']+)["']""",
                    re.MULTILINE)


def page_layer_of(name: str) -> int | None:
    return next((rank for rank, (_, names) in enumerate(PAGE_LAYERS) if name in names), None)


def script_imports(source: str) -> list[str]:
    """What a module's `import ... from "..."` (and `export ... from`, `import "..."`) lines name."""
    return IMPORT.findall(source)


def page_problems(sources: dict[str, str]) -> list[str]:
    """Every import of these modules (name -> text) that is not by name (hwm/...), names no module, or points to
    a module of the same or a higher layer."""
    problems = []
    for name, source in sorted(sources.items()):
        own = page_layer_of(name)
        for spec in script_imports(source):
            target = spec.removeprefix(PREFIX)
            rank = page_layer_of(target)
            if not spec.startswith(PREFIX) or rank is None:
                problems.append(f"{name}.js imports {spec!r}: a module is imported by its name ({PREFIX}...)")
            elif own is None or rank >= own:
                problems.append(f"{name}.js ({PAGE_LAYERS[own][0] if own is not None else '?'}) imports {target} "
                                f"({PAGE_LAYERS[rank][0]})")
    return problems


def page_modules() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(STATIC.glob("*.js")) if p.name not in NOT_MODULES}


def test_the_pages_modules_import_only_lower_layers_by_name():
    sources = page_modules()
    assert set(sources) == set(MODULES) == {n for _, names in PAGE_LAYERS for n in names}  # each in one layer
    assert len(sources) == len(MODULES) and ENTRY == PAGE_LAYERS[-1][1][0]
    assert [page_layer_of(n) for n in MODULES] == sorted(page_layer_of(n) for n in MODULES)  # lowest first
    assert sum(len(script_imports(s)) for s in sources.values()) > 40
    assert page_problems(sources) == []
    for classic in NOT_MODULES:  # the classic scripts import nothing
        assert script_imports((STATIC / classic).read_text(encoding="utf-8")) == []


def test_the_page_walk_finds_an_import_up_across_or_by_path():
    sources = {"state": 'import { control } from "hwm/controls";\n',  # up: the state reads nothing above it
               "guide": 'import { $, el, T } from "hwm/page";\nimport { feed } from "hwm/feed";\n',  # side by side
               "feed": 'import { S } from "./state.js";\n',  # by path: no path resolves inside a data: URL
               "keys": 'import {\n  seek } from "hwm/frames";\nimport "hwm/replay";\n',  # down: fine
               "frames": 'export { gclass } from "hwm/nowhere";\n'}
    assert page_problems(sources) == [
        "feed.js imports './state.js': a module is imported by its name (hwm/...)",
        "frames.js imports 'hwm/nowhere': a module is imported by its name (hwm/...)",
        "guide.js (parts) imports feed (parts)",
        "state.js (ground) imports controls (panel)"]


def test_no_script_of_the_page_is_over_400_lines():
    scripts = sorted(p for p in STATIC.rglob("*.js") if "vendor" not in p.relative_to(STATIC).parts)
    sizes = {f"web/static/{p.relative_to(STATIC).as_posix()}": len(p.read_text(encoding="utf-8").splitlines()) for p in scripts}
    assert len(sizes) > 20 and "web/static/dashboard.js" in sizes
    offences = [f"{path} ({n} lines)" for path, n in sizes.items() if n > MOST_SCRIPT_LINES]
    assert offences == [], f"split each along what it does (at most {MOST_SCRIPT_LINES} lines):\n" + "\n".join(offences)
