"""One small local Spark session for the whole grader suite (starting a JVM costs seconds)."""

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from lab.grade.session import spark_session

    # Executors start Python workers: the same interpreter as the tests.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = spark_session("local[2]", app_name="hwm-lab-grade-tests",
                            local_dir=str(tmp_path_factory.mktemp("spark-local")))
    # The tests' traces are tiny: few partitions, and re-planning every stage adaptively costs more than it saves.
    session.conf.set("spark.sql.shuffle.partitions", "2")
    session.conf.set("spark.sql.adaptive.enabled", "false")
    yield session
    session.stop()
