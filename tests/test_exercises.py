"""One test per exercise: the rules of the pattern the student's function must keep, in words.

`pytest --impl exercises` gives one clear message per exercise; CI runs them on `solutions`.
"""

import ast
from pathlib import Path

import pytest

from lab.core import impl as impl_module
from lab.student.checks import EXERCISES, check_rules, last_verdict, run_check

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("number", [ex.number for ex in EXERCISES], ids=lambda n: f"exercise{n}")
def test_exercise_keeps_every_rule(impl, number):
    ex = EXERCISES[number - 1]
    status, results = check_rules(ex, impl)
    if status == "not started":
        pytest.fail(f"Exercise {number} ({ex.module}): not started. {results[0].detail}", pytrace=False)
    broken = [f"  - {r.rule}: {r.detail}" for r in results if not r.ok]
    assert not broken, f"Exercise {number} ({ex.module}) breaks:\n" + "\n".join(broken)
    # One verdict per exercise: the last whole check of these same files (its scenarios, its exploration) says too.
    assert last_verdict(number, impl.name) != "failing", \
        f"Exercise {number} ({ex.module}): its rules hold, but `hwm-lab exercise check {number}` failed on these " \
        f"same files: run it to see why"


WRONG_VARIANTS = {
    1: ("ex1_article_formula", "even cluster sizes (N4)"),
    2: ("ex2_no_generation_check", "only advances over an entry of the leader's current generation (F8)"),
    3: ("ex3_truncates_matching", "a late request never truncates matching entries"),
    4: ("ex4_serves_above_hwm", "refuse above the HWM, naming the index and the HWM"),
    5: ("ex5_off_by_one", "cut the segment that holds the index at that entry's offset"),
    6: ("ex6_keeps_everything", "the follower truncates what it holds after the leader's end"),
}


@pytest.mark.parametrize("number", sorted(WRONG_VARIANTS), ids=lambda n: f"exercise{n}")
def test_exercise_check_catches_the_wrong_variant_and_names_the_rule(impl, number, tmp_path):
    if impl.name != "solutions":
        pytest.skip("checks the checker itself; runs with --impl solutions")
    module, rule = WRONG_VARIANTS[number]
    report = run_check(number, f"tests.wrong_variants.{module}", out_root=tmp_path)
    assert report.status == "failing"
    broken = [r.rule for r in report.rules if not r.ok]
    assert any(rule in text for text in broken), broken
    assert rule in report.text() and "BROKEN" in report.text()


def test_reference_solutions_pass_their_scenarios(impl, tmp_path):
    if impl.name != "solutions":
        pytest.skip("checks the reference answers")
    for ex in EXERCISES:
        report = run_check(ex.number, "solutions", out_root=tmp_path)
        assert report.status == "passing", report.text()
        assert report.scenarios and all((Path(s["out"]) / "trace.json").exists() for s in report.scenarios)


def test_a_scenario_failure_shows_the_steps_up_to_it(impl, tmp_path):
    if impl.name != "solutions":
        pytest.skip("checks the checker itself")
    report = run_check(2, "tests.wrong_variants.ex2_no_generation_check", out_root=tmp_path)
    f8 = [s for s in report.scenarios if s["scenario"] == "f8"][0]
    assert not f8["passed"]
    assert "broken: expect hwm 1 on A,B,C,D" in f8["explain"]
    assert "steps that show it (4 of 6)" in f8["explain"]


# ---- the handout holds no answers --------------------------------------------------------------------------


def test_every_stub_fails_its_exercise(impl):
    if impl.name != "solutions":
        pytest.skip("checks the untouched handout")
    stubs = impl_module.load("exercises")
    for ex in EXERCISES:
        status, results = check_rules(ex, stubs)
        assert status == "not started", f"exercise {ex.number}: a stub passes by accident"
        assert all(not r.ok for r in results)


def _function_bodies(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bodies = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            body = node.body[1:] if ast.get_docstring(node) else node.body
            bodies[node.name] = ast.dump(ast.Module(body=body, type_ignores=[]))
    return bodies


def test_exercises_hold_no_reference_code(impl):
    if impl.name != "solutions":
        pytest.skip("checks the untouched handout")
    for stub_path in sorted((ROOT / "exercises").glob("*.py")):
        if stub_path.name == "__init__.py":
            continue
        stubs = _function_bodies(stub_path)
        reference = _function_bodies(ROOT / "solutions" / stub_path.name)
        assert stubs, f"{stub_path.name} defines no function"
        for name, body in stubs.items():
            assert "NotImplementedError" in body, f"{stub_path.name}:{name} does not raise NotImplementedError"
            assert body != reference.get(name), f"{stub_path.name}:{name} holds the reference answer"
            assert len(ast.parse(stub_path.read_text()).body) <= 8  # docstring, imports, functions only
