"""`hwm-lab`: the entry point. The parser and its command groups are built in lab/commands/parser.py."""

from __future__ import annotations

import sys

from lab.commands.parser import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
