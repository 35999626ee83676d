"""One glossary per language (lab/i18n/glossary.py), and everything translated held to it: each catalogue entry whose
English names a term uses its rendering, never a banned word nor another term's word; no line of a translated guide
uses a banned word; the guides' glossary table is written from it; and each check fails on a seeded stray."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import i18n
from lab.i18n import glossary as declared
from lab.i18n.glossary import GLOSSARY
from tests import glossary_lint as glossary

ROOT = Path(__file__).resolve().parent.parent
TRANSLATED = ("es", "zh")


def catalogue_strays(lang: str, entries=None) -> list[str]:
    """Every translation of the catalogue (each form of a Counted one) that strays, with its English."""
    entries = i18n.catalogue(lang).entries() if entries is None else entries
    return [f"{why}: {english!r} -> {said!r}" for _, english, said in entries
            for why in glossary.strays(lang, english, said)]


def guides(lang: str) -> dict[str, str]:
    """The translated guides (the glossary itself, which names the banned words, aside)."""
    return {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
            for path in sorted((ROOT / "docs" / lang).glob("*.md")) if path.name != "glossary.md"}


def guide_strays(lang: str, texts: dict[str, str]) -> list[str]:
    return [f"{where}:{line}: {why}" for where, text in texts.items() for line, why in glossary.banned(lang, text)]


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_catalogue_entry_follows_the_glossary(lang):
    wrong = catalogue_strays(lang)
    assert wrong == [], f"{len(wrong)} entries stray from lab/i18n/glossary.py:\n" + "\n".join(wrong[:20])


@pytest.mark.parametrize("lang", TRANSLATED)
def test_no_line_of_a_translated_guide_uses_a_banned_word(lang):
    texts = guides(lang)
    assert f"docs/{lang}/student-guide.md" in texts
    wrong = guide_strays(lang, texts)
    assert wrong == [], "\n".join(wrong[:20])


@pytest.mark.parametrize("lang, msgid, stray, why", [
    ("es", "a delay is 0 to {most} ms, not {ms}", "un retraso va de 0 a {most} ms, no {ms}", "'delay' is never 'retraso*'"),
    ("es", "Choices enabled here", "Elecciones posibles aquí", "'choice' is 'opci*', never 'elecci*' (election)"),
    ("es", "replay", "repetición", "'replay' is never 'repetición'"),
    ("zh", "a link joins two different nodes", "一条连接的两端必须是两个不同的节点", "'link' is '链路', missing"),
    ("zh", "every link healed", "所有链路都已恢复", "'heal' is '修复', missing"),
    ("zh", "replay", "重放", "'replay' is never '重放'"),
    ("zh", "{node} is a follower in generation {generation}", "{node} 是世代 {generation} 的跟随者",
     "'follower' is never '跟随者'"),
    ("zh", "not passing yet: exercise {exercises} (submitted as it is, for partial credit; exit code 1)",
     "尚未通过：练习 {exercises}（按现状提交，可得部分分数；退出码 1）", "'提交' is 'committed' only"),
])
def test_a_seeded_forbidden_variant_fails_the_catalogue(lang, msgid, stray, why):
    entries = list(i18n.catalogue(lang).entries())
    k = next(k for k, (_, english, _) in enumerate(entries) if english == msgid)
    assert not glossary.strays(lang, msgid, entries[k][2])  # the catalogue's own passes
    entries[k] = (entries[k][0], msgid, stray)
    wrong = catalogue_strays(lang, entries)
    assert len(wrong) >= 1 and all(msgid in line for line in wrong) and any(why in line for line in wrong), wrong


@pytest.mark.parametrize("lang, line, word", [("es", "La pestaña de la repetición muestra cada paso.", "repetición"),
                                              ("es", "Cada mensaje se retrasa 800 ms.", "retrasa*"),
                                              ("zh", "可以一步步重放这次运行。", "重放"),
                                              ("zh", "在控制接口上可以看到。", "控制接口")])
def test_a_seeded_forbidden_variant_fails_the_guide_on_its_line(lang, line, word):
    texts = guides(lang)
    where = f"docs/{lang}/student-guide.md"
    lines = texts[where].splitlines()
    texts[where] = "\n".join([*lines[:1], line, *lines[1:]])
    assert guide_strays(lang, texts) == [f"{where}:2: {glossary.banned(lang, line)[0][1]}"]
    assert f"is never {word!r}" in guide_strays(lang, texts)[0]
    texts[where] = "\n".join([*lines[:1], f"`{line}`", *lines[1:]])  # (code is not prose)
    assert guide_strays(lang, texts) == []


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_guides_glossary_table_is_written_from_the_glossary(lang):
    text = declared.guide_path(lang).read_text(encoding="utf-8")
    assert declared.BEGIN in text and declared.written(lang, text) == text, "run `python -m lab.i18n.glossary`"
    for term in GLOSSARY[lang]:
        assert f"| {term.english} | {term.said.replace('*', chr(92) + '*')} |" in text


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_issues_terms_each_have_one_rendering(lang):
    terms = {t.english: t for t in GLOSSARY[lang]}
    for english in ("high-water mark", "leader", "follower", "generation", "epoch", "truncate", "replay", "delay",
                    "link", "heal", "resume", "choice", "election", "run", "scenario step", "cluster", "control API", "stale",
                    "linearizable", "session"):
        assert english in terms, english
    assert "committed" in terms if lang == "zh" else "commit" in terms
    assert len(terms) == len(GLOSSARY[lang])  # one row per term
    # the words the issue found used for one idea: one kept, the other banned (or kept for its own term only)
    pairs = {"es": [("delay", "retardo", "retraso*"), ("replay", "reproduc*", "repetición"),
                    ("choice", "opci*", "elecci*")],
             "zh": [("replay", "回放", "重放"), ("control API", "控制 API", "控制接口"), ("link", "链路", "连接"),
                    ("heal", "修复", "恢复"), ("resume", "继续运行", "恢复")]}[lang]
    for english, kept, other in pairs:
        assert terms[english].said == kept and other in (*terms[english].never, *terms[english].not_for), english


SEEDS = {  # what the seed articles write (read from them), recorded in the glossaries' "artículo"/"文章" column
    "es": {"high-water mark": "High Water Mark", "generation": "Generation Clock", "request": "request",
           "majority": "Quorum", "leader": "líder", "follower": "seguidor"},
    "zh": {"high-water mark": "高水位标记", "generation": "时代时钟（Generation Clock）", "leader": "领导者",
           "follower": "追随者", "write-ahead log": "预写日志", "majority": "大多数"},
}


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_glossary_records_the_seeds_rendering_and_why_the_lab_differs(lang):
    terms = {t.english: t for t in GLOSSARY[lang]}
    for english, seed in SEEDS[lang].items():
        assert seed in terms[english].seed, (english, terms[english].seed)
    for t in terms.values():
        seeds = [s.strip().lower() for s in t.seed.split(",")]
        differs = t.seed != "—" and not any(t.said.rstrip("*").lower() in s for s in seeds)
        assert t.why or not differs, f"{t.english}: the lab says {t.said!r}, the seed {t.seed!r}: say why"


def test_the_seeds_terms_are_the_glossarys():
    es = {t.english: t.said for t in GLOSSARY["es"]}
    zh = {t.english: t.said for t in GLOSSARY["zh"]}
    assert es["high-water mark"] == "marca de agua alta" and es["leader"] == "líder" and es["follower"] == "seguidor"
    assert (zh["high-water mark"], zh["leader"], zh["follower"], zh["write-ahead log"], zh["generation"]) == \
        ("高水位标记", "领导者", "追随者", "预写日志", "世代")
    # the English term beside the first use, as the seeds do
    for lang, first_use in (("es", "marca de agua alta (High-Water Mark)"), ("zh", "高水位标记（High-Water Mark）")):
        assert first_use in i18n.gettext(lang, "{node}'s high-water mark: {hwm}")  # the HWM bar's title


@pytest.mark.parametrize("english, term, named", [
    ("the run crashed", "run", True), ("run the grader", "run", False), ("running nodes", "run", False),
    ("a leader steps down", "scenario step", False), ("at step 3", "scenario step", True), ("invalid choice: 'x'", "choice", False),
    ("take another choice", "choice", True), ("heal the cut", "cut", True), ("cut the log at 4", "cut", False),
    ("entries truncated", "truncate", True), ("every link healed", "heal", True), ("delays", "delay", True),
])
def test_a_term_is_named_by_its_english_forms_only(english, term, named):
    assert glossary.names(next(t for t in GLOSSARY["es"] if t.english == term), english) is named
