"""Options that several groups of commands share, and the parser that says `--help` and usage errors in the
reader's language."""

from __future__ import annotations

import argparse
import contextlib
import re
import textwrap

from lab import i18n
from lab.i18n import word
from lab.core.guard import DEFAULT_LIMIT

HELP = "help"  # the catalogue's context of a command's help, description and epilog (lab.i18n.extract reads them
# from the parser itself, so a help written with values, as "1 to 8 nodes", is the sentence the reader sees)
ARGPARSE = "argparse"  # the context of argparse's own words; it looks each up through its module's `_`
NUMBERS = {  # argparse's type error for a number, said by what it wanted rather than by the type's name
    int: "invalid int value: %(value)r", float: "invalid float value: %(value)r"}
CHOICE = "invalid choice: %(value)r (choose from %(choices)s)"
QUOTED_ARGUMENT = re.compile(r"参数 ([^\s\-“][^：]*)：")  # argparse's "argument 编号: ..." said in Chinese
LIMIT_ERROR = "write the limit as seconds from 0.01 to 600, not %(value)r"
ARGPARSE_WORDS = (  # those a student meets: the help's headings, and the usage errors
    "usage: ", "positional arguments", "options", "show this help message and exit",
    "%(prog)s: error: %(message)s\n",
    "the following arguments are required: %s", "unrecognized arguments: %s",
    CHOICE, "argument %(argument_name)s: %(message)s",
    "expected one argument", "expected at most one argument", "expected at least one argument",
    "invalid %(type)s value: %(value)r", "ambiguous option: %(option)s could match %(matches)s",
    "not allowed with argument %s", "one of the arguments %s is required",
    *NUMBERS.values(), LIMIT_ERROR,  # (and the lab's own, said while argparse reads the command line)
)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help (each option's, each command's description and epilog) is said in `lang`; its
    subcommands' parsers are of its class too (argparse's default)."""

    lang = i18n.SOURCE

    def _get_formatter(self):
        formatter = super()._get_formatter()
        if self.lang == i18n.SOURCE:
            return formatter
        help_string, add_text, lang = formatter._get_help_string, formatter.add_text, self.lang
        formatter._get_help_string = lambda action: helped(help_string(action), lang)
        formatter.add_text = lambda text: add_text(helped(text, lang))
        # lines are cut at spaces only (argparse would cut disk-full at its hyphen), and where a language is
        # written without spaces, by the columns they take
        formatter._split_lines = lambda text, width: wrapped(text, width, lang)
        # a description is filled to the width; a raw one keeps its paragraphs and indented lines, but a
        # translation does not break where the English did, so its paragraphs are filled too
        filled = wrapped if type(formatter)._fill_text is argparse.HelpFormatter._fill_text else paragraphs
        formatter._fill_text = lambda text, width, indent: "\n".join(
            indent + line for line in filled(text, width - len(indent), lang))
        named = formatter._metavar_formatter  # placeholders in the reader's words: `hwm-lab exercise ACCIÓN`
        formatter._metavar_formatter = lambda action, default: named(action, default) if isinstance(
            action, argparse._SubParsersAction._ChoicesPseudoAction) else lambda size: tuple(  # (a command's
            placeholder(name, lang) for name in named(action, default)(size))  # own name is typed as it is)
        if lang in i18n.UNSPACED:  # argparse pads an option to the help's column by its length, not its width
            formatter._format_action = aligned(formatter._format_action)
            formatter.add_argument = measured(formatter, formatter.add_argument)
            formatter._format_usage = usage_by_width(formatter, formatter._format_usage)
        if lang in FULL_WIDTH:  # argparse writes a heading's colon itself ("%s:"), after the heading's translation
            formatter._Section = _FullWidthSection
        return formatter

    def error(self, message):
        """In Chinese a placeholder an error names is quoted, as a word among words: 参数“编号”：应为整数 (an
        option, --seed, stands apart as it is)."""
        if self.lang == "zh":
            message = QUOTED_ARGUMENT.sub(r"参数“\1”：", message)
        super().error(message)

    def _get_value(self, action, arg_string):
        """argparse's "invalid int value: 'x'" names a Python type; the reader is told the number it wants."""
        if action.type in NUMBERS and self.lang != i18n.SOURCE:
            try:
                return action.type(arg_string)
            except ValueError:
                raise argparse.ArgumentError(action, argparse._(NUMBERS[action.type]) % {"value": arg_string})
        return super()._get_value(action, arg_string)

    def _check_value(self, action, value):
        """argparse lists the choices with English commas; the reader's language lists them its own way."""
        if action.choices is not None and value not in action.choices and self.lang != i18n.SOURCE:
            choices = i18n.localize(i18n.Listed(map(repr, action.choices)), self.lang)
            raise argparse.ArgumentError(action, argparse._(CHOICE) % {"value": value, "choices": choices})
        return super()._check_value(action, value)


METAVAR = "metavar"  # the catalogue's context of an argument's placeholder in usage lines and errors
METAVARS = (  # (node names A and B, units and code's words stay as they are)
    word("metavar", "COMMAND"), word("metavar", "ACTION"), word("metavar", "BUDGET"), word("metavar", "CHECK"),
    word("metavar", "CONTROL_TOKEN"), word("metavar", "CONTROL_URL"), word("metavar", "CORES"),
    word("metavar", "DIR"), word("metavar", "DURATION"), word("metavar", "EXERCISE"), word("metavar", "FILE"),
    word("metavar", "FRAME_HZ"), word("metavar", "ID"), word("metavar", "IMPL"), word("metavar", "INTERVAL"),
    word("metavar", "LIMIT"), word("metavar", "MAX_DOWN"), word("metavar", "MEMORY"), word("metavar", "NODES"),
    word("metavar", "OUT"), word("metavar", "PORT"), word("metavar", "READERS"), word("metavar", "SCRIPT"),
    word("metavar", "SECONDS"), word("metavar", "SEED"), word("metavar", "SETTLE"), word("metavar", "SIZE"), word("metavar", "STEPS"),
    word("metavar", "STUDENT"), word("metavar", "SUBMISSIONS"), word("metavar", "TIMEOUT"),
    word("metavar", "TOKEN"), word("metavar", "TRUNCATION"), word("metavar", "WRITERS"),
    word("metavar", "WRITE_TIMEOUT"), word("metavar", "index"), word("metavar", "name"), word("metavar", "number"),
    word("metavar", "scenario"), word("metavar", "text"),
)


def placeholder(name, lang: str):
    """An argument's placeholder (COMMAND, text) in `lang`; None (no placeholder) stays None."""
    return i18n.gettext(lang, name, METAVAR) if isinstance(name, str) else name


FULL_WIDTH = {"zh"}  # languages whose punctuation after a heading is full-width ("选项：")


class _FullWidthSection(argparse.HelpFormatter._Section):
    def format_help(self):
        said = super().format_help()
        if self.heading is None or self.heading is argparse.SUPPRESS:
            return said
        return said.replace(f"{self.heading}:\n", f"{self.heading}：\n", 1)


def measured(formatter, add_argument):
    """argparse's add_argument, with the page's widest option measured in columns, not characters: the help's
    column is then where the widest option written in wide characters ends (up to argparse's limit)."""
    def add(action):
        add_argument(action)
        if action.help is not argparse.SUPPRESS:
            wide = i18n.columns(formatter._format_action_invocation(action)) + formatter._current_indent
            formatter._action_max_length = max(formatter._action_max_length, wide)
    return add


USAGE_PART = re.compile(r"\(.*?\)+(?=\s|$)|\[.*?\]+(?=\s|$)|\S+")  # (argparse's own: an option with its placeholder)


def usage_by_width(formatter, format_usage):
    """argparse's usage, its lines cut by the columns they take rather than by their characters: the options after
    the command's name, under its first option; then the positional arguments on a line of their own."""
    def said(usage, actions, groups, prefix=None):
        text = format_usage(usage, actions, groups, prefix)
        prog, body, width = formatter._prog, " ".join(text.split()), formatter._width - formatter._current_indent
        if usage is not None or prog not in body or i18n.columns(body) <= width:
            return text
        head = body[:body.index(prog) + len(prog)]
        parts = USAGE_PART.findall(body[len(head):])
        positionals = USAGE_PART.findall(formatter._format_actions_usage(
            [action for action in actions if not action.option_strings], groups))
        options = []
        for part in parts[:len(parts) - len(positionals)]:  # a required option keeps its placeholder: --student 学号
            options = options[:-1] + [f"{options[-1]} {part}"] if options and part[0] not in "[(-" else options + [part]
        indent, lines, line = " " * (i18n.columns(head) + 1), [], head
        for group in (options, parts[len(parts) - len(positionals):]):
            for part in group:
                if line not in (head, indent) and i18n.columns(f"{line} {part}") > width:
                    lines, line = lines + [line], indent + part
                else:
                    line = line + part if line == indent else f"{line} {part}"
            if line not in (head, indent):
                lines, line = lines + [line], indent
        return "\n".join(lines) + "\n\n"
    return said


def aligned(format_action):
    """argparse's line of an option with its help starting in the help's column when the option's placeholder is
    written in wide characters (`--seed 种子`: 11 characters, 13 columns): argparse counts characters, so the help
    of every option of a page starts in one column by the width they take; an option too wide to leave two spaces
    before that column has its help on the next line, as argparse does with a long option."""
    def said(action):
        first, newline, rest = format_action(action).partition("\n")
        found = re.match(r"(\s*\S+(?: \S+)*)( {2,})(\S.*)$", first)
        if found:
            option, gap, help_text = found.groups()
            column, wide = len(option) + len(gap), i18n.columns(option)
            if wide != len(option):
                first = option + " " * (column - wide) + help_text if wide + 2 <= column else (
                    option + "\n" + " " * column + help_text)
        return first + newline + rest
    return said


def wrapped(text: str, width: int, lang: str) -> list[str]:
    """`text` cut into lines of at most `width` columns: at a space, or in a language written without spaces
    between two of its characters; never inside a word (argparse's textwrap cuts acked-in-final-logs at its
    hyphens)."""
    if lang not in i18n.UNSPACED:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)
    lines, line = [], []
    for token in re.findall(r"[\u2e80-\uffef]|[^\s\u2e80-\uffef]+|\s+", " ".join(text.split())):
        closes = token[0] in NO_LINE_START
        if line and not token.isspace() and i18n.columns("".join(line) + token) > width and (
                not closes or len(line) > 1):  # (a closing mark after a word as wide as the line stays beside it)
            carried = []  # a closing mark never starts a line: the character before it goes down with it
            while closes and len(line) > 1 and (carried or not line[-1].isspace()):
                carried.insert(0, line.pop())
                if carried[0] not in NO_LINE_START:
                    break
            while len(line) > 1 and line[-1] in NO_LINE_END:  # nor does an opening mark end one
                carried.insert(0, line.pop())
            lines.append("".join(line).rstrip())
            line = [t for t in carried if t.strip()]
        if token.isspace() and not line:
            continue
        line.append(token)
    return lines + ["".join(line).rstrip()] if "".join(line).strip() else lines


def paragraphs(text: str, width: int, lang: str) -> list[str]:
    """A raw text's lines: each paragraph (lines up to a blank or an indented line) filled to `width`."""
    lines, paragraph = [], []
    for line in text.splitlines() + [""]:
        if line.strip() and not line[0].isspace():
            paragraph.append(line)
            continue
        lines += wrapped(" ".join(paragraph), width, lang) if paragraph else []
        paragraph = []
        lines.append(line.rstrip())
    return lines[:-1]


NO_LINE_START = set("，。、：；！？）」』】》〉”,.:;!?)")  # (Chinese typesetting's kinsoku: what closes stays on its
NO_LINE_END = set("（「『【《〈“(")  # line, what opens goes down with what it opens)


def parser_class(lang: str) -> type[Parser]:
    return type("Parser", (Parser,), {"lang": lang})


def helped(text, lang: str):
    """A help text (or argparse's SUPPRESS, or None) in `lang`."""
    if not text or text == argparse.SUPPRESS:
        return text
    return i18n.gettext(lang, text, HELP)


@contextlib.contextmanager
def argparse_speaks(lang: str):
    """argparse's own words (usage:, options, its errors) in `lang` while the parser is built and used."""
    if lang == i18n.SOURCE:
        yield
        return
    said, plural, named = argparse._, argparse.ngettext, argparse._get_action_name
    argparse._ = lambda text: i18n.gettext(lang, text, ARGPARSE)
    argparse.ngettext = lambda one, many, n: argparse._(one if n == 1 else many)
    argparse._get_action_name = lambda action: placeholder(named(action), lang)  # ("argument ACTION: ...")
    try:
        yield
    finally:
        argparse._, argparse.ngettext, argparse._get_action_name = said, plural, named


def language_of(argv: list[str]) -> str:
    """The language of a command line before it is parsed (for its --help): --lang, else the environment's."""
    for k, arg in enumerate(argv):
        value = arg.removeprefix("--lang=") if arg.startswith("--lang=") else \
            argv[k + 1] if arg == "--lang" and k + 1 < len(argv) else None
        if value in i18n.LANGUAGES:
            return value
    return i18n.from_environment()


def lifted_lang(argv: list[str]) -> tuple[str | None, list[str]]:
    """The language a command line asks for with `--lang X` (or `--lang=X`) wherever it stands, and the command line
    without it: argparse would refuse it between a command and its action (`hwm-lab exercise --lang es list`). An
    unknown language stays, for argparse to refuse with its choices; after `--` every word is an argument."""
    given, rest, k = None, [], 0
    while k < len(argv):
        arg = argv[k]
        if arg == "--":
            rest += argv[k:]
            break
        value = arg.removeprefix("--lang=") if arg.startswith("--lang=") else \
            argv[k + 1] if arg == "--lang" and k + 1 < len(argv) else None
        if value in i18n.LANGUAGES:
            given, k = value, k + (1 if arg.startswith("--lang=") else 2)
            continue
        rest.append(arg)
        k += 1
    return given, rest


lang_option, lang_of = i18n.lang_option, i18n.lang_of  # (declared in lab.i18n, for the handout's command too)


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
        raise argparse.ArgumentTypeError(argparse._(LIMIT_ERROR) % {"value": text})
    return value
