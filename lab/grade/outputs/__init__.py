"""What a grade writes: grades.csv and the class's report.html (report.py, its columns there), per-student feedback
and Gradescope's results (feedback.py), the pages' shell (html_page.py), which violations cost points (graded.py),
gradebook files for an LMS (lms.py), failing runs to play in a browser (playable.py), similar submissions
(similarity.py), the output folder replaced whole (outdir.py), and what a re-grade keeps of the previous one
(incremental.py).

It may import the inputs, never the Spark job nor the sandbox."""
