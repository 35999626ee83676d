"""A Spanish and a Chinese student's commands print no English sentence: simulate (a pass, a failed wait, a
counterexample's replay), exercise list, explore, and the cluster commands' errors. Each runs in the pseudo-language
too, whose every catalogue letter is accented, so that any word that skipped the catalogue stands out; and the ten
lines issue 34 quoted read whole in both languages with the values it showed."""

from __future__ import annotations

import functools
import re
import textwrap

import pytest

from lab import cli, i18n
from lab.core import reasons
from lab.core.reasons import Reason
from lab.i18n import localize
from lab.i18n.scenarios import command_text
from tests.test_i18n import untranslated

LANGS = ("es", "zh", i18n.PSEUDO)

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


@functools.lru_cache(maxsize=None)
def english_only(lang: str) -> frozenset[str]:
    """The words the catalogue's English uses and its `lang` translations never do: said in `lang`, any of them
    is English left over (the glossary's kept terms, HWM, WAL, fsync, log..., appear in both and pass)."""
    messages = i18n.catalogue(lang).messages
    source = set().union(*(_words(i18n.source_text(*key)) for key in messages))
    said = set().union(*(_words(text) for text in messages.values()))
    return frozenset(source - said)


def english(lang: str, text: str) -> list[str]:
    """English words in a text said in `lang`."""
    return [w for w in _WORD.findall(text) if w.lower() in english_only(lang)]


def left_in(lang: str, text: str, *ids: str) -> list[str]:
    """English left in `text`, outside code (`...`), paths, file names, digests and the `ids` given."""
    text = re.sub(r"`[^`]*`|\b\w+(?=\()|\S*/\S*|[\w.-]+\.(?:py|txt|log|json|html)\b|\b[0-9a-f]{16}\b", " ", text)
    for name in ids:
        text = text.replace(name, " ")
    return untranslated(text) if lang == i18n.PSEUDO else english(lang, text)


@pytest.fixture(autouse=True)
def _no_language_from_outside(monkeypatch):
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)


def run(capsys, monkeypatch, *argv: str) -> tuple[int, str]:
    """`hwm-lab ARGV --lang LANG` (the last two words); the pseudo-language, which --lang does not offer, from
    LANGUAGE."""
    argv = list(argv)
    if argv[-1] == i18n.PSEUDO:
        monkeypatch.setenv("LANGUAGE", argv.pop())
        argv.pop()
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("lang", LANGS)
def test_simulate_speaks_the_language_of_lang(lang, capsys, monkeypatch):
    code, out = run(capsys, monkeypatch, "simulate", "s1", "--lang", lang)
    assert code == 0 and len(out.splitlines()) >= 10
    assert left_in(lang, out) == [], out


@pytest.mark.parametrize("lang", LANGS)
def test_a_failed_wait_and_a_usage_error_speak_the_language(lang, capsys, monkeypatch, tmp_path):
    script = tmp_path / "waits.txt"
    script.write_text(textwrap.dedent("""\
        # Waits that time out
        nodes 3

        step "A and B are expected to stop, and do not."
          wait leader
          write e1
          wait stopped A,B
        """), encoding="utf-8")
    code, out = run(capsys, monkeypatch, "simulate", "--script", str(script), "--lang", lang)
    assert code == 1, out
    assert left_in(lang, out, "waits") == [], out
    code, out = run(capsys, monkeypatch, "simulate", "--lang", lang)
    assert code == 2 and left_in(lang, out, "hwm-lab simulate") == [], out


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("argv", [("status",), ("write", "e1"), ("read", "1"), ("kill", "A"), ("down",),
                                  ("up", "--nodes", "9")])
def test_cluster_commands_errors_speak_the_language(lang, argv, capsys, monkeypatch, tmp_path):
    code, out = run(capsys, monkeypatch, *argv, "--dir", str(tmp_path / "none"), "--lang", lang)
    prog = "hwm-lab：" if lang == "zh" else "hwm-lab: "  # (the language's colon after the program's name)
    assert code in (2, 3) and out.startswith(prog), out
    assert left_in(lang, out.removeprefix(prog)) == [], out


@pytest.mark.parametrize("lang", LANGS)
def test_scenario_list_speaks_the_language(lang, capsys, monkeypatch):
    code, out = run(capsys, monkeypatch, "scenario", "list", "--lang", lang)
    assert code == 0 and len(out.splitlines()) >= 8
    assert left_in(lang, out) == [], out


@pytest.mark.parametrize("lang", LANGS)
def test_exercise_list_speaks_the_language(lang, capsys, monkeypatch):
    code, out = run(capsys, monkeypatch, "exercise", "list", "--impl", "solutions", "--lang", lang)
    assert code == 0 and left_in(lang, out) == [], out


ARTICLE = "tests.wrong_variants.ex1_article_formula"  # exercise 1 with the article's n/2 (tests/test_explore.py)


@pytest.fixture(scope="module")
def counterexample(tmp_path_factory):
    """A counterexample the explorer finds for the article's formula on 4 nodes, written once for the module."""
    out = tmp_path_factory.mktemp("found")
    assert cli.main(["explore", "--impl", ARTICLE, "--exercise", "1", "--nodes", "4", "--budget", "25", "--out",
                     str(out), "--json"]) == 1
    return out / "counterexample.txt"


@pytest.mark.parametrize("lang", LANGS)
def test_explore_and_the_replay_of_its_counterexample_speak_the_language(lang, counterexample, capsys, monkeypatch,
                                                                         tmp_path):
    capsys.readouterr()
    code, out = run(capsys, monkeypatch, "explore", "--impl", ARTICLE, "--exercise", "1", "--nodes", "4", "--budget",
                    "25", "--out", str(tmp_path), "--lang", lang)
    assert code == 1 and len(out.splitlines()) >= 5, out
    assert left_in(lang, out, "hwm-lab explore", "hwm-lab simulate --script") == [], out
    code, out = run(capsys, monkeypatch, "simulate", "--script", str(counterexample), "--lang", lang)
    assert code == 1 and len(out.splitlines()) >= 2, out
    assert left_in(lang, out, "counterexample", "hwm-majority") == [], out


# ---- the lines issue 34 quoted, with its values -------------------------------------------------------------

WORST = [  # (what the lab says, Spanish, Chinese)
    (Reason(reasons.WAITED_STOP, seconds=10.0, nodes=["A", "B"]),
     "se esperó 10 s a que A y B se detuvieran por sí solos y no se detuvieron",
     "等了 10 秒，A 和 B 仍未全部自行停止"),
    (Reason(reasons.WAITED_STOP, seconds=10.0, nodes=["A"]),
     "se esperó 10 s a que A se detuviera por sí solo y no se detuvo",
     "等了 10 秒，A 仍未自行停止"),
    (command_text("expect stopped all"),
     "se espera que todos los nodos se hayan detenido", "预期所有节点都已停止"),
    (Reason(reasons.HWM_NOT_HELD, index=1, holders=1, size=2, majority=2),
     "solo 1 índice de coincidencia, de 2, llega al índice 1 (la mayoría es de 2)",
     "2 个匹配索引中只有 1 个达到索引 1（多数是 2 个）"),
    (Reason(reasons.ABOVE_HWM, index=4, hwm=3),
     "no disponible: el índice 4 está por encima de la marca de agua alta 3", "不可用：索引 4 高于高水位标记 3"),
    (Reason(reasons.ACKED_WRITES, count=1),
     "1 escritura con acuse de recibo, y todos los nodos en marcha la tienen", "1 次写入已确认，每个运行中的节点都持有这次写入"),
    (Reason(reasons.REMOVED_ENTRIES, node="A", entries=Reason(reasons.ENTRY_AT, index=4, generation=1),
            reason="conflict"),
     "A borró el índice 4 (generación 1), por conflicto", "A 删除了索引 4（世代 1），原因：冲突"),
    (i18n.say("explore: {states} states, {distinct} distinct, depth {depth}, {rate} states/s, {seconds} s",
              states=23181, distinct=9120, depth=12, rate=4630, seconds=5),
     "explore: 23.181 estados (9.120 distintos), profundidad 12, 4.630 por segundo, 5 s", None),
    (i18n.node_list(["3", "4"]), "3 y 4", "3 和 4"),
    (Reason(reasons.RULE_REFUSED_AT_OR_BELOW, node="C", index=1, hwm=1),
     "C rechazó el índice 1, en su marca de agua alta 1 o por debajo", "C 拒绝了索引 1，而该索引不高于它的高水位标记 1"),
]


@pytest.mark.parametrize("said, spanish, chinese", WORST)
def test_the_lines_the_issue_quoted_read_whole(said, spanish, chinese):
    assert localize(said, "es") == spanish
    if chinese is not None:
        assert localize(said, "zh") == chinese


@pytest.mark.parametrize("lang", LANGS)
def test_the_replay_of_a_counterexample_says_its_steps_and_the_rule_in_the_language(lang, counterexample):
    from lab.core.events import RULE_BROKEN, STEP
    from web.fold import Replay

    replay = Replay(counterexample.parent / "trace")
    said = [localize(text, lang) for e, text in zip(replay.events, replay.texts)
            if e.get("type") in (STEP, RULE_BROKEN)]
    steps = [text for e, text in zip(replay.events, replay.texts) if e.get("type") == STEP]
    assert len(steps) >= 3 and all(localize(text, lang) != str(text) for text in steps)
    assert [line for line in said if left_in(lang, line)] == [], said


def _help(capsys, monkeypatch, *argv: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        run(capsys, monkeypatch, *argv)
    assert stopped.value.code == 0
    return capsys.readouterr().out


def _prose(help_text: str) -> str:
    """A help without what argparse writes of the command line itself: its usage, option names and metavars."""
    text = help_text.split("\n\n", 1)[1]  # (the usage comes first)
    return re.sub(r"(?m)^\s{0,4}(-\S+|\{[^}]*\}|[A-Z_]+\b|[a-z-]+(?=\s{2,}))(?:[ ,]+(-\S+|[A-Z_]+\b|\{[^}]*\}))*", " ",
                  text)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("command", [(), ("simulate",), ("explore",), ("exercise", "check"), ("up",), ("status",),
                                     ("chaos",), ("replay",)])
def test_help_speaks_the_language_of_lang_and_of_the_environment(lang, command, capsys, monkeypatch):
    said = _help(capsys, monkeypatch, *command, "--help", "--lang", lang)
    assert left_in(lang, _prose(said), "hwm-lab", "counterexample", "eventlet", "threading") == [], said
    assert "usage:" not in said and "options:" not in said and ("--lang" in said or not command), said
    if lang == "zh":  # a heading ends as Chinese ends it ("选项："), argparse's own colon replaced
        headings = re.findall(r"(?m)^(\S[^\n]*?)[:：]$", said)
        assert headings and all(f"{h}：" in said and f"{h}:\n" not in said for h in headings), said
    if lang != i18n.PSEUDO:
        monkeypatch.setenv("LANG", {"es": "es_ES.UTF-8", "zh": "zh_CN.UTF-8"}[lang])
        assert _help(capsys, monkeypatch, *command, "--help") == said


def test_a_usage_error_is_said_in_the_language_and_argparse_is_left_as_it_was(capsys, monkeypatch):
    import argparse

    said = argparse._
    code = None
    with pytest.raises(SystemExit) as stopped:
        run(capsys, monkeypatch, "simulate", "s1", "--seed", "x", "--lang", "zh")
    code = stopped.value.code
    err = capsys.readouterr().err
    assert code == 2 and "错误" in err and "参数 --seed：应为整数，而不是 'x'" in err and "int" not in err, err
    assert argparse._ is said
    with pytest.raises(SystemExit):
        run(capsys, monkeypatch, "simulate", "s1", "--seed", "x")
    assert "error: argument --seed: invalid int value: 'x'" in capsys.readouterr().err


@pytest.mark.parametrize("lang, argv, expected", [
    ("es", ("simulate", "s1", "--seed", "x"), "argumento --seed: se esperaba un número entero, no 'x'"),
    ("zh", ("simulate", "s1", "--seed", "x"), "参数 --seed：应为整数，而不是 'x'"),
    ("es", ("exercise", "check", "1", "--limit", "abc"),
     "argumento --limit: escribe el límite en segundos, de 0,01 a 600, no 'abc'"),
    ("zh", ("simulate", "s1", "--limit", "0"), "参数 --limit：请把时限写成 0.01 到 600 之间的秒数，而不是 '0'"),
])
def test_a_bad_number_is_refused_in_the_language_without_a_python_type_name(lang, argv, expected, capsys,
                                                                            monkeypatch):
    with pytest.raises(SystemExit) as stopped:
        run(capsys, monkeypatch, *argv, "--lang", lang)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and expected in err and left_in(lang, err.splitlines()[-1], "hwm-lab") == [], err


@pytest.mark.parametrize("lang, expected", [
    ("en", "hwm-lab simulate: no scenario 'nosuch'; available: d1, f8, k1, k2, l1, n4, r1, s1 and s2"),
    ("es", "hwm-lab simulate: no hay ningún escenario 'nosuch'; los disponibles son: d1, f8, k1, k2, l1, n4, r1, s1 y "
           "s2"),
    ("zh", "hwm-lab simulate：没有场景 'nosuch'；可用的有：d1、f8、k1、k2、l1、n4、r1、s1 和 s2"),
])
def test_a_commands_error_and_its_list_are_written_as_the_language_writes_them(lang, expected, capsys, monkeypatch):
    """The program's name is followed by the language's colon (full-width in Chinese, as argparse's errors there),
    and a list by the language's separators, never English commas in Chinese."""
    code, out = run(capsys, monkeypatch, "simulate", "nosuch", "--lang", lang)
    assert code == 2 and out.strip() == expected, out
    code, out = run(capsys, monkeypatch, "status", "--dir", "no-such-dir", "--lang", lang)
    assert code != 0 and out.startswith("hwm-lab：" if lang == "zh" else "hwm-lab: "), out


@pytest.mark.parametrize("lang", ["es", "zh"])
def test_a_replays_lines_chain_no_colons(lang, counterexample, capsys, monkeypatch):
    """A replay of a counterexample says why it stopped in one sentence: not 'interrumpido: paso 10: se rompió la
    regla hwm-majority: el líder ...' nor '已中止：第 10 步：违反了规则 hwm-majority：...'."""
    code, out = run(capsys, monkeypatch, "simulate", "--script", str(counterexample), "--lang", lang)
    colons = {line: line.count(":") + line.count("：") for line in out.splitlines()}
    assert code == 1 and colons and all(n <= 2 for n in colons.values()), colons
    stopped = [line.strip() for line in out.splitlines() if line.strip().startswith(("ejecución interrumpida", "已中止"))]
    assert stopped == [{"es": "ejecución interrumpida — en el paso 14 se incumplió la regla hwm-majority: el líder C subió su "
                              "marca de agua alta a 1 en la generación 1, pero el índice 1 solo está en los discos de A y D: 2 "
                              "nodos de 4 (la mayoría es de 3)",
                        "zh": "已中止，第 14 步违反了规则 hwm-majority：领导者 C 在世代 1 把高水位标记提高到 1，但索引 1 只在 A 和 D "
                              "的磁盘上，即 4 个节点中的 2 个，而多数是 3 个"}[lang]], out


def test_every_skeletons_hint_is_a_sentence_of_the_catalogue():
    """The hints exercises/*.py raise (NotImplementedError) are the table lab.student.skeletons says them by: an
    unwritten exercise's check prints its hint in the reader's language."""
    import ast
    from pathlib import Path

    from lab.student.skeletons import HINTS

    raised = [node.exc.args[0].value for path in sorted((Path(__file__).parent.parent / "exercises").glob("*.py"))
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
              and getattr(node.exc.func, "id", "") == "NotImplementedError" and node.exc.args]
    assert len(raised) >= 7 and set(raised) == set(HINTS), set(raised) ^ set(HINTS)
    for lang in ("es", "zh"):
        assert all(localize(HINTS[text], lang) != text for text in raised)


@pytest.mark.parametrize("lang, expected", [
    ("es", "todavía sin implementar: ejercicio 1 — devuelve el mayor índice que tienen al menos "
           "len(match_indexes) // 2 + 1 nodos"),
    ("zh", "尚未实现：练习 1 要返回至少被 len(match_indexes) // 2 + 1 个节点持有的最大索引"),
])
def test_an_unwritten_exercises_check_says_its_hint_in_the_language(lang, expected, capsys, monkeypatch):
    code, out = run(capsys, monkeypatch, "exercise", "check", "1", "--impl", "exercises", "--lang", lang)
    assert code != 0 and expected in out and left_in(lang, out, "hwm-lab") == [], out


@pytest.mark.parametrize("lang, expected", [
    ("es", "'generation', 'high-water-mark' y 'leader-epoch'"),
    ("zh", "无效的取值：'nope'（可选的值：'generation'、'high-water-mark'、'leader-epoch'）"),
])
def test_a_bad_choice_lists_the_choices_as_the_language_lists(lang, expected, capsys, monkeypatch):
    with pytest.raises(SystemExit) as stopped:
        run(capsys, monkeypatch, "simulate", "s1", "--truncation", "nope", "--lang", lang)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and expected in err and "'generation', 'high" not in err.replace(expected, ""), err


def test_the_language_before_the_command_is_the_commands_language(capsys, monkeypatch):
    """`hwm-lab --lang zh simulate s1`, as a student may type it, speaks Chinese as `simulate s1 --lang zh` does."""
    first = run(capsys, monkeypatch, "--lang", "zh", "simulate", "s1")
    assert first == run(capsys, monkeypatch, "simulate", "s1", "--lang", "zh") and "通过" in first[1], first
    assert run(capsys, monkeypatch, "--lang", "zh", "simulate", "s1", "--lang", "es")[1].startswith("s1 (generation)")
