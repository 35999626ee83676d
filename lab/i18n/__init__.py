"""The lab's words in its readers' languages: English is the source; the Spanish and Chinese gettext catalogues
(lab/i18n/locale/LANG/LC_MESSAGES/messages.po) are read at run time with Babel, so nothing is compiled.

A sentence is made once, in English, as a `Text`: a str (so English callers and tests see plain English) that
also keeps its catalogue key and values, so that `localize(text, lang)` can say it later in any language.
Values (numbers, node names, payloads, digests) are never translated; a value that is itself a Text is.
A `Reason` of the lab (lab.core.reasons) is said by its kind: its translation is the catalogue's entry of context
"because" keyed by that kind, never by its English sentence; a reason whose words follow its values has a whole
sentence per variant (lab.core.reasons: a count of one, several nodes), each its own kind. Numbers and lists of nodes are written as the reader's locale writes them (Babel's CLDR data).
"""

from __future__ import annotations

import io
import os
import re
import threading
import unicodedata
from pathlib import Path

from lab.core.events import COUNTED_AS
from lab.core.reasons import PHRASES, REASONS, WORDS, Reason, Reasons

SOURCE = "en"
LANGUAGES = {"en": "English", "es": "Español", "zh": "中文"}  # each named in its own language
PSEUDO = "xx"  # every msgid accented and bracketed: text that skipped the catalogue stands out (tests, translators)
LOCALE_DIR = Path(__file__).with_name("locale")
DOMAIN = "messages"
SEPARATORS = {"zh": {"; ": "；", ", ": "，", " ": ""}}  # how a list of sentences is joined, where it differs from
# English (Chinese sentences follow one another without a space)
_CJK = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"
UNSPACED = {"zh": re.compile(rf"(?<=[{_CJK}]) (?=[{_CJK}“‘])|(?<=[”’]) (?=[{_CJK}])")}  # no space between two
# words: the one a template keeps beside a value (there for "A" or "e4") goes when the value is a word ("预期 {spec}
# 的" with 所有节点) or a quotation (写入“e1”: Chinese quotes take no space)
_FIELD = re.compile(r"\{(\w+)(?:[!:][^{}]*)?\}")
_LATIN_BESIDE_CJK = re.compile(r"(?<=[A-Za-z0-9])(?=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9])")
_BARE_FIELD = re.compile(r"\{(\w+)\}")
RAW_NUMBERS = frozenset({"seed", "port", "pid", "code", "line", "year", "status"})  # identifiers, not
# quantities: written as they are ("seed 12345", "exit code 73"), never grouped as the locale groups a count


class Text(str):
    """A catalogue sentence with its values; reads as its English self."""

    def __new__(cls, msgid: str, args: dict | None = None, context: str | None = None):
        self = super().__new__(cls, msgid.format(**args) if args else msgid)
        self.msgid, self.args, self.context = msgid, args or {}, context
        return self

    def say(self, lang: str) -> str:
        return fill(gettext(lang, self.msgid, self.context), self.args, lang)

    def __reduce__(self):  # copies and pickles keep the catalogue key
        return (type(self), (self.msgid, self.args, self.context))


class NodeList(Text):
    """Node names as a sentence says them: "A", "A and B", "A, B and C"; in Spanish "A, B y C", in Chinese
    "A、B和C" (Babel's CLDR lists)."""

    def __new__(cls, nodes, english: str | None = None):
        nodes = [str(n) for n in nodes]
        if english is None:  # (a script's command keeps its own spelling in English: `A,B`)
            english = " and ".join([", ".join(nodes[:-1]), nodes[-1]] if len(nodes) > 1 else nodes)
        self = str.__new__(cls, english)
        self.msgid, self.args, self.context, self.nodes = None, {}, None, nodes
        return self

    def say(self, lang: str) -> str:
        from babel.lists import format_list

        if lang not in LANGUAGES:
            return pseudo(str(self)) if lang == PSEUDO else str(self)
        said = format_list(self.nodes, locale=lang)
        return _LATIN_BESIDE_CJK.sub(" ", said) if lang == "zh" else said  # "A、B 和 C": a space between a name
        # and a Chinese word, as every sentence of the catalogue writes it

    def __reduce__(self):
        return (type(self), (self.nodes, str(self)))


class Listed(Text):
    """Items (Texts or values) as a list in the reader's language: "kill 2, pause 1" in English; in Spanish the
    last joined by "y" (Babel's CLDR list); in Chinese by 、, as a list of figures is written."""

    def __new__(cls, items):
        items = list(items)
        self = str.__new__(cls, ", ".join(str(item) for item in items))
        self.msgid, self.args, self.context, self.items = None, {}, None, items
        return self

    def say(self, lang: str) -> str:
        said = [str(localize(item, lang)) for item in self.items]
        if lang == "zh":
            return "、".join(said)
        if lang not in LANGUAGES or lang == SOURCE or len(said) < 2:
            return ", ".join(said)
        from babel.lists import format_list

        return format_list(said, locale=lang)

    def __reduce__(self):
        return (type(self), (self.items,))


class Quoted(Text):
    """A value (a payload) quoted as the reader's language quotes: “e1” in English and Chinese, «e1» in Spanish."""

    MARKS = {"es": ("«", "»")}

    def __new__(cls, value):
        self = str.__new__(cls, f"“{value}”")
        self.msgid, self.args, self.context, self.value = None, {}, None, str(value)
        return self

    def say(self, lang: str) -> str:
        left, right = self.MARKS.get(lang, ("“", "”"))
        return f"{left}{self.value}{right}"

    def __reduce__(self):
        return (type(self), (self.value,))


def fill(template: str, args: dict, lang: str) -> str:
    """A translated template with its values, each said in `lang`: a Text translated, a count written as the
    locale writes numbers (23.181 in Spanish), any other value as it is."""
    if not args:
        return template
    bare = set(_BARE_FIELD.findall(template))
    said = template.format(**{k: number(v, lang) if k in bare and k not in RAW_NUMBERS else localize(v, lang)
                              for k, v in args.items()})
    return UNSPACED[lang].sub("", said) if lang in UNSPACED else said


def number(value, lang: str):
    """A count or a quantity as `lang` writes it (Babel: 23.181 and 0,5 in Spanish); anything else localized."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return localize(value, lang)
    if lang not in LANGUAGES or lang == SOURCE:
        return f"{value:g}" if isinstance(value, float) else value
    from babel.numbers import format_decimal

    return format_decimal(value, locale=lang)


class Joined(Text):
    """Texts (or values) joined by a separator, each said in the language."""

    def __new__(cls, parts, sep: str = "; "):
        self = str.__new__(cls, sep.join(parts))
        self.msgid, self.args, self.context, self.parts, self.sep = None, {}, None, list(parts), sep
        return self

    def say(self, lang: str) -> str:
        sep = SEPARATORS.get(lang, {}).get(self.sep, self.sep)
        return sep.join(localize(p, lang) for p in self.parts)

    def __reduce__(self):
        return (type(self), (self.parts, self.sep))


class Counted(Text):
    """A sentence whose words follow a count, gettext's ngettext: in English the singular when `n` is 1, else the
    plural; in a language, the form its plural rule picks for `n` (the catalogue's Plural-Forms: Spanish has two,
    Chinese one). The catalogue keys it by its singular."""

    def __new__(cls, singular: str, plural: str, n, args: dict | None = None):
        args = args or {}
        self = str.__new__(cls, (singular if n == 1 else plural).format(**args))
        self.msgid, self.plural, self.n, self.args, self.context = singular, plural, n, args, None
        return self

    def say(self, lang: str) -> str:
        if lang == PSEUDO:
            return fill(pseudo(self.msgid if self.n == 1 else self.plural), self.args, lang)
        if lang not in LANGUAGES or lang == SOURCE:
            return str(self)
        return fill(catalogue(lang).ngettext(self.msgid, self.plural, self.n), self.args, lang)

    def __reduce__(self):
        return (type(self), (self.msgid, self.plural, self.n, self.args))


def counted(singular: str, plural: str, n, /, **args) -> Counted:
    """A sentence of the catalogue whose words follow the count `n` (`counted` marks it for extraction, with both
    its forms): `counted("{count} event", "{count} events", n, count=n)`."""
    return Counted(singular, plural, n, args)


def complaint(prog: str, text, lang: str) -> str:
    """A command's error line, "hwm-lab simulate: ...": the program's name, then `text` in `lang`, after the colon
    that language writes (full-width in Chinese, as argparse's own errors are said there)."""
    return f"{prog}{'：' if lang == 'zh' else ': '}{localize(text, lang)}"


def say(msgid: str, /, **args) -> Text:
    """A sentence of the catalogue (`say` marks it for extraction): English now, any language later."""
    return Text(msgid, args)


def word(context: str, msgid: str) -> Text:
    """A word that means one thing in one place (`context`): a node's state, a scenario's step, ..."""
    return Text(msgid, None, context)


SPOKEN = (Text, Reason, Reasons)  # what localize says in a language (anything else is a value)
REASON = "because"  # the catalogue's context of the reasons (lab.core.reasons), keyed by kind


def localize(value, lang: str | None):
    """`value` in `lang` if it is a Text or a Reason; any other value unchanged."""
    if not lang or lang == SOURCE:
        return value
    if isinstance(value, Text):
        return value.say(lang)
    if isinstance(value, Reason):
        return say_reason(value, lang)
    if isinstance(value, Reasons):
        sep = "、" if lang == "zh" and value.listed else SEPARATORS.get(lang, {}).get(value.sep, value.sep)
        return sep.join(str(localize(item, lang)) for item in value.items)
    return value


def say_reason(reason: Reason, lang: str) -> str:
    """A Reason in `lang`: the translation of its kind, formatted with its values (each said in `lang` too)."""
    template = catalogue(lang).messages.get((REASON, reason.kind))
    if template is None:
        return str(reason)
    return fill(template, {k: _value(k, v) for k, v in reason.values.items()}, lang)


def _value(field: str, value):
    """A reason's value as a room says it: a list of nodes as a sentence, a word of the lab (WORDS) or a fixed phrase
    (PHRASES) from the catalogue, any other value as it is."""
    if isinstance(value, (list, tuple)):
        return node_list(value)
    if field in WORDS and value in WORDS[field]:
        return word(field, value)
    if field in PHRASES and value in PHRASES[field]:
        return Text(value)
    return value


def node_list(nodes):
    """Node names as a sentence says them ("A", "A and B", "A, B and C", "no node"), in any language."""
    nodes = [str(n) for n in nodes]
    if not nodes:
        return say("no node")
    return nodes[0] if len(nodes) == 1 else NodeList(nodes)


def source_text(context: str | None, msgid: str) -> str:
    """The English a catalogue entry translates: a reason's template (its msgid is its kind), else the msgid."""
    return REASONS.get(msgid, msgid) if context == REASON else msgid


def supported(lang: str | None) -> str | None:
    """The language code for `es`, `es-AR`, `zh_CN.UTF-8`, ... if the lab speaks it, else None."""
    if not lang:
        return None
    code = re.split(r"[-_.@]", lang.strip().lower(), maxsplit=1)[0]
    return code if code in LANGUAGES or code == PSEUDO else None


def from_environment(environ=None) -> str:
    """The language of a command line: LANGUAGE, LC_ALL, LC_MESSAGES, then LANG (gettext's order)."""
    environ = os.environ if environ is None else environ
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(var)
        if not value:
            continue
        for item in value.split(":") if var == "LANGUAGE" else [value]:
            if item in ("C", "POSIX") or item.startswith("C."):
                return SOURCE
            found = supported(item)
            if found:
                return found
        return SOURCE  # the first variable set decides, as for gettext
    return SOURCE


def lang_option(parser) -> None:
    """--lang on a command's argparse parser: the language it speaks (else LANGUAGE, LC_ALL, LC_MESSAGES or LANG)."""
    parser.add_argument("--lang", choices=list(LANGUAGES), default=None,
                        help="language of what the command prints: en, es or zh (default: from LANGUAGE, LC_ALL, "
                             "LC_MESSAGES or LANG)")


def lang_of(args) -> str:
    """The language a command's parsed arguments ask for, else the environment's."""
    return getattr(args, "lang", None) or from_environment()


# ---- catalogues ---------------------------------------------------------------------------------------------

_lock = threading.RLock()
_loaded: dict[str, "Catalogue"] = {}


class Catalogue:
    """One language's messages: {(context, msgid): msgstr} for lookups, the Babel catalogue for its metadata,
    and gettext translations for Flask-Babel and Jinja."""

    def __init__(self, lang: str, catalog):
        self.lang = lang
        self.catalog = catalog
        self.messages = {(m.context, m.id): m.string for m in catalog
                         if m.id and isinstance(m.id, str) and m.string and not m.fuzzy}
        # the sentences whose words follow a count (Counted), by their singular: each of the language's forms
        self.plurals = {(m.context, m.id[0]): tuple(m.string) for m in catalog
                        if m.id and isinstance(m.id, tuple) and m.string and all(m.string) and not m.fuzzy}
        self._gnu = None
        self._index = None

    def ngettext(self, singular: str, plural: str, n) -> str:
        """The form of a Counted sentence for `n` (English, as the source says it, where it is not translated)."""
        forms = self.plurals.get((None, singular))
        if forms is None:
            return singular if n == 1 else plural
        return forms[min(self.plural_index(n), len(forms) - 1)]

    def plural_index(self, n) -> int:
        """Which of the language's forms `n` takes (its Plural-Forms expression, as gettext evaluates it)."""
        if self._index is None:
            import gettext

            self._index = gettext.c2py(self.catalog.plural_expr)
        return self._index(int(n)) if float(n).is_integer() else self._index(2)  # (a fraction: the plural)

    def entries(self):
        """(context, English, translation) for every translated sentence, each form of a Counted one beside its
        English form."""
        for (context, msgid), said in self.messages.items():
            yield context, source_text(context, msgid), said
        for m in self.catalog:
            forms = self.plurals.get((m.context, m.id[0])) if isinstance(m.id, tuple) else None
            for k, said in enumerate(forms or ()):  # (one form, as Chinese has: it says the plural's English)
                yield m.context, m.id[0] if k == 0 and len(forms) > 1 else m.id[1], said

    def gnu(self):
        if self._gnu is None:
            from babel.messages.mofile import write_mo
            from babel.support import Translations

            buffer = io.BytesIO()
            write_mo(buffer, self.catalog)
            buffer.seek(0)
            self._gnu = Translations(buffer, domain=DOMAIN)
        return self._gnu


def po_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def catalogue(lang: str) -> Catalogue:
    with _lock:
        found = _loaded.get(lang)
        if found is None:
            found = _loaded[lang] = _load(lang)
        return found


def _load(lang: str) -> Catalogue:
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po

    if lang == PSEUDO:
        source = catalogue("es").catalog
        catalog = Catalog(locale="en", domain=DOMAIN)
        for m in source:
            if isinstance(m.id, tuple):
                catalog.add(m.id, tuple(pseudo(form) for form in m.id), locations=m.locations, context=m.context)
            elif m.id:
                catalog.add(m.id, pseudo(source_text(m.context, m.id)), locations=m.locations, context=m.context)
        return Catalogue(lang, catalog)
    if lang == SOURCE:
        return Catalogue(lang, Catalog(locale="en", domain=DOMAIN))
    with open(po_path(lang), "rb") as f:
        return Catalogue(lang, read_po(f, locale=lang, domain=DOMAIN))


def gettext(lang: str, msgid: str, context: str | None = None) -> str:
    if lang == SOURCE or not lang:
        return msgid
    return catalogue(lang).messages.get((context, msgid), msgid)


EVENT = "event"  # the catalogue's context of an event kind's name (lab.core.events.COUNTED_AS)


def event_names(lang: str) -> dict[str, str]:
    """Every event kind's name in `lang` ("replication requests sent"), for the page's feed to count what a frame
    left out."""
    return {kind: gettext(lang, name, EVENT) for kind, name in COUNTED_AS.items()}


def for_page(lang: str) -> dict[str, str]:
    """The messages the page's script builds (those whose source is a .js file), msgid -> translation."""
    if lang == SOURCE:
        return {}
    cat = catalogue(lang)
    return {m.id: cat.messages[(None, m.id)] for m in cat.catalog
            if isinstance(m.id, str) and (None, m.id) in cat.messages and m.context is None
            and any(path.endswith(".js") for path, _ in m.locations)}


def plurals_for_page(lang: str) -> dict:
    """The Counted sentences the page's script builds: {"forms": singular -> the language's forms, "nplurals"}; the
    page picks a form as gettext does for Spanish and English (one when n is 1) and takes the only one in Chinese."""
    cat = catalogue(lang if lang in LANGUAGES or lang == PSEUDO else SOURCE)
    forms = {m.id[0]: list(cat.plurals[(None, m.id[0])]) for m in cat.catalog
             if isinstance(m.id, tuple) and (None, m.id[0]) in cat.plurals
             and any(path.endswith(".js") for path, _ in m.locations)}
    return {"forms": forms, "nplurals": cat.catalog.num_plurals if lang != SOURCE else 2}


_ACCENTED = str.maketrans("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                          "ȧƀƈḓḗƒɠħīĵķŀḿƞǿƥɋřşŧŭṽẇẋẏẑȦƁƇḒḖƑƓĦĪĴĶĿḾȠǾƤɊŘŞŦŬṼẆẊẎẐ")


def pseudo(msgid: str) -> str:
    """The pseudo-language: letters accented, placeholders kept, the whole bracketed."""
    out, last = [], 0
    for m in _FIELD.finditer(msgid):
        out.append(msgid[last:m.start()].translate(_ACCENTED))
        out.append(m.group(0))
        last = m.end()
    out.append(msgid[last:].translate(_ACCENTED))
    return "⟦" + "".join(out) + "⟧"


def columns(text: str) -> int:
    """How many columns a terminal gives `text` (a CJK character takes two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def fields(template: str) -> set[str]:
    """The names of a template's placeholders ({node}, {ms:g}, ...)."""
    return set(_FIELD.findall(template))
