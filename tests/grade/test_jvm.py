"""The grader's JVM class archive (lab/grade/spark/jvm.py): used when made, ignored when stale, made aside."""

from __future__ import annotations

import subprocess

import pytest

from lab.grade.spark import jvm, session
from lab.grade.spark import warm_jvm as warm


def test_the_options_use_the_archive_or_write_it_and_nothing_without_one(tmp_path):
    archive = tmp_path / "a.jsa"
    assert jvm.java_options() == []
    used = jvm.java_options(archive=archive)
    assert used[0] == f"-XX:SharedArchiveFile={archive}" and "-Xshare:auto" in used  # never -Xshare:on
    assert jvm.java_options(dump_to=archive)[0] == f"-XX:ArchiveClassesAtExit={archive}"


def test_a_grade_session_starts_with_the_archive_once_it_is_made(tmp_path, monkeypatch):
    monkeypatch.delenv(jvm.OFF, raising=False)
    monkeypatch.setattr(jvm, "ARCHIVE_DIR", tmp_path)
    assert jvm.ready() is None
    assert session.session_conf(quick=True)["spark.driver.extraJavaOptions"] == session.QUICK_JIT
    path = jvm.archive_path()
    path.write_bytes(b"classes")
    assert jvm.ready() == path
    options = session.session_conf(quick=True)["spark.driver.extraJavaOptions"].split()
    assert options[0] == session.QUICK_JIT and f"-XX:SharedArchiveFile={path}" in options
    assert session.session_conf()["spark.driver.extraJavaOptions"].startswith(f"-XX:SharedArchiveFile={path}")
    monkeypatch.setenv(jvm.OFF, "1")  # to compare, in bench/grading.py
    assert jvm.ready() is None and "spark.driver.extraJavaOptions" not in session.session_conf()


def test_the_archive_is_keyed_by_java_and_spark(tmp_path, monkeypatch):
    import pyspark

    first = jvm.archive_path(tmp_path)
    monkeypatch.setattr(pyspark, "__version__", "0.0.1")
    assert jvm.archive_path(tmp_path) != first and jvm.archive_path(tmp_path).parent == tmp_path


@pytest.mark.parametrize("content", [None, b"not an archive", b"\0" * 4096])
def test_a_java_given_a_missing_or_stale_archive_runs_as_usual_and_says_nothing(tmp_path, content):
    archive = tmp_path / "spark.jsa"
    if content is not None:
        archive.write_bytes(content)
    done = subprocess.run(["java", *jvm.java_options(archive=archive), "-version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0
    assert "version" in done.stderr and not any(w in done.stderr.lower() for w in ("error", "warning", "cds"))


def test_a_failed_preparation_leaves_no_archive_and_a_made_one_is_put_in_place_once(tmp_path, monkeypatch):
    monkeypatch.delenv(jvm.OFF, raising=False)
    calls = []

    def fails(work, dump_to):
        dump_to.write_bytes(b"half written")
        calls.append(dump_to)
        raise RuntimeError("the small grade failed (exit 1)")

    monkeypatch.setattr(warm, "_small_grade", fails)
    with pytest.raises(RuntimeError, match="small grade failed"):
        warm.prepare(tmp_path, say=lambda m: None)
    assert list(tmp_path.iterdir()) == [] and jvm.ready(tmp_path) is None

    def writes(work, dump_to):
        calls.append(dump_to)
        assert dump_to.parent == tmp_path and dump_to != jvm.archive_path(tmp_path)  # aside, then in place
        dump_to.write_bytes(b"classes")

    monkeypatch.setattr(warm, "_small_grade", writes)
    left = tmp_path / f".{jvm.archive_path(tmp_path).name}.999.tmp"  # a preparation killed before its JVM exited
    left.write_bytes(b"half written")
    said = []
    assert warm.prepare(tmp_path, say=said.append) == jvm.archive_path(tmp_path) == jvm.ready(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [jvm.archive_path(tmp_path).name]
    warm.prepare(tmp_path, say=said.append)  # made already: not again
    assert len(calls) == 2 and "ready" in said[-1]


@pytest.mark.spark
def test_the_suites_spark_session_uses_the_archive_when_setup_made_it(spark):
    arguments = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    made = jvm.ready()
    assert (f"-XX:SharedArchiveFile={made}" in arguments) == (made is not None)
    assert not any(a.startswith("-XX:ArchiveClassesAtExit") for a in arguments)
