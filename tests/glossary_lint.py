"""The glossary's lint (lab/i18n/glossary.py declares the terms): how a translation strays from it, found with
patterns over the English and the translation. Only the tests use it: the lab itself reads no English back."""

from __future__ import annotations

import re

from lab.core.config import FSYNC_POLICIES, TRUNCATION_STRATEGIES
from lab.i18n.glossary import GLOSSARY, Term, owner

_NAMES = "|".join(re.escape(w) for w in (*TRUNCATION_STRATEGIES, *FSYNC_POLICIES) if "-" in w)
_CODE = re.compile(r"```.*?```|`[^`]*`|hwm-lab(?: [a-z][\w-]*){0,2}|\{\w+(?:[!:][^{}]*)?\}|%\(\w+\)\w|\w+\([^)]*\)|[\w.-]*_[\w.-]*|"
                   rf"(?a:[\w.-]+(?:/[\w.-]+)+|\w+\.\w+)|--[\w-]+|{_NAMES}", re.DOTALL)


def prose(text: str) -> str:
    """A text without what the glossary does not rule: code, placeholders, calls, identifiers, paths, options and
    the strategies' names."""
    return _CODE.sub(" ", text)


def names(term: Term, english: str) -> bool:
    """Whether an English text names `term`, in any of its forms (entry, entries; truncate, truncated, truncation)."""
    if term.named:
        return re.search(term.named, english, re.IGNORECASE) is not None
    word = re.escape(term.english)
    stem = re.escape(term.english[:-1] if term.english.endswith(("e", "y")) else term.english)
    pattern = rf"\b(?:{word}(?:s|es|d|ed|ted|ing|'s)?|{stem}(?:ies|ied|ed|ing|ion|ions|e|es|ys|y))\b"
    return re.search(pattern, english, re.IGNORECASE) is not None


def has(word: str, text: str) -> bool:
    """A rendering in a text: anywhere, a stem or not, in any letter case."""
    return word.rstrip("*").lower() in text.lower()


def uses(word: str, text: str) -> bool:
    """A banned word in a text: a word in Latin letters as a whole word (its plural too), a stem as a word's start;
    Chinese anywhere."""
    stem = word.endswith("*")
    word = word.rstrip("*").lower()
    if not re.search(r"[\u3000-\u9fff\uff00-\uffef]", word):
        tail = r"\w*" if stem else r"(?:s|es)?(?!\w)"
        return re.search(rf"(?<!\w){re.escape(word)}{tail}", text.lower()) is not None
    return word in text


def strays(lang: str, english: str, said: str) -> list[str]:
    """How a translation strays from the glossary: a term its English names but its rendering missing, a banned
    word, or another term's word where the English names this one (and not that one)."""
    english, said = prose(english), prose(said)
    found = [f"{t.english!r} is never {w!r}" for t in GLOSSARY[lang] for w in t.never if uses(w, said)]
    for term in GLOSSARY[lang]:
        if not names(term, english):
            if term.only and any(uses(r, said) for r in term.renderings()):
                found.append(f"{term.said!r} is {term.english!r} only")
            continue
        if not any(has(r, said) for r in term.renderings()):
            found.append(f"{term.english!r} is {term.said!r}, missing")
        for word in term.not_for:
            if uses(word, said) and not names(owner(lang, word), english):
                found.append(f"{term.english!r} is {term.said!r}, never {word!r} ({owner(lang, word).english})")
    return found


def banned(lang: str, text: str) -> list[tuple[int, str]]:
    """The lines of a translated text (a guide) that use a banned word: (line number, what)."""
    found = []
    for number, line in enumerate(prose_lines(text), 1):
        found += [(number, f"{t.english!r} is never {w!r}: {line.strip()}") for t in GLOSSARY[lang] for w in t.never
                  if uses(w, line)]
    return found


def prose_lines(text: str) -> list[str]:
    """A markdown text's lines, code blocks, code and quoted English (italics) blanked, line numbers kept."""
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL)
    return [prose(re.sub(r"\*[^*\n]+\*", " ", line)) for line in text.splitlines()]
