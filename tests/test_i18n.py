"""The lab in its readers' languages: the Spanish and Chinese catalogues are complete (their glossary: test_i18n_glossary);
what the page, the event feed, the guide and a check print comes from the catalogue (a pseudo-language shows any
word that does not); the language is chosen by the browser, `?lang=`, the room and `hwm-lab demo --lang`; and
`hwm-lab exercise check` speaks the language of LANG or --lang."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from lab import i18n
from lab.core.config import FSYNC_POLICIES, TRUNCATION_STRATEGIES
from lab.core import reasons
from lab.core.reasons import ABOVE_HWM, TIMEOUT_MAJORITY, TIMEOUT_MINORITY_LATER, Reason, Reasons, reason_from_record
from lab.i18n import PSEUDO, localize, say
from lab.i18n.scenarios import command_text
from tests.studentcode import StudentCode
from tests.test_mistakes import MISTAKES

ROOT = Path(__file__).resolve().parent.parent
TRANSLATED = ("es", "zh")


@pytest.fixture(scope="module")
def sources():
    from lab.i18n.extract import extract

    return {(m.context, m.id): m for m in extract() if m.id}


def translated(message) -> bool:
    from lab.i18n.extract import translated as has_translation

    return has_translation(message)


def po(lang: str):
    from babel.messages.pofile import read_po

    with open(i18n.po_path(lang), "rb") as f:
        return {(m.context, m.id): m for m in read_po(f, locale=lang) if m.id}


# ---- the catalogues --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_message_of_the_sources_is_translated(sources, lang):
    """Every msgid the sources mark has a translation that is neither empty nor fuzzy, and the catalogue holds
    nothing the sources no longer say (`python -m lab.i18n.extract` brings it up to date)."""
    catalogue = po(lang)
    missing = [key for key in sources if key not in catalogue or not translated(catalogue[key])
               or catalogue[key].fuzzy]
    stale = [key for key in catalogue if key not in sources]
    assert len(sources) > 500
    assert missing == [], f"{len(missing)} messages lack a {lang} translation, e.g. {missing[:5]}"
    assert stale == [], f"{lang}: messages no source says any more: {stale[:5]}"


def test_a_message_without_translation_is_found(sources, tmp_path, monkeypatch):
    """The test above can fail: drop one Spanish translation and it names the message."""
    from babel.messages.pofile import read_po, write_po

    with open(i18n.po_path("es"), "rb") as f:
        catalog = read_po(f, locale="es")
    catalog.get("Apply settings").string = ""
    path = tmp_path / "es" / "LC_MESSAGES" / "messages.po"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as f:
        write_po(f, catalog)
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    with pytest.raises(AssertionError, match="Apply settings"):
        test_every_message_of_the_sources_is_translated(sources, "es")


@pytest.mark.parametrize("lang", TRANSLATED)
def test_translations_keep_every_placeholder_and_no_markup(lang):
    for (context, msgid), m in po(lang).items():
        if isinstance(msgid, tuple):  # a Counted sentence: each form has the plural's placeholders
            assert m.string and all(i18n.fields(f) == i18n.fields(msgid[1]) for f in m.string), (msgid, m.string)
            continue
        assert i18n.fields(m.string) == i18n.fields(i18n.source_text(context, msgid)), (context, msgid, m.string)
        if any(path.endswith(".html") for path, _ in m.locations):  # the template inserts them as they are
            assert not re.search(r'[<>&"]', m.string), (msgid, m.string)


# ---- nothing skips the catalogue: the pseudo-language ----------------------------------------------------------

KEPT = {w.lower() for w in (*TRUNCATION_STRATEGIES, *FSYNC_POLICIES, "HWM", "Lab")}  # names, not words


def untranslated(text: str) -> list[str]:
    """English words left in a text said in the pseudo-language (whose every letter is accented)."""
    words = re.findall(r"[A-Za-z][A-Za-z'-]*[A-Za-z]", re.sub(r"\b[0-9a-f]{16}\b", " ", text))
    return [w for w in words if w.lower() not in KEPT and "_" not in w and not re.fullmatch(r"[a-z]\d*|[A-G]", w)]


def test_untranslated_finds_english_and_passes_the_pseudo_language():
    assert untranslated(localize(say("{node} killed (SIGKILL)", node="A"), PSEUDO)) == []
    assert untranslated("A killed (SIGKILL)") == ["killed", "SIGKILL"]
    assert untranslated(i18n.pseudo("truncation {strategy}").format(strategy="leader-epoch")) == []


class PageText(HTMLParser):
    """The text a page shows and the words it gives assistive technology (title, placeholder, aria-label)."""

    def __init__(self):
        super().__init__()
        self.texts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        for name, value in attrs:
            if name in ("title", "placeholder", "aria-label") and value:
                self.texts.append(value)

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip and data.strip():
            self.texts.append(data.strip())


def test_the_page_in_the_pseudo_language_has_no_untranslated_text(tmp_path):
    from lab.harness.scenario import simulate
    from web.app import create_app

    assert simulate("s1", seed=0, out=tmp_path / "s1").passed
    app = create_app({"ASYNC_MODE": "threading", "AUTOSTART": False, "TESTING": True,
                      "REPLAY_DIR": str(tmp_path / "s1")})
    html = app.test_client().get(f"/?lang={PSEUDO}").get_data(as_text=True)
    page = PageText()
    page.feed(html)
    names = {*i18n.LANGUAGES.values(), "⟦xx⟧"}  # the picker names each language in that language
    left = {text: untranslated(text) for text in page.texts if untranslated(text) and text not in names}
    assert len(page.texts) > 80
    assert left == {"HWM Lab": []} or left == {}, left
    english = PageText()
    english.feed(app.test_client().get("/").get_data(as_text=True))
    assert "Apply settings" in english.texts  # the same check on English finds it


def all_scenario_runs():
    from lab.harness import script as scripts

    for path in sorted(scripts.SCENARIO_DIR.glob("*.txt")):
        for strategy in TRUNCATION_STRATEGIES:
            yield path.stem, strategy


@pytest.fixture(scope="module")
def narrated_runs():
    """Every scenario under every truncation strategy on the simulator, and what the room is told about it."""
    from lab.sim.cluster import SimCluster
    from lab.harness.scenario import SimDriver, Run
    from lab.harness.script import load
    from web.app import guide_for_pages
    from web.narrate import Narrator

    texts = []
    for name, strategy in all_scenario_runs():
        scenario = load(name)
        from dataclasses import replace

        scenario = replace(scenario, truncation=strategy)
        cluster = SimCluster(scenario.nodes, seed=3, truncation=strategy, segment_bytes=scenario.segment_bytes or 4096)
        run = Run(scenario, SimDriver(cluster), seed=3)
        verdict = run.run_all()
        narrator = Narrator()
        texts += [narrator.describe(e) for e in cluster.events]
        state = guide_for_pages({"outcomes": [o.__dict__ for o in verdict.outcomes], "error": verdict.aborted})
        texts += [o["name"] for o in state["outcomes"]] + [o["detail"] for o in state["outcomes"]]
        cluster.close()
    return texts


def test_every_sentence_of_every_scenario_is_in_the_catalogue(narrated_runs):
    """The feed's sentences and the guide's ✓/✗ lines of all seven scenarios under the three strategies,
    including the nodes' refusals and the scripts' findings, said in the pseudo-language."""
    assert len(narrated_runs) > 5000
    left = {}
    for text in narrated_runs:
        said = localize(text, PSEUDO)
        words = untranslated(said)
        if words:
            left[str(text)] = words
    assert left == {}, f"{len(left)} sentences skip the catalogue, e.g. {list(left.items())[:5]}"


def test_every_sentence_of_every_scenario_reads_with_chinese_punctuation(narrated_runs):
    """The same sentences with their values in Chinese: a list of nodes or votes joined as Chinese joins it ("选票 B、C",
    never "B, C"), no ASCII colon, no space around ——."""
    from tests.test_i18n_style import chinese_punctuation

    wrong = {}
    for text in narrated_runs:
        said = str(localize(text, "zh"))
        found = chinese_punctuation(said)
        if found:
            wrong[said] = found
    assert wrong == {}, f"{len(wrong)} Chinese sentences, e.g. {list(wrong.items())[:5]}"


@pytest.mark.parametrize("reason, spanish", [
    (Reason(ABOVE_HWM, index=4, hwm=3), "no disponible: el índice 4 está por encima de la marca de agua alta 3"),
    (Reason(TIMEOUT_MINORITY_LATER, index=4, nodes=["A"], hwm=3),
     "tiempo agotado: el índice 4 está solo en A, no en una mayoría; la marca de agua alta se quedó en 3 (la "
     "escritura todavía puede confirmarse más tarde)"),
    (Reason(TIMEOUT_MAJORITY, index=4, nodes=("A", "B", "C"), count=3, size=5, hwm=3),
     "tiempo agotado: el índice 4 está en A, B y C (3 de 5, una mayoría), y aun así la marca de agua alta se quedó "
     "en 3"),
])
def test_the_nodes_reasons_are_said_by_their_kind(reason, spanish):
    assert localize(reason, "es") == spanish
    assert localize(reason, "en") is reason and reason_from_record(reason.as_record()) == reason


@pytest.mark.parametrize("said, english, spanish", [
    (Reason(reasons.WRITE_NOT_ACKED, seconds="5", why=Reason(reasons.NODE_IS, node="A", state="killed")),
     "timeout: the write was not acknowledged within 5s (node A is killed)",
     "tiempo agotado: la escritura no recibió acuse de recibo en 5 s (el nodo A está muerto)"),
    (Reason(reasons.ACKED_WRITES_MISSING, count=3,
            missing=Reasons(Reason(reasons.LACKS_INDEX, node=n, index=2) for n in "AC")),
     "3 acknowledged writes, and running nodes lack some: A lacks index 2; C lacks index 2",
     "3 escrituras con acuse de recibo, pero a algunos nodos en marcha les faltan: a A le falta el índice 2; a C "
     "le falta el índice 2"),
    (Reason(reasons.CONNECTION_LOST, node="A", error=Reason(reasons.CONNECTION_CLOSED, address="127.0.0.1:43189")),
     "connection lost: node A did not answer (node 127.0.0.1:43189 closed the connection); the write may or may "
     "not be committed", "conexión perdida: el nodo A no respondió (el nodo 127.0.0.1:43189 cerró la conexión); la "
                         "escritura puede estar confirmada o no"),  # the address is data
    (Reason(reasons.FSYNC_FAILED, where="fsync of the write-ahead log", os_error="Input/output error"),
     "fsync failed: fsync of the write-ahead log (Input/output error)",
     "falló el fsync del WAL (error de entrada/salida)"),  # the fixed phrases are said too
    (command_text("expect read 4 refused on all"), "expect read 4 refused on all",
     "se espera que se rechace la lectura del índice 4 en todos los nodos"),  # a script's command, by its words
    (command_text("expect something new"), "expect something new", "expect something new"),  # unknown: as it is
])
def test_sentences_of_the_supervisor_disks_and_scripts_are_said_by_kind(said, english, spanish):
    """What the supervisor, a disk fault or a script says is made with its kind and values (no sentence is read
    back): English as before, and the room's language from the kind."""
    assert str(said) == english and localize(said, "es") == spanish
    if isinstance(said, Reason):
        assert reason_from_record(said.as_record()) == said  # as the control API carries it


# ---- choosing the language --------------------------------------------------------------------------------------


@pytest.mark.parametrize("environ, lang", [
    ({"LANG": "es_ES.UTF-8"}, "es"), ({"LANG": "zh_CN.UTF-8"}, "zh"), ({"LANG": "C.UTF-8"}, "en"),
    ({"LANG": "fr_FR.UTF-8"}, "en"), ({}, "en"), ({"LANGUAGE": "fr:zh", "LANG": "es_ES.UTF-8"}, "zh"),
    ({"LC_ALL": "es_AR.UTF-8", "LANG": "zh_CN.UTF-8"}, "es"), ({"LC_MESSAGES": "zh_TW", "LANG": "C"}, "zh"),
])
def test_the_command_line_language_comes_from_the_environment(environ, lang):
    assert i18n.from_environment(environ) == lang


def make_app(**config):
    from web.app import create_app

    app = create_app({"ASYNC_MODE": "threading", "AUTOSTART": False, "TESTING": True, **config})
    return app, app.extensions["socketio"], app.extensions["hwm_dashboard"]


def page_lang(app, url="/", **headers) -> str:
    html = app.test_client().get(url, headers=headers).get_data(as_text=True)
    return re.search(r'<html lang="([^"]+)"', html).group(1)


def test_the_page_follows_accept_language_then_lang_then_the_room(fake):
    app, socketio, dashboard = make_app(CONTROL_URL=fake.control_url, TOKEN="teach")
    assert page_lang(app) == "en"
    assert page_lang(app, **{"Accept-Language": "es-AR,es;q=0.9,en;q=0.5"}) == "es"
    assert page_lang(app, **{"Accept-Language": "zh-CN,zh;q=0.9"}) == "zh-Hans"
    assert page_lang(app, **{"Accept-Language": "fr-FR,fr;q=0.9"}) == "en"
    assert page_lang(app, "/?lang=zh", **{"Accept-Language": "es"}) == "zh-Hans"
    assert page_lang(app, "/?lang=klingon", **{"Accept-Language": "es"}) == "es"

    watcher = socketio.test_client(app, auth={"lang": "es"})
    teacher = socketio.test_client(app, auth={"token": "teach", "lang": "en"})
    watcher.get_received(), teacher.get_received()
    refused = watcher.emit("control", {"action": "room_lang", "args": {"lang": "zh"}}, callback=True)
    assert refused["ok"] is False and refused["error"].startswith("los espectadores solo pueden mirar")
    bad = teacher.emit("control", {"action": "room_lang", "args": {"lang": "fr"}}, callback=True)
    assert bad["ok"] is False and "not 'fr'" in bad["error"]
    assert teacher.emit("control", {"action": "room_lang", "args": {"lang": "zh"}}, callback=True)["ok"]
    told = [m["args"][0] for m in watcher.get_received() if m["name"] == "room_lang"]
    assert told == [{"lang": "zh"}]  # pages that did not choose their language reload in it
    assert page_lang(app, **{"Accept-Language": "es"}) == "zh-Hans"  # the room's language beats the browser's
    assert page_lang(app, "/?lang=es") == "es"  # a page's own choice beats the room's
    again = socketio.test_client(app)
    hello = [m["args"][0] for m in again.get_received() if m["name"] == "hello"][0]
    assert hello["room_lang"] == "zh"
    for client in (watcher, teacher, again):
        client.disconnect()
    dashboard.stop()


def test_hwm_lab_demo_lang_sets_the_room_language():
    import argparse

    from web import args as arguments
    from web.app import create_app

    parser = argparse.ArgumentParser()
    arguments.register(parser.add_subparsers(dest="command"), lambda a: 0)
    args = parser.parse_args(["demo", "--lang", "es"])
    argv = arguments.to_argv(args)
    assert args.lang == "es" and argv[argv.index("--lang") + 1] == "es"
    with pytest.raises(SystemExit):
        parser.parse_args(["demo", "--lang", "fr"])
    app, _, dashboard = make_app(LANGUAGE="es", REPLAY_DIR=None)
    assert dashboard.room_lang == "es" and page_lang(app, **{"Accept-Language": "en"}) == "es"
    with pytest.raises(ValueError, match="LANGUAGE"):
        create_app({"ASYNC_MODE": "threading", "LANGUAGE": "fr"})


def test_each_page_gets_the_feed_and_the_refusals_in_its_language(fake):
    app, socketio, dashboard = make_app(CONTROL_URL=fake.control_url)
    dashboard.tick()
    pages = {lang: socketio.test_client(app, auth={"lang": lang}) for lang in ("en", "es", "zh")}
    for client in pages.values():
        client.get_received()
    assert pages["en"].emit("control", {"action": "write", "args": {"payload": "e1"}}, callback=True)["ok"]
    fake.run_until(lambda: all(n["hwm"] == 1 for n in fake.sim.status()["nodes"]))
    dashboard.tick()
    feeds = {lang: " | ".join(e["text"] for m in client.get_received() if m["name"] == "frame"
                              for e in m["args"][0]["events"]) for lang, client in pages.items()}
    assert "Client writes “e1” to A" in feeds["en"] and "A's high-water mark 0 → 1: index 1 committed" in feeds["en"]
    assert "El cliente escribe «e1» en A" in feeds["es"] and "marca de agua alta de A 0 → 1: índice 1 confirmado" \
        in feeds["es"] and "Client" not in feeds["es"]
    assert "客户端向 A 写入“e1”" in feeds["zh"] and "A 的高水位标记 0 → 1：索引 1 已提交" in feeds["zh"]
    refused = {lang: client.emit("control", {"action": "read", "args": {"index": 9, "node": "B"}}, callback=True)
               for lang, client in pages.items()}
    assert refused["en"]["error"] == Reason(ABOVE_HWM, index=9, hwm=1)
    assert refused["es"]["error"].startswith("no disponible: el índice 9")
    assert refused["zh"]["error"].startswith("不可用：索引 9")
    nobody = pages["zh"].emit("control", {"action": "kill", "args": {"node": "Q"}}, callback=True)
    assert nobody["error"] == "这个集群中没有节点 'Q'（节点：A、B 和 C）"  # the simulator's reason, its list as theirs
    for client in pages.values():
        client.disconnect()
    dashboard.stop()


# ---- the student's check ----------------------------------------------------------------------------------------


def test_exercise_check_with_the_articles_mistake_speaks_spanish_from_lang(tmp_path):
    """The acceptance case: LANG=es_ES.UTF-8 hwm-lab exercise check 1 with the article's n/2 mistake."""
    mistake = next(m for m in MISTAKES if m.id == "article-majority")
    code = StudentCode(tmp_path)
    code.edit(mistake.file, mistake.old, mistake.new)
    env = {k: v for k, v in code.env().items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    import subprocess
    import sys

    def check(lang_env: dict, *extra: str):
        return subprocess.run([sys.executable, "-m", "lab.cli", "exercise", "check", "1", "--impl", code.name,
                               "--dir", str(tmp_path / "checks"), *extra], cwd=tmp_path,
                              env={**env, **lang_env}, capture_output=True, text=True, timeout=600)

    spanish = check({"LANG": "es_ES.UTF-8"})
    assert spanish.returncode == 1, spanish.stderr
    out = spanish.stdout
    assert "Ejercicio 1: la marca de agua alta a partir de los índices de coincidencia" in out and "— FALLA" in out
    assert "[INCUMPLIDA] high_water_mark: la HWM es el mayor índice que tiene una mayoría (n // 2 + 1): tamaños de " \
           "cluster pares (N4)" in out
    # the call, and what the lab's own count says of its answer (never an answer to compare with)
    assert "high_water_mark([0, 1]) devolvió 1: solo 1 índice de coincidencia, de 2, llega al índice 1 (la " \
           "mayoría es de 2)" in out
    assert "[FALLA] escenario n4 (generation, simulador, semilla 7)" in out and "regla incumplida: se espera HWM 5 en A y B" in out
    assert "3. También corte A -> C." in out
    assert "escenario n4 (generation) en el simulador" in spanish.stderr
    chinese = check({"LANG": "es_ES.UTF-8"}, "--lang", "zh")  # --lang beats the environment
    assert "[未通过] high_water_mark" in chinese.stdout and "high_water_mark([0, 1]) 返回了 1：2 个匹配索引中只有 1 个达到索引 1（多数是 2 个）" \
        in chinese.stdout
    english = check({"LANG": "C.UTF-8"})
    assert "[BROKEN] high_water_mark: the HWM is the largest index" in english.stdout
    assert "high_water_mark([0, 1]) returned 1: only 1 of the 2 match indexes reaches index 1 (a majority is 2)" \
        in english.stdout


def test_submits_table_in_chinese_lines_up(tmp_path):
    from lab.student.submit import Submission, table_text

    sub = Submission({"exercises": [1, 4]}, tmp_path / "s.zip",
                     [{"exercise": 1, "verdict": "passing", "runs": 1, "left_out": []},
                      {"exercise": 4, "verdict": "failing", "runs": 1,
                       "left_out": [say("{run}: {why}", run="ex4-s1-real",
                                        why=say("made from another version of {module}",
                                                module="exercises/reads.py"))]}])
    english = table_text(sub)
    assert english.splitlines()[0] == "exercise  verdict  runs  left out"
    assert "4         FAILING  1     ex4-s1-real: made from another version of exercises/reads.py" in english
    lines = table_text(sub, "zh").splitlines()
    assert lines[0].startswith("练习  结论") and "由 exercises/reads.py 的另一个版本生成" in lines[2]
    runs_at = [i18n.columns(re.match(r"\S+\s+\S+\s+", line).group(0)) for line in lines[:3]]
    assert runs_at[0] == runs_at[1] == runs_at[2]  # the runs column starts at the same place on every row
    assert "尚未通过：练习 4" in lines[-1]


@pytest.fixture
def fake():
    from tests.dashboard.fake_control import FakeControl

    server = FakeControl(3, seed=1)
    server.elect("A")
    yield server
    server.stop()


# ---- the student guide in each language -------------------------------------------------------------------------


PLACEHOLDERS = {  # a command's placeholders in a guide's language, and the English guide's
    "<el repositorio de tu curso>": "<your course's repository>", "<你的课程仓库>": "<your course's repository>",
    "TU_ID": "YOUR_ID", "你的学号": "YOUR_ID"}


def commands(markdown: str) -> list[str]:
    """The commands of a guide's code blocks (its example outputs aside), without `--lang`, their placeholders
    said in English."""
    blocks = re.findall(r"^```\n(.*?)^```", markdown, re.DOTALL | re.MULTILINE)
    lines = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    for said, english in PLACEHOLDERS.items():
        lines = [line.replace(said, english) for line in lines]
    return [re.sub(r" --lang \w+", "", line) for line in lines
            if line.startswith(("git ", "bash ", "source ", "hwm-lab ", "python "))]


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_student_guide_is_translated_whole_and_linked_from_the_readme(lang):
    english = (ROOT / "docs/student-guide.md").read_text()
    guide = (ROOT / f"docs/{lang}/student-guide.md").read_text()
    assert f"(docs/{lang}/student-guide.md)" in (ROOT / "README.md").read_text()
    # the same sections, the same commands, the same pictures (each one there)
    assert len(re.findall(r"^#{2,3} ", guide, re.MULTILINE)) == len(re.findall(r"^#{2,3} ", english, re.MULTILINE))
    assert commands(guide) == commands(english) and len(commands(english)) >= 10
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", guide)
    assert len(pictures) == len(re.findall(r"!\[", english))
    assert all((ROOT / f"docs/{lang}" / p).resolve().is_file() for p in pictures), pictures
    assert f"dashboard-guide-{lang}.png" in guide
    # every exercise stub's English hint is quoted and explained
    for stub in sorted((ROOT / "exercises").glob("[a-z]*.py")):
        for hint in re.findall(r'NotImplementedError\(\s*"exercise \d+: (.*?)"\)', stub.read_text(), re.DOTALL):
            hint = re.sub(r'"\s+"', "", hint)
            assert hint in guide, f"{stub.name}'s hint is not explained in docs/{lang}/student-guide.md"
    # the English term beside the first use (tests/test_i18n_glossary.py holds every line to the glossary)
    prose = re.sub(r"```.*?```|`[^`]*`|\*[^*]+\*", " ", guide, flags=re.DOTALL).lower()
    first = prose.index("high-water mark")
    assert prose.index(glossary_term(lang, "high-water mark")) < first
    for said in ("HWM", "hwm-lab exercise check", "--lang"):
        assert said in guide


def glossary_term(lang: str, english: str) -> str:
    from lab.i18n.glossary import GLOSSARY

    return next(t.said for t in GLOSSARY[lang] if t.english == english)


# ---- the dashboard's feed names every event kind in the page's language ---------------------------------------


def test_every_event_kind_has_a_name_in_each_language_and_the_page_gets_them(tmp_path):
    """The feed's summary of what a frame left out names any kind (node_killed as well as replication_sent) in the
    page's language: each kind's name is declared once (lab.core.events.COUNTED_AS), translated, and sent with the
    page's catalogue (window.HWM_I18N.kinds), which text.js reads instead of a table of its own."""
    import json

    from lab.core.events import COUNTED_AS, KINDS
    from lab.harness.scenario import simulate
    from web.app import create_app

    assert set(COUNTED_AS) == set(KINDS)
    for lang in TRANSLATED:
        names = i18n.event_names(lang)
        assert set(names) == set(KINDS)
        same = [kind for kind, name in names.items() if name == COUNTED_AS[kind]]
        assert same == [] and len(set(names.values())) == len(names), (lang, same)
    assert simulate("s1", seed=0, out=tmp_path / "s1").passed
    app = create_app({"ASYNC_MODE": "threading", "AUTOSTART": False, "TESTING": True,
                      "REPLAY_DIR": str(tmp_path / "s1")})
    html = app.test_client().get("/?lang=zh").get_data(as_text=True)
    page = json.loads(re.search(r"window\.HWM_I18N = (\{.*?\});</script>", html).group(1))
    assert page["kinds"]["node_killed"] == "被杀死的节点" and page["kinds"]["replication_sent"] == "发出的复制请求"
    script = (ROOT / "web" / "static" / "text.js").read_text(encoding="utf-8")
    assert "I18N.kinds" in script and 't("replication requests sent")' not in script
