"""Issue 52's commands, each run with --lang es and --lang zh, print no English sentence: explore with a module that
lacks functions and with a function the lab does not have; a cluster whose disks fill and fail (up, disk-full,
fsync-fail, write, status with why each node stopped, read from a node it does not have, down); `replay DIR`; and
simulate d1, the disk scenario. English is found as tests/test_i18n_commands.py finds it: a word the catalogue's
English uses and its translations never do."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from procutil import kill_pids, track, wait_until

from lab import cli
from tests.test_i18n_commands import english

ROOT = Path(__file__).resolve().parent.parent
LANGS = ("es", "zh")
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def _no_language_from_outside(monkeypatch):
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)


def said(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


def no_english(lang: str, text: str, *names: str) -> list[str]:
    """English words left in `text` (paths, URLs, code in backticks, identifiers and the `names` given aside)."""
    text = re.sub(r"`[^`]*`|\S*/\S*|\bhttps?:\S+|\w*_\w*", " ", text)
    for name in names:
        text = text.replace(name, " ")
    return english(lang, text)


@pytest.mark.parametrize("lang", LANGS)
def test_explore_with_a_module_that_lacks_functions_or_names_one_the_lab_has_not(lang, capsys, monkeypatch,
                                                                                   tmp_path):
    (tmp_path / "halfdone.py").write_text("def high_water_mark(match_indexes):\n    return max(match_indexes)\n")
    (tmp_path / "nothing.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out = said(capsys, "explore", "--impl", "halfdone", "--exercise", "1", "--out", str(tmp_path / "x"),
                     "--lang", lang)
    assert code == 2 and "on_replication_response" in out and "--impl halfdone:high_water_mark" in out, out
    assert no_english(lang, out, "hwm-lab explore", "halfdone") == [] and "lacks" not in out, out
    code, out = said(capsys, "explore", "--impl", "halfdone:nosuch,high_water_mark", "--lang", lang)
    assert code == 2 and "nosuch" in out and no_english(lang, out, "hwm-lab explore", "halfdone", "nosuch") == [], out
    assert "unknown function" not in out and "known:" not in out
    code, out = said(capsys, "explore", "--impl", "nothing", "--lang", lang)
    assert code == 2 and no_english(lang, out, "hwm-lab explore", "nothing") == [], out
    assert (CJK.search(out) if lang == "zh" else "ninguna de las funciones" in out), out


@pytest.mark.parametrize("lang", LANGS)
def test_simulate_d1_says_the_disk_full_in_the_language(lang, capsys):
    code, out = said(capsys, "simulate", "d1", "--lang", lang)
    assert code == 0 and no_english(lang, out, "d1") == [], out


def hwm(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "lab.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.processes
def test_a_cluster_with_a_full_disk_and_a_failed_fsync_says_why_in_each_language(tmp_path):
    up = hwm(tmp_path, "up", "--json", "--nodes", "3", "--host", "127.0.0.1", "--dir", "c")
    info = json.loads(up.stdout) if up.stdout.strip() else {}
    track(info.get("pid"), *(n["pid"] for n in info.get("nodes", [])))
    try:
        assert up.returncode == 0, up.stderr
        followers = sorted(n["id"] for n in info["nodes"] if n["id"] != info["leader"])
        full, failing = followers
        assert hwm(tmp_path, "disk-full", full, "--dir", "c").returncode == 0
        assert hwm(tmp_path, "fsync-fail", failing, "--dir", "c").returncode == 0
        hwm(tmp_path, "write", "e1", "--dir", "c", "--timeout", "3")  # (its answer depends on who stops first)

        def stopped():
            nodes = json.loads(hwm(tmp_path, "status", "--json", "--dir", "c").stdout)["nodes"]
            return all(n["state"] == "exited" for n in nodes if n["id"] in followers)
        wait_until(stopped, 30, "the two followers to stop on their disks")
        for lang in LANGS:
            status = hwm(tmp_path, "status", "--dir", "c", "--lang", lang)
            assert status.returncode == 0, status.stderr
            text = status.stdout
            assert no_english(lang, text, "always", "generation") == [], text
            for word in ("disk full", "appending", "No space", "device", "fsync failed", "Input/output", "fin_log",
                         "match_index"):
                assert word not in text, (word, text)
            why = {"es": ("disco lleno al añadir al WAL (no queda espacio en el dispositivo)",
                          "falló el fsync del WAL (error de entrada/salida)", "índices de coincidencia"),
                   "zh": ("追加到预写日志时磁盘已满（设备上没有剩余空间）", "预写日志的 fsync 失败（输入/输出错误）",
                          "匹配索引")}[lang]
            assert all(w in text for w in why), text
            read = hwm(tmp_path, "read", "1", "--node", "Z", "--dir", "c", "--lang", lang)
            assert read.returncode != 0 and "None" not in read.stderr and "'Z'" in read.stderr, read.stderr
            assert no_english(lang, read.stderr, "hwm-lab") == [], read.stderr
            written = hwm(tmp_path, "write", "e2", "--node", full, "--dir", "c", "--lang", lang, "--timeout", "3")
            assert written.returncode != 0 and no_english(lang, written.stderr, "hwm-lab") == [], written.stderr
        log = (tmp_path / "c" / "data" / full / "node.log").read_text(encoding="utf-8", errors="replace")
        assert "No space left on device" in log or "[Errno 28]" in log  # the system's own words: its log only
    finally:
        down = hwm(tmp_path, "down", "--dir", "c", "--lang", "zh")
        kill_pids([info.get("pid"), *(n["pid"] for n in info.get("nodes", []))])
    assert down.returncode == 0 and CJK.search(down.stdout) and no_english("zh", down.stdout) == [], down.stdout


@pytest.mark.parametrize("lang", LANGS)
def test_replay_dir_says_its_trace_and_its_address_in_the_language(lang, tmp_path):
    from lab.harness.scenario import simulate

    assert simulate("d1", seed=0, out=tmp_path / "d1").passed
    env = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, "-m", "lab.cli", "replay", str(tmp_path / "d1"), "--port", "0",
                             "--async-mode", "threading", "--lang", lang], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    track(proc.pid)
    lines = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(lines) < 3:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    text = "".join(lines)
    assert len(lines) == 3 and "Ctrl-C" in lines[-1], text
    assert no_english(lang, text, "Ctrl-C") == [] and "events" not in text and "stops" not in text, text
    assert {"es": "eventos en", "zh": "个事件"}[lang] in lines[0] and re.search(r"http://\S+:\d+/", lines[1]), text
    if lang == "es":
        assert re.search(r"\d,\d s|\d s", lines[0]), text  # seconds as Spanish writes them
