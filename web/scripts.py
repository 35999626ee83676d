"""The dashboard page's scripts (web/static/), named once for both pages that load them: text.js, a classic script
run first (every sentence the page composes, window.HWM_TEXT), then ES modules that import each other by name
(`import { S } from "hwm/state"`). A page maps each name to its module with an import map: the live page to the
files under /static/ (templates/index.html), a replay in one file to the modules' own text (web/onefile.py,
static/onefile.js). No build step; tests/test_layers.py holds which module may import which."""

from __future__ import annotations

TEXT = "text.js"
# Lowest first, as tests/test_layers.py layers them; the entry, which imports the others, last.
MODULES = ("page", "state", "marks", "socket", "guide", "room", "panels", "feed", "header", "question", "explore",
           "lanes", "flights", "controls", "stage", "board", "frames", "views", "replay", "keys", "dashboard")
ENTRY = "dashboard"
PREFIX = "hwm/"  # the modules' names in an import map: hwm/state is static/state.js
