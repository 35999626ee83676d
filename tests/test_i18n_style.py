"""The Spanish and Chinese read as a teacher of distributed systems would write them: every template that puts a
node's state, a node or a list of nodes, or a count into a sentence reads right with each of its values; each
guide explains where it departs from the seed article at once."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from lab import i18n
from lab.i18n import Text, say, word
from lab.core.reasons import NO_TRUNCATION, REASONS, SEVERAL, WAITED_HWM, WORDS, Reason

ROOT = Path(__file__).resolve().parent.parent
TRANSLATED = ("es", "zh")

# ---- every template with a state, a node list or a count, with each of its values ------------------------------

COUNTS = ("count", "n", "lost", "runs", "events", "warnings", "size", "log_end", "majority", "total", "done", "k",
          "ok", "rate")
VALUES = {  # placeholder -> every kind of value it takes: each state, one node and a list, one and many
    "state": [word("state", s) for s in WORDS["state"]],
    "spec": ["A", "A,B,C", *(word("spec", s) for s in WORDS["spec"])],
    "nodes": ["A", "A, B, C", say("{nodes} and {node}", nodes="A, B", node="C")],
    "votes": ["A", "A, B, C"],
    "exercises": ["4", "1, 4"],
    **{name: [["seg-6"], ["seg-4", "seg-6"]] for name in ("deleted", "missing", "segments")},  # lists of segments
    **{name: [1, 3] for name in COUNTS},
}
SAMPLE = {"node": "B", "leader": "A", "candidate": "C", "follower": "C", "other": "A", "peer": "A", "src": "A",
          "dst": "B", "payload": "e4", "payloads": "e4 e5", "index": 4, "hwm": 3, "generation": 2}

NEVER = {  # forms that must never appear, and why
    "es": [
        (r"\bmatad[oa]s?\b", "the participle of matar as a state ('el nodo B está matado'): muerto"),
        (r"\b[A-G](?:, ?[A-G])+ (?:rechace|rechaza|está|tiene|tenga|es|sea|sirve|sirvió|lee|trunca|truncó|borró)\b",
         "a list of nodes as the subject of a singular verb ('que A,B,C rechace')"),
        (r"\btodos los nodos (?:rechace|rechaza|está|tiene|tenga|es|sea)\b", "'todos' with a singular verb"),
        (r"\b(?:al|el) líder (?:[A-G]\b,|todos\b|el\b|al\b)", "'el líder' before a list or another node spec"),
        (r"(?<![\w.,/])1 (?!s\b)[a-záéíóúñ]+s\b", "one with a plural noun ('1 nodos')"),
        (r"\bse espera ningún\b", "ungrammatical negation ('se espera ningún truncado')"),
        (r"\b(?:a|de) el\b", "'a el', 'de el' (al, del)"),
        (r"\b(?:el|la|los|las) (?:el|la|los|las)\b", "a doubled article"),
        (r"\bla sala lee\b", "word for word ('la sala lee uno de...')"),
        (r"\[[^\],]*\],? (?:que )?(?:empiezan|tienen|son|están)\b", "one item before a plural verb"),
    ],
    "zh": [
        (r"已经(?:已|正在|\S*中)|本来就\S*中", "'already' before a state word that says it again ('已经运行中')"),
        (r"领导者 ?(?:所有节点|领导者|最后被杀死)", "'领导者' before a node spec"),
        (r"[\u4e00-\u9fff][A-G](?![A-Za-z])|(?<![A-Za-z])[A-G][\u4e00-\u9fff]", "a node name glued to a word"),
        (r"\d \d+ 秒", "two numbers in a row"),
        (r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef] [\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]",
         "a space between two Chinese words ('预期 所有节点 的')"),
        (r"\[[^\],]*\]，而?它们", "它们 for a single item"),
        (r"♥ 好", "'♥ 好' for a successful heartbeat (♥ 成功)"),
    ],
}


def forbidden(lang: str, sentence: str) -> list[str]:
    return [why for pattern, why in NEVER[lang] if re.search(pattern, sentence)]


def templates(lang: str) -> list[tuple[str | None, str]]:
    """The catalogue's templates that embed a state, a node list or a count."""
    return sorted((key for key in i18n.catalogue(lang).messages if i18n.fields(i18n.source_text(*key)) & VALUES.keys()),
                  key=lambda k: (k[0] or "", k[1]))


def renderings(lang: str, context: str | None, msgid: str):
    """The template said in `lang` with every combination of its values (others fixed); a reason (its msgid is its
    kind) as a Reason, whose node lists are lists."""
    fields = i18n.fields(i18n.source_text(context, msgid))
    names = sorted(fields & VALUES.keys())
    values = {**VALUES, "nodes": [("A",), ("A", "B", "C")]} if context == i18n.REASON else VALUES
    for combo in itertools.product(*(values[n] for n in names)):
        args = {name: SAMPLE.get(name, 7) for name in fields} | dict(zip(names, combo))
        yield i18n.localize(Reason(msgid, **args), lang) if context == i18n.REASON else Text(msgid, args, context).say(lang)


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_template_with_a_state_a_node_list_or_a_count_reads_right_with_each_value(lang):
    found = templates(lang)
    covered = {i18n.source_text(context, msgid) for context, msgid in found}  # a reason by its English
    assert len(found) >= 40
    assert {"node {node} is {state}", "node {node} is already {state}", "node {node} is {state}, not paused",
            "expect read {index} refused on {spec}", "expect not-truncated on {spec}", "wait leader {spec}",
            REASONS["waited_leader_among_several"], "{count} acknowledged write, held by every running node", "Started a {n}-node cluster",
            "not passing yet: exercise {exercises} (submitted as it is, for partial credit; exit code 1)",
            "{node} is leader of generation {generation} (votes {votes})"} <= covered
    wrong, said = [], 0
    for context, msgid in found:
        for sentence in renderings(lang, context, msgid):
            said += 1
            wrong += [f"{sentence!r}: {why}" for why in forbidden(lang, sentence)]
    assert said > 200
    assert wrong == [], f"{len(wrong)} sentences read wrong in {lang}:\n" + "\n".join(wrong[:20])


@pytest.mark.parametrize("lang, sentence", [
    ("es", "el nodo B está matado"),
    ("es", "se espera que A,B,C rechace leer el índice 4"),
    ("es", "se espera ningún truncado en A"),
    ("es", "1 nodos · sin líder"),
    ("es", "esperar al líder A,B"),
    ("zh", "节点 B 已经运行中"),
    ("zh", "节点 B 已经已被杀死"),
    ("zh", "等待A,B 的 HWM 达到 3 5 秒；没有发生"),
    ("zh", "预期 所有节点 的 HWM 为 3"),
    ("zh", "♥ 好"),
])
def test_the_forms_the_issue_found_are_caught(lang, sentence):
    assert forbidden(lang, sentence)


@pytest.mark.parametrize("lang, template, values, expected", [
    ("es", "node {node} is {state}", {"node": "B", "state": word("state", "killed")}, "el nodo B está muerto"),
    ("es", "node {node} is already {state}", {"node": "B", "state": word("state", "exited")},
     "el nodo B ya está terminado"),
    ("es", "expect read {index} refused on {spec}", {"index": 4, "spec": "A,B,C"},
     "se espera que se rechace la lectura del índice 4 en A,B,C"),
    ("es", "expect not-truncated on {spec}", {"spec": word("spec", "all")},
     "se espera que no haya truncado en todos los nodos"),
    ("es", "{count} acknowledged writes, each held by every running node", {"count": 1},
     "1 escritura con acuse de recibo, y todos los nodos en marcha la tienen"),
    ("es", "{count} acknowledged writes, each held by every running node", {"count": 4},
     "4 escrituras con acuse de recibo, y todos los nodos en marcha las tienen"),
    ("zh", "node {node} is {state}", {"node": "B", "state": word("state", "running")}, "节点 B 正在运行"),
    ("zh", "expect hwm {count} on {spec}", {"count": 3, "spec": word("spec", "all")}, "预期所有节点的 HWM 为 3"),
    ("zh", "expect hwm {count} on {spec}", {"count": 3, "spec": "A,B"}, "预期 A,B 的 HWM 为 3"),
    ("zh", "node {node} is already {state}", {"node": "B", "state": word("state", "killed")}, "节点 B 本来就已被杀死"),
    ("zh", "node {node} is {state}, not running", {"node": "B", "state": word("state", "paused")},
     "节点 B 已暂停，不在运行"),
    ("zh", "{node} served index {index} above its high-water mark {hwm}", {"node": "B", "index": 4, "hwm": 3},
     "B 向客户端返回了索引 4，高于它的高水位标记 3"),
    ("es", REASONS[SEVERAL[WAITED_HWM]], {"seconds": 5, "count": 3, "nodes": ["A", "B"]},
     "se esperó 5 s a que las marcas de agua alta de A y B llegaran a 3 y no llegaron"),
    ("zh", REASONS[SEVERAL[WAITED_HWM]], {"seconds": 5, "count": 3, "nodes": ["A", "B"]},
     "等了 5 秒，A 和 B 的高水位标记仍未都达到 3"),
    ("zh", "{what} ({reason})", {"what": say("index {index}", index=4), "reason": word("reason", "restart-hwm")},
     "索引 4（重启时截断到 HWM）"),
])
def test_states_lists_and_counts_read_as_a_teacher_writes_them(lang, template, values, expected):
    """A template of the catalogue, or a reason's English (said by its kind, as the lab makes it)."""
    kind = {english: kind for kind, english in REASONS.items()}.get(template)
    said = i18n.localize(Reason(kind, **values), lang) if kind else Text(template, values).say(lang)
    assert said == expected


@pytest.mark.parametrize("lang, context, msgid, expected", [
    ("es", i18n.REASON, NO_TRUNCATION, "sin truncado"),
    ("es", None, "the room reads one of {languages}, not {language}",
     "el idioma de la sala debe ser uno de {languages}, no {language}"),
    ("es", None, "viewers can only watch: control actions need the instructor token",
     "los espectadores solo pueden mirar: las acciones de control necesitan el token del profesor"),
    ("es", None, "that was the last step; press back, or start the scenario again",
     "ese fue el último paso; pulsa Atrás o inicia el escenario de nuevo"),
    ("es", None, "▲m match · ▲n next index (the leader's view)",
     "▲m coincidencia · ▲n índice siguiente (según el líder)"),
    ("es", None, "pre-vote ✓", "prevoto ✓"),
    ("zh", None, "♥ ok", "♥ 成功"),
    ("zh", None, "Heartbeats travel quietly; untick to hide them", "心跳消息以淡色显示；取消勾选即可隐藏"),
    ("zh", None, "from node", "读取的节点"),
    ("zh", None, "follow the instructor", "跟随老师"),
])
def test_the_issues_sentences_are_rewritten(lang, context, msgid, expected):
    assert i18n.gettext(lang, msgid, context) == expected


@pytest.mark.parametrize("lang", TRANSLATED)
def test_a_state_has_one_word_on_the_lanes_and_in_sentences(lang):
    """The lane's label and the word inside "node B is {state}" are the same (not 被杀死 here, 已杀死 there)."""
    for state in WORDS["state"]:
        assert i18n.gettext(lang, state) == i18n.gettext(lang, state, "state"), state


INFINITIVE_INSTRUCTIONS = re.compile(r"[;:] (?:pulsar|esperar a que|elegir|indicar|iniciar otro|escribir uno)\b|"
                                     r"\bprimero hay que\b|\by conectarse\b|\(probar\b|^(?:Empezar|leer:)")


def test_spanish_instructions_speak_to_the_student_as_tu():
    """The guide says "pulsa", "elige": so do the messages (keyboard labels and rule names stay infinitives)."""
    assert INFINITIVE_INSTRUCTIONS.search("ese fue el último paso; pulsar atrás o iniciar el escenario de nuevo")
    wrong = [s for s in i18n.catalogue("es").messages.values() if INFINITIVE_INSTRUCTIONS.search(s)]
    assert wrong == []


# ---- where the lab departs from the seed (the glossary itself: tests/test_i18n_glossary.py) ---------------------


GUIDE_FIRST_USE = {  # where the lab departs from the seed in a word the guide uses, the guide says so at once
    "es": ("marca de agua alta", ("Cajitas que piensan", "High Water Mark", "la marca", "watermark")),
    "zh": ("世代", ("时代时钟（Generation Clock）", "术语表")),
}


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_guide_explains_its_departure_from_the_seed_where_it_first_uses_the_word(lang):
    guide = (ROOT / f"docs/{lang}/student-guide.md").read_text(encoding="utf-8")
    first, said = GUIDE_FIRST_USE[lang]
    paragraph = next(p for p in re.split(r"\n\s*\n", guide) if first in p)
    assert [s for s in said if s not in paragraph] == []


# ---- Chinese punctuation: full-width marks, no space around —— or beside a quote --------------------------------

_CJK = r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]"
CHINESE_PUNCTUATION = {
    "space around ——": re.compile(r" ——|—— "),
    "an ASCII comma among Chinese words or node names": re.compile(rf"{_CJK}, |, {_CJK}|(?<![\w\[])[A-G], [A-G](?!\w)"),
    "an ASCII colon before Chinese": re.compile(rf"{_CJK}: |[\w}})]: {_CJK}"),
    "a space beside a Chinese quote": re.compile(rf"{_CJK} [“‘]|[”’] {_CJK}"),
}


def chinese_punctuation(text: str) -> list[str]:
    return [name for name, pattern in CHINESE_PUNCTUATION.items() if pattern.search(text)]


@pytest.mark.parametrize("sentence", ["练习 1：标题（x.py）—— 未通过", "B 是世代 2 的领导者（选票 B, C）", "explore: 找到",
                                      "客户端写入 “e1”"])
def test_the_chinese_punctuation_check_finds_what_the_issue_found(sentence):
    assert chinese_punctuation(sentence)


def test_every_chinese_sentence_uses_full_width_punctuation():
    wrong = [f"{name}: {said}" for _, _, said in i18n.catalogue("zh").entries() for name in chinese_punctuation(said)]
    assert wrong == [], "\n".join(wrong[:20])
