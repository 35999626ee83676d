"""`python -m lab.i18n.extract` is stable: the committed catalogues are what it writes, a second run changes nothing,
and a reworded sentence changes its one entry, in its place, its old translation kept for the translator to edit."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from lab import i18n
from lab.i18n import extract

ROOT = Path(__file__).resolve().parent.parent
TRANSLATED = ("es", "zh")


@pytest.fixture(scope="module")
def template():
    return extract.extract()


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_committed_catalogues_are_what_the_extraction_writes(template, lang):
    """Hand edits out of order or wrapped otherwise would make the next extraction's diff unreadable."""
    committed = i18n.po_path(lang).read_bytes()
    written = extract.write(extract.merge(template, lang, committed))
    changed = [line for line in difflib.unified_diff(committed.decode().splitlines(), written.decode().splitlines(),
                                                     lineterm="", n=0) if line[:1] in "+-"]
    assert changed == [], f"run `python -m lab.i18n.extract`; it would change:\n" + "\n".join(changed[:20])


def test_the_order_is_by_file_then_line_and_no_line_number_is_written(template):
    places = [extract.place(m) for m in template if m.id]
    assert places == sorted(places) and len(places) > 500
    text = i18n.po_path("es").read_text(encoding="utf-8")
    assert "#: web/templates/index.html\n" in text and ".html:" not in text and ".py:" not in text


@pytest.fixture
def sources(tmp_path, monkeypatch):
    """A copy of the sources the extraction reads and of the catalogues it writes."""
    for folder in extract.SOURCES:
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path / "lab" / "i18n" / "locale")
    return tmp_path


def test_twice_changes_nothing_then_one_reworded_message_changes_one_entry(sources):
    before = {lang: i18n.po_path(lang).read_bytes() for lang in TRANSLATED}
    for _ in range(2):
        counts = extract.update(sources)
        assert {lang: i18n.po_path(lang).read_bytes() for lang in TRANSLATED} == before
        assert counts["es"]["new"] == counts["es"]["gone"] == 0 and counts["es"]["messages"] > 500
    assert list(i18n.LOCALE_DIR.glob("*/LC_MESSAGES/*.new")) == []  # (written aside, then put in place)

    page = sources / "web" / "templates" / "index.html"
    text = page.read_text(encoding="utf-8")
    assert text.count("Apply settings") == 1
    page.write_text(text.replace("Apply settings", "Apply these settings"), encoding="utf-8")
    fuzzy = counts["zh"]["fuzzy"]
    counts = extract.update(sources)
    assert counts["es"]["new"] == counts["es"]["gone"] == 1 and counts["zh"]["fuzzy"] == fuzzy + 1
    for lang in TRANSLATED:
        old, new = before[lang].decode().splitlines(), i18n.po_path(lang).read_text(encoding="utf-8").splitlines()
        diff = list(difflib.unified_diff(old, new, lineterm="", n=0))
        hunks = [line for line in diff if line.startswith("@@")]
        removed = [line for line in diff[2:] if line.startswith("-")]
        added = [line for line in diff[2:] if line.startswith("+")]
        assert len(hunks) == 1 and removed == ['-msgid "Apply settings"'], diff
        assert added == ["+#, fuzzy", '+msgid "Apply these settings"'], diff  # its translation, to edit, in place
        translated = extract.read(lang, before[lang]).get("Apply settings").string
        assert f'msgstr "{translated}"' in new[new.index('msgid "Apply these settings"') + 1]
