"""The `hwm-lab` command groups, and the parser they register with (lab/commands/parser.py; lab/cli.py runs it)."""
