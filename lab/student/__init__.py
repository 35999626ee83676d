"""The student's side: the exercises' checks and the submission."""
