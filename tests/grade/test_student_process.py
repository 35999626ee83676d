"""The student's process in the grader, without Spark: the harness's side (lab.grade.sandbox.student_calls) calls a student's
functions in their own sandbox (lab.grade.sandbox.student_box, started by the executor's side, lab.grade.sandbox.pair) across a socket,
as plain data; what the process sees of the machine; and every way a call can go wrong, said as the guard says it."""

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from lab.core.guard import ENDED, RAISED, TIMEOUT, WRONG_TYPE, StudentFault
from lab.core.interface import AppendResult, Entry, SegmentInfo, TruncationPlan
from lab.core.replica import Log
from lab.grade.sandbox import pair
from lab.grade.sandbox import student_calls as proxy
from lab.grade.sandbox import bubblewrap as sandbox

ROOT = Path(__file__).resolve().parents[2]
TOOL = sandbox.bwrap()
needs_bwrap = pytest.mark.skipif(TOOL is None, reason="bubblewrap (Debian's bubblewrap) is not installed")


class Executor:
    """The executor's side for one submission: the student's sandbox, answering the harness's requests."""

    def __init__(self, folder: Path, limits: sandbox.Limits, tool):
        (folder / "code" / "exercises").mkdir(parents=True)
        (folder / "code" / "exercises" / "__init__.py").write_text("")
        (folder / "tmp").mkdir()
        view = sandbox.student_lab(str(ROOT), str(folder / "hwm"))
        self.folder = folder
        self.students = pair.Students(str(folder), view, limits, tool)
        self.ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        try:
            while self.students.step(self.theirs):
                pass
        except (OSError, ValueError):  # closed by the test
            pass

    def student(self, module: str, source: str, functions: list[str], limit: float = 0.5) -> proxy.Student:
        (self.folder / "code" / module).write_text(source)
        return proxy.Student(proxy.Control(self.ours), module, functions, limit)

    def close(self):
        self.ours.close()
        self.thread.join(timeout=10)
        self.theirs.close()
        self.students.close()


@pytest.fixture
def executor(tmp_path):
    made = []

    def make(limits=sandbox.Limits(), tool=TOOL):
        made.append(Executor(tmp_path / f"sub{len(made)}", limits, tool))
        return made[-1]
    yield make
    for e in made:
        e.close()


READS = '''
def check_read(index, high_water_mark):
    {body}
'''


def reads(executor, body: str, limit: float = 0.5, **kw) -> proxy.Student:
    student = executor(**kw).student("exercises/reads.py", READS.format(body=body), ["check_read"], limit)
    student.start()
    return student


WALK = r'''
import json, os

def check_read(index, high_water_mark):
    found = []
    for root, dirs, files in os.walk("/"):
        for name in dirs + files:
            path = os.path.join(root, name)
            found.append([path, os.readlink(path) if os.path.islink(path) else None])
    return json.dumps(found)
'''


def allowed_view(code: Path) -> tuple[set[str], list[str]]:
    """What docs/security.md says the student's process sees: (exact paths, folders shown whole)."""
    python, runtime = sandbox.python_runtime()
    exact, whole = set(), []
    i = 0
    while i < len(runtime):
        kind = runtime[i]
        if kind == "--symlink":
            exact.add(runtime[i + 2])
        elif kind == "--ro-bind":
            (whole if os.path.isdir(runtime[i + 1]) else exact.add(runtime[i + 2]) or []).append(runtime[i + 2])
        i += 3 if kind in ("--symlink", "--ro-bind") else 2
    exact |= set(whole) | {f"{sandbox.LAB}/{rel}" for rel in sandbox.STUDENT_LAB}
    exact |= {"/tmp", "/dev", sandbox.CODE, f"{sandbox.CODE}/exercises"}
    exact |= {f"{sandbox.CODE}/exercises/{p.name}" for p in (code / "exercises").iterdir()}
    for path in list(exact) + whole:  # the folders on the way to what is bound
        parts = path.strip("/").split("/")
        exact |= {"/" + "/".join(parts[:k]) for k in range(1, len(parts))}
    return exact, whole


@needs_bwrap
def test_the_student_process_sees_the_runtime_the_interface_and_its_own_files_only(executor):
    e = executor()
    student = e.student("exercises/reads.py", WALK, ["check_read"], limit=20)
    student.start()
    found = json.loads(student.function("check_read")(1, 1))
    exact, whole = allowed_view(e.folder / "code")
    site = os.path.join(os.path.realpath(__import__("sysconfig").get_paths()["stdlib"]), "site-packages")
    stray = [path for path, _ in found if path not in exact and not path.startswith("/dev/")
             and not any(path.startswith(w + "/") for w in whole)]
    assert stray == []
    paths = {p for p, _ in found}
    assert {f"{sandbox.LAB}/lab/core/interface.py", f"{sandbox.CODE}/exercises/reads.py"} <= paths
    assert not any(p.startswith(("/proc", "/etc", "/home", "/work", "/sys", "/box")) for p in paths)
    assert not any("solutions" in p or p.startswith(site + "/") or "pyspark" in p for p in paths)
    assert not any(p.startswith("/tmp/") for p in paths)  # its own /tmp, empty
    assert not (set(sandbox.STUDENT_LAB) - {p[len(sandbox.LAB) + 1:] for p in paths if p.startswith(sandbox.LAB)})


@needs_bwrap
def test_values_cross_as_plain_data_and_come_back_checked(executor):
    e = executor()
    source = '''
from lab.core.interface import AppendResult, TruncationPlan

def follower_append(log, prev_index, prev_generation, entries):
    held = [log.generation_at(i) for i in range(log.log_end + 1)]
    first = log.entry_at(1)
    return AppendResult(success=True, truncate_from=None, append=tuple(entries), match_index=len(held) + first.index,
                        conflict_index=len(entries))

def plan_truncation(segments, index):
    return TruncationPlan(delete=tuple(s.path for s in segments if s.first_index > index), cut_path=segments[0].path,
                          cut_offset=segments[0].offsets[index])
'''
    student = e.student("exercises/mixed.py", source, ["follower_append", "plan_truncation"])
    student.start()
    append, plan = student.function("follower_append"), student.function("plan_truncation")
    log = Log([Entry(1, 1, "a"), Entry(2, 2, "b")])
    result = append(log, 2, 2, (Entry(3, 2, "c"),))
    assert result == AppendResult(success=True, append=(Entry(3, 2, "c"),), match_index=4, conflict_index=1)
    segments = [SegmentInfo(path="seg-1", first_index=1, offsets={1: 0, 2: 30}, size=60),
                SegmentInfo(path="seg-3", first_index=3, offsets={3: 0}, size=30)]
    assert plan(segments, 2) == TruncationPlan(delete=("seg-3",), cut_path="seg-1", cut_offset=30)


@needs_bwrap
def test_exercise_2_is_handed_its_functions_as_call_backs_and_its_changes_come_back(executor):
    e = executor()
    source = '''
def on_replication_response(match_index, follower, acknowledged, current_hwm, generation, generation_at,
                            high_water_mark):
    match_index[follower] = max(match_index.get(follower, 0), acknowledged)
    candidate = high_water_mark(list(match_index.values()))
    return candidate if candidate > current_hwm and generation_at(candidate) == generation else current_hwm

def high_water_mark(match_indexes):
    match_indexes.append(99)  # a mistake: the argument is changed, and the caller sees it as in process
    return 0
'''
    student = e.student("exercises/leader.py", source, ["on_replication_response", "high_water_mark"])
    student.start()
    respond = student.function("on_replication_response")
    asked = []

    def majority(match):
        asked.append(list(match))
        return sorted(match, reverse=True)[len(match) // 2]
    table = {"A": 3, "B": 1, "C": 0}
    assert respond(table, "B", 3, 1, 2, lambda i: 2, majority) == 3
    assert table == {"A": 3, "B": 3, "C": 0} and asked == [[3, 3, 0]]
    own = student.function("high_water_mark")
    match = [1, 2]
    assert own(match) == 0 and match == [1, 2, 99]
    # Handed its own function, the student's process calls it itself.
    assert respond({"A": 1}, "B", 1, 0, 1, lambda i: 1, own) == 0


@needs_bwrap
def test_a_call_that_raises_or_returns_the_wrong_type_is_said_with_the_students_file_and_line(executor):
    student = reads(executor, "return index / high_water_mark")
    call = student.function("check_read")
    with pytest.raises(StudentFault) as raised:
        call(1, 0)
    fault = raised.value.fault
    assert (fault.kind, fault.function, fault.inputs, fault.file, fault.line) == \
        (RAISED, "check_read", "1, 0", "exercises/reads.py", 3)
    assert fault.detail == "ZeroDivisionError: division by zero"
    with pytest.raises(StudentFault) as wrong:
        call(1, 2)
    assert wrong.value.fault.kind == WRONG_TYPE
    assert "0.5 of type float, expected str or None" in wrong.value.fault.detail
    assert student.started == 1  # the process served both calls


@needs_bwrap
def test_a_call_past_its_limit_is_a_timeout_and_the_next_call_gets_a_new_process(executor):
    student = reads(executor, "while index > 0:\n        pass\n    return None", limit=0.3)
    call = student.function("check_read")
    with pytest.raises(StudentFault) as raised:
        call(1, 1)
    assert raised.value.fault.kind == TIMEOUT and raised.value.fault.where in ("exercises/reads.py:3",
                                                                               "exercises/reads.py:4")
    assert call(0, 1) is None  # the alarm stopped the loop: the same process answers
    # A loop that ignores the alarm: the harness's own clock ends the call, and the process.
    student = reads(executor, "import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                              "    while index > 0:\n        pass\n    return None", limit=0.3)
    call = student.function("check_read")
    with pytest.raises(StudentFault) as raised:
        call(1, 1)
    assert raised.value.fault.kind == TIMEOUT and raised.value.fault.detail == "0.3 s"
    assert raised.value.fault.where == "exercises/reads.py:2"  # the function's own line
    assert call(0, 1) is None and student.started == 2


@needs_bwrap
def test_a_process_that_ends_or_sends_garbage_faults_that_call_only(executor):
    student = reads(executor, "import os\n    if index == 7:\n        os._exit(3)\n    "
                              "if index == 8:\n        os.write(3, b'\\x05\\x00\\x00\\x00garbage')\n"
                              "        return None\n    return 'no'")
    call = student.function("check_read")
    with pytest.raises(StudentFault) as ended:
        call(7, 1)
    assert (ended.value.fault.kind, ended.value.fault.detail) == (ENDED, "exit code 3")
    assert ended.value.fault.sentence() == "check_read(7, 1) ended the student's process (exit code 3) " \
                                           "(exercises/reads.py:2)"
    assert call(1, 1) == "no"
    with pytest.raises(StudentFault) as garbage:
        call(8, 1)
    assert garbage.value.fault.kind == WRONG_TYPE
    assert garbage.value.fault.detail.startswith("something that is not an answer: bytes that are not JSON")
    assert call(1, 1) == "no" and student.started == 3


@needs_bwrap
def test_a_storm_of_processes_stops_the_exercise(executor):
    limits = sandbox.Limits(processes=8)
    student = reads(executor, "import os, time\n    for _ in range(100):\n        if os.fork() == 0:\n"
                              "            time.sleep(30)\n            os._exit(0)\n    time.sleep(5)\n    return None",
                    limit=10, limits=limits)
    call = student.function("check_read")
    with pytest.raises(StudentFault) as raised:
        call(1, 1)
    assert raised.value.fault.detail == proxy.PROCESSES
    with pytest.raises(StudentFault):
        call(1, 1)  # not started again: the exercise is stopped
    assert student.started == 1


@needs_bwrap
def test_a_file_that_does_not_import_says_so(executor):
    student = executor().student("exercises/reads.py", "import solutions\n", ["check_read"])
    with pytest.raises(proxy.NotImportable) as raised:
        student.start()
    assert raised.value.fault.detail == "ModuleNotFoundError: No module named 'solutions'"
    student = executor().student("exercises/reads.py", "check_read = len\n", ["check_read"])
    with pytest.raises(proxy.NotImportable, match="not defined in the submitted files"):
        student.start()


def test_without_bubblewrap_the_same_calls_cross_the_same_way(executor):
    student = reads(executor, "return None if index <= high_water_mark else 'above'", tool=None)
    call = student.function("check_read")
    assert call(1, 2) is None and call(3, 2) == "above"
