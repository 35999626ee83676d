"""Options that several groups of commands share."""

from __future__ import annotations

import argparse

from lab import i18n
from lab.core.guard import DEFAULT_LIMIT


def lang_option(p: argparse.ArgumentParser) -> None:
    """--lang: the language a command speaks (else LANGUAGE, LC_ALL, LC_MESSAGES or LANG)."""
    p.add_argument("--lang", choices=list(i18n.LANGUAGES), default=None,
                   help="language of what the command prints: en, es or zh (default: from LANGUAGE, LC_ALL, "
                        "LC_MESSAGES or LANG)")


def lang_of(args) -> str:
    return getattr(args, "lang", None) or i18n.from_environment()


def limit_option(p: argparse.ArgumentParser) -> None:
    """--limit SECONDS: how long one call of a student's function may run before the lab stops it and says so."""
    p.add_argument("--limit", type=_seconds, default=DEFAULT_LIMIT, metavar="SECONDS",
                   help=f"longest time one call of your function may take (default {DEFAULT_LIMIT:g})")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.01 <= value <= 600:
        raise argparse.ArgumentTypeError(f"write the limit as seconds from 0.01 to 600, not {text!r}")
    return value
