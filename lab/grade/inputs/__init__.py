"""What a grade reads, before any Spark: where a class is (storage.py: plain paths or Hadoop URIs), each submission
opened safely within limits (archive.py) and read as manifests and traces (submissions.py), the rubric
(rubric.py, its defaults in rubric.toml, its entries' words in rubric_entries.py: a grade's sandbox limits are its
[sandbox] table), and the seeds each student's runs get from the course secret (seeds.py).

It imports nothing of the grader's other rooms."""
