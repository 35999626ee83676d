"""Every msgid of the lab, read from the sources with Babel's extractors; `python -m lab.i18n.extract` brings the
Spanish and Chinese catalogues up to date with them (new messages arrive untranslated, stale ones go).

Marked messages: `say("...")`, `phrase("...")` and `word(context, "...")` in Python, `t("...")` in
web/static/text.js, `_("...")` in the Jinja templates, the scenario scripts' titles, descriptions and steps, and the
reasons declared in lab/core/reasons.py (context "because", keyed by kind: rewording their English changes no key),
the event kinds' names (lab/core/events.py, context "event"),
and a counterexample's steps that move a message (lab.i18n.steps.DELIVERIES).
"""

from __future__ import annotations

import sys
from pathlib import Path

from lab.core.events import COUNTED_AS
from lab.core.reasons import PHRASES, REASONS, WORDS
from lab.i18n import DOMAIN, EVENT, LANGUAGES, REASON, SOURCE, po_path
from lab.i18n.steps import DELIVERIES

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {  # folder -> [(files, extractor)]
    "lab": [("i18n/**.py", "python"), ("student/**.py", "python"), ("commands/exercise.py", "python"), ("commands/simulate.py", "python"),
            ("commands/cluster.py", "python"), ("commands/options.py", "python"),
            ("commands/chaos.py", "python"), ("commands/history.py", "python"), ("commands/parser.py", "lab.commands.helps:extract"),  # every command's help, read from the parser itself
            ("explore/**.py", "python"), ("commands/explore.py", "python"),
            ("sim/scenarios/*.txt", "lab.i18n.scenarios:extract")],
    "web": [("**.py", "python"), ("static/text.js", "javascript"),
            ("templates/**.html", "jinja2.ext:babel_extract")],
}
KEYWORDS = {"say": None, "phrase": None, "word": ((1, "c"), 2), "t": None, "_": None, "gettext": None,
            "pgettext": ((1, "c"), 2)}


def extract():
    """A Babel catalogue of every message the sources mark (no translations)."""
    from babel.messages.catalog import Catalog
    from babel.messages.extract import extract_from_dir

    catalog = Catalog(domain=DOMAIN, project="HWM Lab", msgid_bugs_address="", charset="utf-8")
    for folder, method_map in SOURCES.items():
        base = ROOT / folder
        found = extract_from_dir(str(base), method_map, {}, keywords=KEYWORDS, strip_comment_tags=True)
        for filename, lineno, message, comments, context in found:
            catalog.add(message, None, [(f"{folder}/{filename}", lineno)], auto_comments=comments, context=context)
    for kind in REASONS:  # each variant of a reason is a kind of its own (lab.core.reasons.variant)
        catalog.add(kind, None, [("lab/core/reasons.py", None)], context=REASON)
    for field, words in WORDS.items():  # a reason's words, said with the field's name as their context
        for value in words:
            catalog.add(value, None, [("lab/core/reasons.py", None)], context=field)
    for phrases in PHRASES.values():  # a reason's fixed phrases
        for value in phrases:
            catalog.add(value, None, [("lab/core/reasons.py", None)])
    for name in COUNTED_AS.values():  # each event kind's name, as the dashboard's feed counts it
        catalog.add(name, None, [("lab/core/events.py", None)], context=EVENT)
    steps = ROOT / "lab" / "i18n" / "steps.py"  # (a location's line is a number: Babel sorts them)
    line = next(k for k, text in enumerate(steps.read_text().splitlines(), 1) if text.startswith("DELIVERIES"))
    for template in DELIVERIES.values():  # a counterexample's step that moves a message: one sentence per kind
        catalog.add(template, None, [("lab/i18n/steps.py", line)], flags=("python-brace-format",))
    return catalog


def update() -> dict[str, tuple[int, int]]:
    """Merge the sources' messages into each language's .po file; answer (untranslated, total) per language."""
    from babel.messages.pofile import read_po, write_po

    template = extract()
    counts = {}
    for lang in LANGUAGES:
        if lang == SOURCE:
            continue
        path = po_path(lang)
        with open(path, "rb") as f:
            catalog = read_po(f, locale=lang, domain=DOMAIN)
        dates = catalog.creation_date, catalog.revision_date
        catalog.update(template, no_fuzzy_matching=True)
        catalog.obsolete.clear()
        catalog.creation_date = dates[0]  # no churn in the header
        catalog.revision_date = dates[1] if not isinstance(dates[1], str) else dates[0]
        catalog.msgid_bugs_address = ""
        catalog.last_translator = catalog.language_team = "HWM Lab"
        with open(path, "wb") as f:
            write_po(f, catalog, width=116, sort_by_file=True, include_previous=False)
        missing = sum(1 for m in catalog if m.id and not m.string)
        counts[lang] = (missing, sum(1 for m in catalog if m.id))
    return counts


if __name__ == "__main__":
    for lang, (missing, total) in update().items():
        print(f"{po_path(lang).relative_to(ROOT)}: {total} messages, {missing} untranslated")
    sys.exit(0)
