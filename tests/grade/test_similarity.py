"""Similarity: renamed copies (of another student, of solutions/) are listed in similarity.csv and report.html with
the lines that match side by side; among 30 independent correct answers in different styles at most one pair is."""

import csv

import pytest

from lab.grade.spark import job
from lab.grade.outputs import similarity as sim

from . import styles, synth
from .helpers import full_runs

INDEPENDENT = 30


def test_the_generated_answers_are_correct(tmp_path, monkeypatch):
    """The class the threshold is measured on is of correct answers: each keeps every rule of every exercise."""
    from lab.core import impl as impl_module
    from lab.student.checks import EXERCISES, check_rules

    monkeypatch.syspath_prepend(str(tmp_path))
    init = (styles.ROOT / "exercises" / "__init__.py").read_text()
    for seed in range(0, INDEPENDENT, 5):
        pkg = tmp_path / f"answers{seed}"
        pkg.mkdir()
        (pkg / "__init__.py").write_text(init)
        for path, data in styles.student_files(seed).items():
            (pkg / path.split("/")[1]).write_bytes(data)
        impl = impl_module.load(f"answers{seed}")
        assert [check_rules(ex, impl)[0] for ex in EXERCISES] == ["passing"] * len(EXERCISES)


def test_names_literals_and_the_stub_lines_do_not_count():
    stubs = sim.handout_stubs()
    files = styles.student_files(1)
    copy = styles.renamed(files, seed=9)
    assert copy != files
    for module in files:
        a = sim.normalise(files[module].decode(), sim._stub_lines(module, stubs))
        b = sim.normalise(copy[module].decode(), sim._stub_lines(module, stubs))
        assert a.shingles == b.shingles and a.shingles
    # The untouched stub itself leaves nothing to compare.
    stub = stubs["exercises/follower.py"]
    assert not sim.normalise(stub, sim._stub_lines("exercises/follower.py", stubs)).shingles


@pytest.mark.spark
def test_copies_are_listed_and_independent_answers_are_not(spark, tmp_path):
    subs = tmp_path / "subs"
    run = full_runs()[:1]
    for i in range(INDEPENDENT):
        synth.write_submission(subs, f"s{i:02d}", run, version=2, files=styles.student_files(100 + i))
    # bea hands in ann's answers with every name changed; sol hands in solutions/ the same way.
    ann = styles.student_files(7)
    synth.write_submission(subs, "ann", run, version=2, files=ann)
    synth.write_submission(subs, "bea", run, version=2, files=styles.renamed(ann, seed=3))
    reference = {m: t.encode() for m, t in sim.reference_files().items()}
    synth.write_submission(subs, "sol", run, version=2, files=styles.renamed(reference, seed=5))
    args = job.build_parser().parse_args([str(subs), "--out", str(tmp_path / "out"), "--max-file-mb", "1", "--trust-traces"])
    assert job.run(args, spark) == 0

    with open(tmp_path / "out" / "similarity.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    pairs = {(r["scope"], r["student_a"], r["student_b"]) for r in rows}
    assert (sim.WHOLE, "ann", "bea") in pairs and (sim.WHOLE, "sol", sim.SOLUTIONS) in pairs
    assert ("exercises/follower.py", "ann", "bea") in pairs  # the one exercise file large enough on its own
    independent = {(a, b) for _, a, b in pairs if a.startswith("s") and b.startswith("s") and "sol" not in (a, b)}
    assert len(independent) <= 1, rows
    whole = next(r for r in rows if (r["scope"], r["student_a"]) == (sim.WHOLE, "ann"))
    assert float(whole["similarity"]) == 1.0 and "exercises/follower.py:" in whole["matching_lines_a"]

    html = (tmp_path / "out" / "report.html").read_text()
    section = html.split("<h2>Similar submissions</h2>")[1]
    assert "<details><summary>ann and bea: whole submission, 1.00 (" in section  # folded until opened
    # Side by side: bea's line is ann's with other names.
    assert "<pre>    end = log.log_end</pre>" in section or "log.generation_at" in section
    assert "Not gradable" not in section and "solutions/" in section


@pytest.mark.spark
def test_the_candidates_are_those_of_spark_mls_similarity_join(spark, tmp_path):
    """The join on MinHash values alone finds, with the same similarities, every pair of one scope that MinHashLSH's
    own approxSimilarityJoin finds below the distance threshold (a copy included, so that the list is not empty)."""
    from pyspark.ml.feature import MinHashLSH
    from pyspark.sql import functions as F

    from lab.grade.inputs.storage import LocalStorage

    files = {f"s{i:02d}": {k: v.decode() for k, v in styles.student_files(300 + i).items()} for i in range(12)}
    files["copy"] = {k: v.decode() for k, v in styles.renamed(styles.student_files(300)).items()}
    files[sim.SOLUTIONS] = sim.reference_files()
    docs, _ = sim.documents(files, sim.handout_stubs())
    ours = sim.candidates(spark, LocalStorage(), docs, str(tmp_path / "docs.libsvm"))

    data = spark.read.format("libsvm").option("numFeatures", str(sim.FEATURES)).load(str(tmp_path / "docs.libsvm"))
    model = MinHashLSH(inputCol="features", outputCol="hashes", numHashTables=sim.HASH_TABLES, seed=sim.SEED).fit(data)
    lowest = min(sim.WHOLE_THRESHOLD, sim.EXERCISE_THRESHOLD)
    theirs = [(r["a"], r["b"], 1.0 - r["distance"]) for r in model.approxSimilarityJoin(
        data, data, 1.0 - lowest + 1e-9, distCol="distance").select(
        F.col("datasetA.label").cast("int").alias("a"), F.col("datasetB.label").cast("int").alias("b"), "distance")
        .filter("a < b").collect() if docs[r["a"]][1] == docs[r["b"]][1]]
    assert sorted(ours) == sorted(theirs)
    assert any({docs[a][0], docs[b][0]} == {"s00", "copy"} and s == 1.0 for a, b, s in ours)
