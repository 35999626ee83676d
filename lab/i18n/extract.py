"""Every msgid of the lab, read from the sources with Babel's extractors; `python -m lab.i18n.extract` brings the
Spanish and Chinese catalogues up to date with them (new messages arrive untranslated, stale ones go).

Marked messages: `say("...")`, `phrase("...")`, `word(context, "...")` and `counted("...", "...", n)` in Python,
`t("...")` and `tn("...", "...", n)` in web/static/text.js, `_("...")` in the Jinja templates, the scenario scripts' titles, descriptions and steps, and the
reasons declared in lab/core/reasons.py (context "because", keyed by kind: rewording their English changes no key),
the event kinds' names (lab/core/events.py, context "event"),
and a counterexample's steps that move a message (lab.i18n.steps.DELIVERIES).
"""

from __future__ import annotations

import io
import os
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
            "pgettext": ((1, "c"), 2), "counted": (1, 2), "tn": (1, 2)}  # counted, tn: a singular and a plural


def extract(root: Path = ROOT):
    """A Babel catalogue of every message the sources under `root` mark (no translations), in the catalogues' order:
    by the file that says it first, then as that file says them (see `place`)."""
    from babel.messages.catalog import Catalog
    from babel.messages.extract import extract_from_dir

    catalog = Catalog(domain=DOMAIN, project="HWM Lab", msgid_bugs_address="", charset="utf-8")
    for folder, method_map in SOURCES.items():
        base = root / folder
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
    steps = root / "lab" / "i18n" / "steps.py"
    line = next(k for k, text in enumerate(steps.read_text().splitlines(), 1) if text.startswith("DELIVERIES"))
    for template in DELIVERIES.values():  # a counterexample's step that moves a message: one sentence per kind
        catalog.add(template, None, [("lab/i18n/steps.py", line)], flags=("python-brace-format",))
    ordered = Catalog(domain=DOMAIN, project="HWM Lab", msgid_bugs_address="", charset="utf-8")
    for message in sorted((m for m in catalog if m.id), key=place):  # (sorted() keeps ties in extraction order)
        ordered[message.id] = message
    return ordered


def place(message) -> tuple[str, int]:
    """Where an entry stands in a catalogue: the first file that says it, then its line there (declarations read
    from a module, with no line, in their order of declaration). Lines order the entries but are not written: a
    line added above a message moves no entry and rewrites no reference (gettext's --add-location=file)."""
    return min((path, line if isinstance(line, int) else 0) for path, line in message.locations)


WIDTH = 116  # the catalogues' lines, as a translator's editor shows them


def write(catalog) -> bytes:
    """A catalogue as its .po file: entries in the template's order, wrapped at WIDTH, file names without lines."""
    from babel.messages.pofile import write_po

    buffer = io.BytesIO()
    write_po(buffer, catalog, width=WIDTH, include_lineno=False, ignore_obsolete=True)
    return buffer.getvalue()


def merge(template, lang: str, text: bytes):
    """`lang`'s catalogue (the bytes of its .po) brought up to `template`: an entry the sources still say keeps its
    translation and comments; a new one arrives untranslated, or marked fuzzy with the translation of the entry it
    most resembles, as msgmerge does, so a reworded sentence is edited, not retyped (the file's diff shows the old
    msgid beside the new, in the same place); an entry no source says goes. The header keeps its dates: nothing changes where no source did."""
    catalog = read(lang, text)
    catalog.update(template, no_fuzzy_matching=False, update_creation_date=False)
    catalog.obsolete.clear()
    for message in catalog:  # flags are the sources' (Babel would keep a flag no source gives any more)
        if message.id:
            message.flags = set(template.get(message.id, message.context).flags) | (message.flags & {"fuzzy"})
    catalog.msgid_bugs_address = ""
    catalog.last_translator = catalog.language_team = "HWM Lab"
    return catalog


def update(root: Path = ROOT, template=None) -> dict[str, dict[str, int]]:
    """Merge the sources' messages into each language's .po file, rewriting a file only when it changes (written
    aside, then put in place); answer per language its counts: messages, untranslated, fuzzy, new, gone."""
    template = extract(root) if template is None else template
    counts = {}
    for lang in LANGUAGES:
        if lang == SOURCE:
            continue
        path = po_path(lang)
        before = path.read_bytes()
        catalog = merge(template, lang, before)
        after = write(catalog)
        if after != before:
            aside = path.with_name(path.name + ".new")
            aside.write_bytes(after)
            os.replace(aside, path)
        old = {(m.context, m.id) for m in read(lang, before) if m.id}
        new = {(m.context, m.id) for m in catalog if m.id}
        counts[lang] = {"messages": len(new), "untranslated": sum(1 for m in catalog if m.id and not translated(m)),
                        "fuzzy": sum(1 for m in catalog if m.id and m.fuzzy), "new": len(new - old),
                        "gone": len(old - new)}
    return counts


def translated(message) -> bool:
    """Whether a message has its translation (each of its forms, for a Counted one)."""
    return all(message.string) if isinstance(message.string, (tuple, list)) else bool(message.string)


def read(lang: str, text: bytes):
    from babel.messages.pofile import read_po

    return read_po(io.BytesIO(text), locale=lang, domain=DOMAIN)


if __name__ == "__main__":
    for lang, n in update().items():
        print(f"{po_path(lang).relative_to(ROOT)}: {n['messages']} messages ({n['new']} new, {n['gone']} gone), "
              f"{n['untranslated']} untranslated, {n['fuzzy']} fuzzy")
    sys.exit(0)
