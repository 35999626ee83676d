"""The Spark grader: grades a whole class's exercise traces in bulk (docs/grading.md).

Importing this package does not import pyspark; only running the job does.
"""
