"""The guard around a student's functions: a raise, a loop, a wrong type and a missing function each become a
StudentFault naming the function, its inputs and the student's file and line; the reference passes untouched."""

from __future__ import annotations

import sys
import textwrap
import time

import pytest

from lab.core import guard
from lab.core.impl import load
from lab.core.replica import Log
from lab.core.messages import Entry
from tests.studentcode import ROOT


def _student_function(tmp_path, name, body):
    path = tmp_path / f"student_{name}_{abs(hash(body)) % 10_000}.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return path, namespace[name]


def test_a_raise_names_the_function_its_inputs_and_the_students_line(tmp_path):
    path, fn = _student_function(tmp_path, "high_water_mark", """
        def high_water_mark(match_indexes):
            ordered = sorted(match_indexes)
            return ordered[len(ordered)]
    """)
    with pytest.raises(guard.StudentFault) as caught:
        guard.guard_function("high_water_mark", fn)([3, 1, 2])
    fault = caught.value.fault
    assert fault.kind == guard.RAISED
    assert fault.function == "high_water_mark"
    assert fault.inputs == "[3, 1, 2]"
    assert fault.detail.startswith("IndexError")
    assert fault.file.endswith(path.name) and fault.line == 4


def test_an_endless_loop_is_stopped_at_the_limit_even_through_a_bare_except(tmp_path):
    path, fn = _student_function(tmp_path, "check_read", """
        def check_read(index, high_water_mark):
            while True:
                try:
                    index += 0
                except:
                    pass
    """)
    started = time.monotonic()
    with pytest.raises(guard.StudentFault) as caught:
        guard.guard_function("check_read", fn, limit=0.2)(4, 3)
    assert time.monotonic() - started < 3.0
    fault = caught.value.fault
    assert fault.kind == guard.TIMEOUT and fault.detail == "0.2 s"
    assert fault.inputs == "4, 3"
    assert fault.file.endswith(path.name) and 3 <= fault.line <= 7


def test_a_wrong_type_is_refused_with_the_value_and_the_expected_type(tmp_path):
    path, fn = _student_function(tmp_path, "leader_epoch_end", """
        def leader_epoch_end(log, of_generation):
            return str(log.log_end)
    """)
    log = Log([Entry(1, 1, "a"), Entry(2, 2, "b")])
    with pytest.raises(guard.StudentFault) as caught:
        guard.guard_function("leader_epoch_end", fn)(log, 1)
    fault = caught.value.fault
    assert fault.kind == guard.WRONG_TYPE
    assert fault.inputs == "log(generations=[1, 2]), 1"
    assert "'2' of type str, expected int" in fault.detail
    assert fault.file.endswith(path.name) and fault.line == 2


def test_a_bool_is_not_an_index(tmp_path):
    _, fn = _student_function(tmp_path, "high_water_mark", """
        def high_water_mark(match_indexes):
            return True
    """)
    with pytest.raises(guard.StudentFault, match="expected int"):
        guard.guard_function("high_water_mark", fn)([1])


def test_not_implemented_passes_through_for_the_checks_to_call_it_not_started(tmp_path):
    _, fn = _student_function(tmp_path, "high_water_mark", """
        def high_water_mark(match_indexes):
            raise NotImplementedError("exercise 1")
    """)
    with pytest.raises(NotImplementedError):
        guard.guard_function("high_water_mark", fn)([1])


def test_nested_guarded_calls_share_one_timer_and_the_inner_fault_is_kept(tmp_path):
    _, inner = _student_function(tmp_path, "high_water_mark", """
        def high_water_mark(match_indexes):
            return match_indexes[7]
    """)
    reference = load("solutions")
    guarded_inner = guard.guard_function("high_water_mark", inner)
    outer = guard.guard_function("on_replication_response", reference.on_replication_response)
    with pytest.raises(guard.StudentFault) as caught:
        outer({"A": 1, "B": 0, "C": 0}, "B", 1, 0, 1, lambda i: 1, guarded_inner)
    assert caught.value.fault.function == "high_water_mark"
    assert guard._ALARM.depth == 0


def test_the_reference_guarded_gives_the_same_answers():
    reference = load("solutions")
    safe = guard.guarded(reference, limit=0.5)
    assert guard.guarded(safe, limit=0.5) is safe
    for match in ([3, 3, 1], [7, 5, 5, 3], [9, 7, 3, 3], [4]):
        assert safe.high_water_mark(match) == reference.high_water_mark(match)
    assert safe.check_read(4, 3) == reference.check_read(4, 3)


def test_fault_of_finds_the_fault_behind_a_wrapping_exception(tmp_path):
    _, fn = _student_function(tmp_path, "check_read", """
        def check_read(index, high_water_mark):
            return 1 / 0
    """)
    try:
        try:
            guard.guard_function("check_read", fn)(1, 1)
        except guard.StudentFault as exc:
            raise RuntimeError("node stopped") from exc
    except RuntimeError as outer:
        fault = guard.fault_of(outer)
    assert fault is not None and fault.detail.startswith("ZeroDivisionError")
    assert guard.fault_of(ValueError("x")) is None


def test_a_file_that_does_not_import_is_a_fault_of_its_own_function_only(tmp_path):
    package = tmp_path / "half_written"
    package.mkdir()
    (package / "__init__.py").write_text((ROOT / "exercises" / "__init__.py").read_text())
    for name in ("high_water_mark", "leader", "follower", "reads", "wal_truncation", "leader_epoch"):
        (package / f"{name}.py").write_text(f"from solutions.{name} import *  # noqa\n")
    (package / "reads.py").write_text("def check_read(index, high_water_mark):\n    return None if index <= (\n")
    sys.path.insert(0, str(tmp_path))
    try:
        impl = load("half_written")
    finally:
        sys.path.remove(str(tmp_path))
    assert impl.high_water_mark([3, 3, 1]) == 3  # the other files work
    with pytest.raises(guard.StudentFault) as caught:
        guard.guarded(impl).check_read(1, 1)
    fault = caught.value.fault
    assert fault.kind == guard.IMPORT and fault.function == "check_read"
    assert fault.file.endswith("half_written/reads.py") and fault.line == 2
    assert fault.detail == "SyntaxError: '(' was never closed"


def test_ctrl_c_inside_a_students_call_is_marked_with_that_call(tmp_path):
    _, fn = _student_function(tmp_path, "check_read", """
        def check_read(index, high_water_mark):
            raise KeyboardInterrupt
    """)
    with pytest.raises(KeyboardInterrupt) as caught:
        guard.guard_function("check_read", fn)(4, 3)
    fault = caught.value.fault
    assert fault.kind == guard.INTERRUPTED and fault.inputs == "4, 3" and fault.line == 3
    assert fault.sentence().startswith("check_read(4, 3) was running (")


def test_a_repeated_alarm_is_raised_into_the_students_code_only_never_into_the_guards_own_lines():
    namespace: dict = {}
    exec(compile("import sys\nframe = sys._getframe()\n", guard.__file__, "exec"), namespace)
    assert not guard._in_students_code(namespace["frame"])  # building the fault: a repeat is ignored there
    guard._ALARM._fire(14, namespace["frame"])  # (returns: nothing raised)
    assert guard._in_students_code(sys._getframe())  # a file outside lab/ and the stdlib: the student's
    with pytest.raises(guard._CallTimeout):
        guard._ALARM._fire(14, sys._getframe())


def test_an_implementation_guarded_already_keeps_its_guard_and_its_limit():
    """The grader's sandbox guards the student's code with the rubric's limit and watches every fault; the checks
    and the simulator it then runs guard again with their default, and must keep the sandbox's guard."""
    first = guard.guarded(load("solutions"), limit=0.3)
    again = guard.guarded(first, limit=guard.DEFAULT_LIMIT)
    assert again is first
    assert all(getattr(again, f).guard_limit == 0.3 for f in guard.FUNCTIONS)


def test_a_fault_names_a_file_alike_on_every_machine(tmp_path, monkeypatch):
    """A file of the lab's folder (the reference's, when the student's answer makes it fail) is named from that
    folder, wherever the run was started: a student's run and the grader's reproduction of it, in its sandbox, say
    the same; a student's own file is named from the folder the run was started in."""
    from pathlib import Path

    from lab.core import guard

    root = Path(guard.__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    assert guard._shown_path(str(root / "solutions" / "leader.py")) == "solutions/leader.py"
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "reads.py").write_text("")
    assert guard._shown_path(str(tmp_path / "exercises" / "reads.py")) == "exercises/reads.py"
    assert guard._shown_path("/elsewhere/x.py") == "/elsewhere/x.py"
