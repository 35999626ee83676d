"""The guides' samples of output, made by the program: a block after `<!-- output: ARGS | N -->` is the first N lines
`hwm-lab ARGS` prints in the guide's language; `python -m lab.commands.guides` writes them, a test compares."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDES = {"en": ROOT / "docs" / "student-guide.md", "es": ROOT / "docs" / "es" / "student-guide.md",
          "zh": ROOT / "docs" / "zh" / "student-guide.md"}
MARKER = re.compile(r"^<!-- output: (?P<args>[^|>]+?)(?: \| (?P<lines>\d+))? -->\n```\n(?P<block>.*?)^```\n",
                    re.MULTILINE | re.DOTALL)


def printed(args: str, lang: str) -> str:
    """What `hwm-lab ARGS --lang LANG` prints (its output and its errors), run in this process."""
    import os
    import tempfile

    from lab.commands.parser import main

    if str(ROOT) not in sys.path:  # a sample may run the tests' wrong variants (`--impl tests.wrong_variants...`)
        sys.path.insert(0, str(ROOT))
    out, here = io.StringIO(), os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:  # what a command writes (explore's counterexample) goes there
        os.chdir(scratch)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                main([*args.split(), "--lang", lang])
        finally:
            os.chdir(here)
    return out.getvalue()


def sample(args: str, lines: str | None, lang: str) -> str:
    text = printed(args, lang).rstrip("\n").splitlines()
    if lines and len(text) > int(lines):
        text = text[:int(lines)] + ["..."]
    return "\n".join(text) + "\n"


def regenerated(path: Path, lang: str) -> str:
    """The guide with every marked block as the program prints it now."""
    def block(m: re.Match) -> str:
        head = m.group(0)[:m.start("block") - m.start()]
        return head + sample(m.group("args"), m.group("lines"), lang) + "```\n"

    return MARKER.sub(block, path.read_text(encoding="utf-8"))


def samples(path: Path) -> list[str]:
    """The commands whose output a guide shows."""
    return [m.group("args") for m in MARKER.finditer(path.read_text(encoding="utf-8"))]


def write() -> list[Path]:
    """Rewrite each guide whose samples differ from the program's output (written aside, then put in place)."""
    changed = []
    for lang, path in GUIDES.items():
        text = regenerated(path, lang)
        if text != path.read_text(encoding="utf-8"):
            aside = path.with_suffix(".md.new")
            aside.write_text(text, encoding="utf-8")
            aside.replace(path)
            changed.append(path)
    return changed


if __name__ == "__main__":
    for path in write():
        print(f"{path.relative_to(ROOT)}: samples brought up to date")
    sys.exit(0)
