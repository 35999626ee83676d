"""The rubric (TOML): which checks grade which exercise and for how many points; and the scoring itself,
from the number of violations per run and check. Pure Python."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources

from lab.grade.rules import CHECK_IDS, GRADER_ENTRIES, SELF_REPORTED

RULES_ENTRY = SELF_REPORTED.check  # a rubric entry that is not a check: the self-reported rule results

CREDIT = ("per-run", "all-or-nothing")


class RubricError(Exception):
    pass


@dataclass(frozen=True)
class Exercise:
    number: int
    title: str
    points: dict[str, float]
    scenarios: tuple[str, ...] = ("*",)
    seeds: int = 2  # re-execution: simulator runs of each scenario, with seeds drawn per student
    explore: int = 20  # re-execution: random walks of a short `hwm-lab explore` search, after a small BFS (0: none)

    @property
    def max_points(self) -> float:
        return sum(self.points.values())

    def counts(self, scenario: str | None) -> bool:
        return "*" in self.scenarios or (scenario or "").lower() in self.scenarios


@dataclass(frozen=True)
class Rubric:
    exercises: tuple[Exercise, ...]
    credit: str = "per-run"
    decimals: int = 2
    skip: dict[str, frozenset[str]] = field(default_factory=dict)  # scenario -> checks not graded there
    real_weight: float = 0.0  # re-execution: what a real-process run weighs beside a reproduced simulator run
    sandbox: dict = field(default_factory=dict)  # re-execution: limits of the sandbox (lab.grade.sandbox.Limits)
    name: str = "HWM Lab"  # the assignment's name in an LMS's gradebook

    @property
    def max_total(self) -> float:
        return sum(e.max_points for e in self.exercises)

    def skipped(self, scenario: str | None, check: str) -> bool:
        return check in self.skip.get((scenario or "").lower(), frozenset())

    def grades(self, exercise: int | None, scenario: str | None, check: str) -> bool:
        """Whether a violation of `check` in a run of this exercise and scenario costs points: the exercise
        lists the check, counts the scenario, and the scenario does not skip it. The rest is kept, counted nowhere."""
        return any(e.number == exercise and check in e.points and check != RULES_ENTRY and e.counts(scenario)
                   for e in self.exercises) and not self.skipped(scenario, check)


def default_text() -> str:
    return resources.files("lab.grade").joinpath("rubric.toml").read_text(encoding="utf-8")


def parse(text: str, name: str = "rubric") -> Rubric:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"{name}: not valid TOML ({exc})") from exc
    top = data.get("rubric", {})
    credit = top.get("credit", "per-run")
    if credit not in CREDIT:
        raise RubricError(f"{name}: credit must be one of {CREDIT}, not {credit!r}")
    decimals = top.get("decimals", 2)
    if not isinstance(decimals, int) or not 0 <= decimals <= 6:
        raise RubricError(f"{name}: decimals must be an integer from 0 to 6")
    skip = {}
    for scenario, spec in data.get("scenarios", {}).items():
        checks = spec.get("skip", [])
        _known(checks, f"{name}: scenarios.{scenario}.skip")
        skip[scenario.lower()] = frozenset(checks)
    exercises = []
    for key, spec in data.get("exercises", {}).items():
        try:
            number = int(key)
        except ValueError:
            raise RubricError(f"{name}: exercise keys are numbers, not {key!r}") from None
        points = spec.get("points", {})
        if not isinstance(points, dict) or not points:
            raise RubricError(f"{name}: exercises.{key}.points must map checks to points")
        _known([c for c in points if c not in GRADER_ENTRIES], f"{name}: exercises.{key}.points")
        for check, p in points.items():
            if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0:
                raise RubricError(f"{name}: exercises.{key}.points.{check} must be a number >= 0")
        scenarios = spec.get("scenarios", ["*"])
        if not isinstance(scenarios, list) or not all(isinstance(s, str) for s in scenarios):
            raise RubricError(f"{name}: exercises.{key}.scenarios must be a list of scenario ids")
        runs = {k: spec.get(k, d) for k, d in (("seeds", 2), ("explore", 20))}
        for k, v in runs.items():
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 1000:
                raise RubricError(f"{name}: exercises.{key}.{k} must be an integer from 0 to 1000")
        exercises.append(Exercise(number, str(spec.get("title", f"Exercise {number}")),
                                  {c: float(p) for c, p in points.items()}, tuple(s.lower() for s in scenarios),
                                  **runs))
    if not exercises:
        raise RubricError(f"{name}: no [exercises.N] tables")
    real = top.get("real_weight", 0.0)
    if isinstance(real, bool) or not isinstance(real, (int, float)) or not 0 <= real <= 1:
        raise RubricError(f"{name}: real_weight must be a number from 0 to 1")
    sandbox = data.get("sandbox", {})
    if not isinstance(sandbox, dict):
        raise RubricError(f"{name}: [sandbox] must be a table of limits")
    assignment = top.get("name", "HWM Lab")
    if not isinstance(assignment, str) or not assignment.strip() or any(c in assignment for c in "\r\n"):
        raise RubricError(f"{name}: rubric.name must be a one-line assignment name")
    return Rubric(tuple(sorted(exercises, key=lambda e: e.number)), credit, decimals, skip, float(real), sandbox,
                  assignment.strip())


def _known(checks, where: str) -> None:
    unknown = [c for c in checks if c not in CHECK_IDS]
    if unknown:
        raise RubricError(f"{where}: unknown checks {unknown}; the checks are {list(CHECK_IDS)} "
                          f"(and, in points, {', '.join(map(repr, GRADER_ENTRIES))})")


def load(path: str | None, read=None) -> Rubric:
    """The rubric at `path` (read with `read(path) -> bytes` when given), or the default one."""
    if path is None:
        return parse(default_text(), "default rubric")
    data = read(path) if read else open(path, "rb").read()
    return parse(data.decode("utf-8"), path)


@dataclass
class CheckScore:
    exercise: int
    check: str
    points: float
    max_points: float
    runs: int  # runs of the exercise graded by this check
    failed_runs: list[str]
    violations: int  # for the `rules` entry: the rules not ok
    rules: tuple[int, int] | None = None  # the `rules` entry: (ok, checked), or None when none were reported

    @property
    def failed(self) -> bool:
        return bool(self.failed_runs) or (self.check in GRADER_ENTRIES and self.points < self.max_points)


@dataclass
class Score:
    total: float
    by_exercise: dict[int, float]
    checks: list[CheckScore]
    notes: list[str]


def score(rubric: Rubric, runs: list[tuple[str, int, str | None]], violations: dict[tuple[str, str], int],
          rules: dict[int, tuple[int, int]] | None = None, probes: dict[tuple[int, str], bool] | None = None,
          weights: dict[str, float] | None = None) -> Score:
    """runs: (run, exercise, scenario) of one submission; violations: (run, check) -> count; rules: exercise ->
    (rules ok, rules) as the grader ran them or the submission reports them (None for a submission that reports
    none: then a `rules` entry earns the share of the exercise's other points that its traces earned); probes:
    (exercise, probe) -> whether the grader's probe found nothing (one not run earns that share too); weights:
    run -> what it weighs in per-run credit (1 when not given)."""
    checks, notes, by_exercise = [], [], {}
    for ex in rubric.exercises:
        mine = [(r, s) for r, e, s in runs if e == ex.number and ex.counts(s)]
        if not mine:
            notes.append(f"no runs for exercise {ex.number}")
        got = 0.0
        for check, points in ex.points.items():
            if check in GRADER_ENTRIES:
                continue
            graded = [r for r, s in mine if not rubric.skipped(s, check)]
            failed = [r for r in graded if violations.get((r, check), 0) > 0]
            count = sum(violations.get((r, check), 0) for r in graded)
            if not mine:
                earned = 0.0
            elif not graded:  # every run of the exercise is of a scenario that skips this check
                earned = points
            elif rubric.credit == "all-or-nothing":
                earned = points if not failed else 0.0
            else:
                weight = {r: (weights or {}).get(r, 1.0) for r in graded}
                total_weight = sum(weight.values())
                earned = points * sum(weight[r] for r in graded if r not in failed) / total_weight if total_weight \
                    else 0.0
            earned = round(earned, rubric.decimals)
            got += earned
            checks.append(CheckScore(ex.number, check, earned, points, len(graded), failed, count))
        traced_points = sum(p for c, p in ex.points.items() if c not in GRADER_ENTRIES)
        traced_got = got
        for check, points in ex.points.items():
            if check in GRADER_ENTRIES and check != RULES_ENTRY:
                found = (probes or {}).get((ex.number, check))
                share = 0.0 if not mine else (traced_got / traced_points if traced_points else 1.0) if found is None \
                    else float(found)
                earned = round(points * share, rubric.decimals)
                got += earned
                checks.append(CheckScore(ex.number, check, earned, points, len(mine), [], int(found is False)))
        if RULES_ENTRY in ex.points:
            points = ex.points[RULES_ENTRY]
            traced = ex.max_points - points
            ok, total = (rules or {}).get(ex.number, (0, 0))
            if not mine:
                share = 0.0
            elif rules is None:
                share = got / traced if traced else 1.0
            else:
                share = ok / total if total else 0.0
            earned = round(points * share, rubric.decimals)
            got += earned
            checks.append(CheckScore(ex.number, RULES_ENTRY, earned, points, len(mine), [], total - ok,
                                     rules=None if rules is None else (ok, total)))
        by_exercise[ex.number] = round(got, rubric.decimals)
    total = round(sum(by_exercise.values()), rubric.decimals)
    return Score(total, by_exercise, checks, notes)


def fmt(x: float) -> str:
    """Points as an LMS expects them: 7.5, 10, 3.33."""
    return f"{x:.6f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))
