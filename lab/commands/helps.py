"""The commands' help for the catalogues: Babel's extractor reads it from the parser itself (lab.i18n.extract
names it), so a help written with a value in it is the sentence the reader sees."""

from __future__ import annotations

import argparse

from lab.commands.parser import build_parser
from lab.commands.options import ARGPARSE, ARGPARSE_WORDS, HELP


def extract(fileobj, keywords, comment_tags, options):
    """Babel's extractor for the commands' help (lab.i18n.extract names it for lab/commands/parser.py): every help, description
    and epilog as the parser says it (context "help"), and argparse's own words (context "argparse")."""
    found, parsers = [], [build_parser()]
    while parsers:
        parser = parsers.pop(0)
        found += [parser.description, parser.epilog]
        for action in parser._actions:
            found.append(action.help)
            if isinstance(action, argparse._SubParsersAction):
                found += [choice.help for choice in action._choices_actions]
                parsers += list(action.choices.values())
    for text in dict.fromkeys(t for t in found if t and t != argparse.SUPPRESS and t not in ARGPARSE_WORDS):
        yield 1, "pgettext", (HELP, text), []
    for text in ARGPARSE_WORDS:
        yield 1, "pgettext", (ARGPARSE, text), []
