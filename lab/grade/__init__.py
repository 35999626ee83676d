"""The Spark grader: grades a whole class's exercise traces in bulk (docs/grading.md), in four rooms:

    inputs/    what a grade reads: where a class is (storage), each submission opened safely (archive,
               submissions), the rubric (rubric.py, rubric.toml, rubric_entries.py) and the seeds drawn per student
    sandbox/   what runs or talks to a student's code: the two sandboxes (bubblewrap, seccomp, cgroups, privileges),
               the harness's side and the student's (harness_box, student_box, student_calls, wire), the
               grader's function probes, one submission's re-execution task, and the proof of the sandbox
    outputs/   what a grade writes: report.html and grades.csv (report), feedback and Gradescope's files, LMS files,
               runs to play, similar submissions, the out folder replaced whole, and what a re-grade keeps
    spark/     the Spark job that reads the inputs, runs the sandboxes on the executors and writes the outputs:
               the job, its session and JVM, the events' schema and parsing, the trace checks and their SQL

A room imports only the rooms below it (tests/test_layers.py): inputs nothing of the others; sandbox and outputs
the inputs; spark all three; the entry points here (`python -m lab.grade`, `hwm-lab grade`) the job.
Importing this package does not import pyspark; only running the job does.
"""
