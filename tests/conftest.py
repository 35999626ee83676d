"""Shared test fixtures: `pytest --impl solutions|exercises|MODULE` picks the code under test (the option itself
is declared in the top-level conftest.py, so that `--impl exercises` is read as an option, not a test path).

With a student's code, a test that needs an exercise that is not passing yet (not started, failing its rules, or
whose file does not import) is skipped, and tests/test_exercises.py gives one clear failure per exercise instead of
a wall of NotImplementedError, or of failures that are another exercise's.
A test module lists what it needs in EXERCISES_NEEDED (default: every exercise, if it uses `impl`).
"""

import os
import sys

import pytest

from hypothesis import HealthCheck, settings

from lab.core.interface import EXERCISES as TABLE

# Property tests judge answers, not speed: on a loaded machine (two suites, a Spark grade beside) drawing a list can
# take a second, which Hypothesis's default health check and deadline would call a failure.
settings.register_profile("lab", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("lab")

ALL_EXERCISES = tuple(ex.number for ex in TABLE)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One small local Spark session for the whole suite (starting a JVM costs seconds): the grader's tests, and
    the handout's and the mistakes' grades, which compare with or assert on a grade of the course's repository."""
    from lab.grade.spark.session import spark_session

    # Executors start Python workers: the same interpreter as the tests.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = spark_session("local[2]", app_name="hwm-lab-grade-tests",
                            local_dir=str(tmp_path_factory.mktemp("spark-local")))
    # The tests' traces are tiny: few partitions, and re-planning every stage adaptively costs more than it saves.
    session.conf.set("spark.sql.shuffle.partitions", "2")
    session.conf.set("spark.sql.adaptive.enabled", "false")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def impl(request):
    from lab.core import impl as impl_module

    return impl_module.load(request.config.getoption("--impl"))


def _not_passing(impl_name):
    """The exercises not passing their rules, and why (not started, its file does not import, failing):
    tests/test_exercises.py fails once for each."""
    from lab.core import impl as impl_module
    from lab.core.guard import IMPORT
    from lab.student.checks import EXERCISES, check_rules

    impl = impl_module.load(impl_name)
    found = {}
    for ex in EXERCISES:
        status, rules = check_rules(ex, impl)
        if any(r.fault and r.fault["kind"] == IMPORT for r in rules):
            found[ex.number] = "its file does not import"
        elif status != "passing":
            found[ex.number] = status
    return found


def pytest_collection_modifyitems(config, items):
    impl_name = config.getoption("--impl")
    if impl_name == "solutions":
        return
    missing = _not_passing(impl_name)
    if not missing:
        return
    for item in items:
        if "impl" not in getattr(item, "fixturenames", ()) or item.module.__name__.endswith("test_exercises"):
            continue
        needed = set(getattr(item.module, "EXERCISES_NEEDED", ALL_EXERCISES))
        blocked = sorted(needed & set(missing))
        if blocked:
            said = ", ".join(f"exercise {n} ({missing[n]})" for n in blocked)
            item.add_marker(pytest.mark.skip(reason=f"needs {said}: see tests/test_exercises.py"))
