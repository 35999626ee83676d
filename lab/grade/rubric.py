"""The rubric (TOML): which checks grade which exercise and for how many points; and the scoring itself,
from the number of violations per run and check. Pure Python."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources

from lab.grade.rules import CHECK_IDS, GRADER_ENTRIES, SELF_REPORTED

RULES_ENTRY = SELF_REPORTED.check  # a rubric entry that is not a check: the self-reported rule results
UNGATED = ("scenario", RULES_ENTRY)  # entries a run that does not advance still earns (see Exercise.progress)

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
    # The checks that say a run advanced (`progress`): in a run where one of them found something, the exercise's
    # other entries (but `scenario` and `rules`) earn nothing, since a run that never advances breaks no safety
    # rule and so proves nothing about it. A progress check may also have points of its own.
    progress: tuple[str, ...] = ()

    @property
    def max_points(self) -> float:
        return sum(self.points.values())

    def gated(self, check: str) -> bool:
        """Whether this entry earns its points only in the runs that advance."""
        return bool(self.progress) and check not in self.progress and check not in UNGATED

    def counts(self, scenario: str | None) -> bool:
        return "*" in self.scenarios or (scenario or "").lower() in self.scenarios


@dataclass(frozen=True)
class Skip:
    """Checks a scenario does not grade, where breaking them is the scenario's lesson: at the indexes named (the
    entry the lesson loses), or on the whole run when it names none."""

    checks: frozenset[str]
    indexes: frozenset[int] = frozenset()

    def covers(self, check: str, index: int | None = None) -> bool:
        return check in self.checks and (not self.indexes or index in self.indexes)


@dataclass(frozen=True)
class Rubric:
    exercises: tuple[Exercise, ...]
    credit: str = "per-run"
    decimals: int = 2
    skip: dict[str, Skip] = field(default_factory=dict)  # scenario -> what is not graded there
    real_weight: float = 0.0  # re-execution: what a real-process run weighs beside a reproduced simulator run
    sandbox: dict = field(default_factory=dict)  # re-execution: limits of the sandbox (lab.grade.sandbox.Limits)
    name: str = "HWM Lab"  # the assignment's name in an LMS's gradebook

    @property
    def max_total(self) -> float:
        return sum(e.max_points for e in self.exercises)

    def skipped(self, scenario: str | None, check: str) -> bool:
        """Whether the scenario skips the check on its whole runs (a skip that names no index)."""
        skip = self.skip.get((scenario or "").lower())
        return skip is not None and not skip.indexes and check in skip.checks

    def blind(self, scenario: str | None, check: str) -> bool:
        """Whether the scenario skips the check at some indexes only: a run of it cannot show the check holds (the
        entry it concerns is not judged), but what the check finds elsewhere in it counts."""
        skip = self.skip.get((scenario or "").lower())
        return skip is not None and bool(skip.indexes) and check in skip.checks

    def skipped_at(self, scenario: str | None, check: str, index: int | None) -> bool:
        """Whether the scenario skips a violation of the check at this index."""
        skip = self.skip.get((scenario or "").lower())
        return skip is not None and skip.covers(check, index)

    def grades(self, exercise: int | None, scenario: str | None, check: str, index: int | None = None) -> bool:
        """Whether a violation of `check` (at `index`) in a run of this exercise and scenario costs points: the
        exercise lists the check (in its points or its progress), counts the scenario, and the scenario does not
        skip it there. The rest is kept, counted nowhere. Without `index`: whether any violation of it may."""
        listed = any(e.number == exercise and (check in e.points or check in e.progress) and check != RULES_ENTRY
                     and e.counts(scenario) for e in self.exercises)
        return listed and not (self.skipped(scenario, check) if index is None
                               else self.skipped_at(scenario, check, index))


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
        indexes = spec.get("index", [])
        indexes = [indexes] if isinstance(indexes, int) and not isinstance(indexes, bool) else indexes
        if not isinstance(indexes, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 1
                                                    for i in indexes):
            raise RubricError(f"{name}: scenarios.{scenario}.index must be an index (or a list of them), 1 or more")
        skip[scenario.lower()] = Skip(frozenset(checks), frozenset(indexes))
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
        progress = spec.get("progress", [])
        if not isinstance(progress, list) or not all(isinstance(c, str) for c in progress):
            raise RubricError(f"{name}: exercises.{key}.progress must be a list of checks")
        _known(progress, f"{name}: exercises.{key}.progress")
        runs = {k: spec.get(k, d) for k, d in (("seeds", 2), ("explore", 20))}
        for k, v in runs.items():
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 1000:
                raise RubricError(f"{name}: exercises.{key}.{k} must be an integer from 0 to 1000")
        exercises.append(Exercise(number, str(spec.get("title", f"Exercise {number}")),
                                  {c: float(p) for c, p in points.items()}, tuple(s.lower() for s in scenarios),
                                  **runs, progress=tuple(progress)))
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
    idle_runs: list[str] = field(default_factory=list)  # runs it found nothing in, whose points it did not earn:
    # they did not advance (Exercise.progress)
    progress: bool = False  # a check of the exercise's progress: a run it fails earns the gated entries nothing

    @property
    def failed(self) -> bool:
        return bool(self.failed_runs) or bool(self.idle_runs) or (self.check in GRADER_ENTRIES
                                                                   and self.points < self.max_points)


@dataclass
class Score:
    total: float
    by_exercise: dict[int, float]
    checks: list[CheckScore]
    notes: list[str]


def score(rubric: Rubric, runs: list[tuple[str, int, str | None]], violations: dict[tuple[str, str], int],
          rules: dict[int, tuple[int, int]] | None = None, probes: dict[tuple[int, str], bool] | None = None,
          weights: dict[str, float] | None = None) -> Score:
    """runs: (run, exercise, scenario) of one submission; violations: (run, check) -> count of the graded
    violations; rules: exercise -> (rules ok, rules) as the grader ran them or the submission reports them (None
    for a submission that reports none: then a `rules` entry earns the share of the exercise's other points that
    its traces earned); probes: (exercise, probe) -> whether the grader's probe found nothing (one not run earns
    that share too); weights: run -> what it weighs in per-run credit (1 when not given). A run that did not
    advance (a check of the exercise's `progress` found something in it) earns the gated entries nothing."""
    checks, notes, by_exercise = [], [], {}
    for ex in rubric.exercises:
        mine = [(r, s) for r, e, s in runs if e == ex.number and ex.counts(s)]
        if not mine:
            notes.append(f"no runs for exercise {ex.number}")
        weight = {r: (weights or {}).get(r, 1.0) for r, _ in mine}
        idle = {r for r, s in mine for c in ex.progress
                if not rubric.skipped(s, c) and violations.get((r, c), 0) > 0}
        got = 0.0
        for check in [*ex.points, *(c for c in ex.progress if c not in ex.points)]:
            points = ex.points.get(check, 0.0)
            if check in GRADER_ENTRIES:
                continue
            # (a run of a scenario blind to the check at an index counts only against it: it cannot show it holds)
            graded = [r for r, s in mine if not rubric.skipped(s, check)
                      and not (rubric.blind(s, check) and violations.get((r, check), 0) == 0)]
            failed = [r for r in graded if violations.get((r, check), 0) > 0]
            count = sum(violations.get((r, check), 0) for r in graded)
            withheld = [r for r in graded if r in idle and r not in failed] if ex.gated(check) else []
            if not mine:
                earned = 0.0
            elif not graded:  # every run of the exercise is of a scenario that skips this check
                earned = points
            elif rubric.credit == "all-or-nothing":
                earned = points if not failed and not withheld else 0.0
            else:
                total_weight = sum(weight[r] for r in graded)
                earned = points * sum(weight[r] for r in graded if r not in failed and r not in withheld) \
                    / total_weight if total_weight else 0.0
            earned = round(earned, rubric.decimals)
            got += earned
            checks.append(CheckScore(ex.number, check, earned, points, len(graded), failed, count,
                                     idle_runs=withheld, progress=check in ex.progress))
        traced_points = sum(p for c, p in ex.points.items() if c not in GRADER_ENTRIES)
        traced_got = got
        total_weight = sum(weight.values())
        advanced = sum(w for r, w in weight.items() if r not in idle) / total_weight if total_weight else 0.0
        for check, points in ex.points.items():
            if check in GRADER_ENTRIES and check != RULES_ENTRY:
                found = (probes or {}).get((ex.number, check))
                share = 0.0 if not mine else (traced_got / traced_points if traced_points else 1.0) if found is None \
                    else float(found) * (advanced if ex.gated(check) else 1.0)
                earned = round(points * share, rubric.decimals)
                got += earned
                withheld = sorted(idle) if found and ex.gated(check) else []
                checks.append(CheckScore(ex.number, check, earned, points, len(mine), [], int(found is False),
                                         idle_runs=withheld))
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
