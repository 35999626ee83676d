"""Tests of the dashboard (the `web` package).

pytest imports this directory as a package named `web` (tests/ itself has no __init__.py), the very name of the
dashboard's package, which this one would hide. Its path therefore ends with the dashboard's own directory, so
that `web.app` and the other modules are the real ones whatever the install (editable or not).
"""

import os

__path__.append(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "web"))
