"""The Spark job: the grade itself (job.py: read the inputs -> run every check -> re-execute -> write the outputs),
its command line (arguments.py), its session (session.py) and JVM (jvm.py, its class archive made once by
warm_jvm.py), its edges (edges.py: loopback, its log, an interrupted grade), a standalone cluster to practise on
(standalone.py), the events' schema (schema.py) and parsing (parse.py), the checks of the traces (trace_checks.py,
their SQL text sql.py), and the re-execution of a class over the executors (reexec.py, each task a
lab.grade.sandbox.one_submission).

It may import every other room of the grader; none imports it."""
