"""Shared test fixtures: `pytest --impl solutions|exercises|MODULE` picks the code under test (the option itself
is declared in the top-level conftest.py, so that `--impl exercises` is read as an option, not a test path).

With a student's code, a test that needs an exercise the student has not started is skipped, and
tests/test_exercises.py gives one clear failure per exercise instead of a wall of NotImplementedError.
A test module lists what it needs in EXERCISES_NEEDED (default: every exercise, if it uses `impl`).
"""

import pytest

ALL_EXERCISES = (1, 2, 3, 4, 5, 6)


@pytest.fixture(scope="session")
def impl(request):
    from lab.core import impl as impl_module

    return impl_module.load(request.config.getoption("--impl"))


def _not_started(impl_name):
    """The exercises not started, or whose file does not import: tests/test_exercises.py fails once for each."""
    from lab.core import impl as impl_module
    from lab.core.guard import IMPORT
    from lab.student.checks import EXERCISES, check_rules

    impl = impl_module.load(impl_name)
    missing = set()
    for ex in EXERCISES:
        status, rules = check_rules(ex, impl)
        if status == "not started" or any(r.fault and r.fault["kind"] == IMPORT for r in rules):
            missing.add(ex.number)
    return missing


def pytest_collection_modifyitems(config, items):
    impl_name = config.getoption("--impl")
    if impl_name == "solutions":
        return
    missing = _not_started(impl_name)
    if not missing:
        return
    for item in items:
        if "impl" not in getattr(item, "fixturenames", ()) or item.module.__name__.endswith("test_exercises"):
            continue
        needed = set(getattr(item.module, "EXERCISES_NEEDED", ALL_EXERCISES))
        blocked = sorted(needed & missing)
        if blocked:
            item.add_marker(pytest.mark.skip(
                reason=f"needs exercise {', '.join(map(str, blocked))} (not started or its file does not import: see tests/test_exercises.py)"))
