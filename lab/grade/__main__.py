"""`python -m lab.grade SUBMISSIONS --out DIR [--master URL] [--rubric FILE]`."""

import sys

from lab.grade.spark.job import main

sys.exit(main())
