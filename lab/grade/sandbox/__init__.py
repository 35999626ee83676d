"""What runs or talks to a student's code: the two sandboxes of one submission (bubblewrap.py: their limits, views
and commands; seccomp.py, cgroups.py, privileges.py), joined by a socket (pair.py): the harness's side
(harness_box.py, which calls the student's functions through student_calls.py and runs the function_probes.py)
and the student's process (student_box.py), both speaking wire.py; one submission's re-execution on an executor
(one_submission.py); and the proof that the sandbox holds (proof.py, with the escape attempts of escapes.py).

It may import the inputs (seeds, storage), never the Spark job nor the outputs. The student's process sees this
file: it imports nothing."""
