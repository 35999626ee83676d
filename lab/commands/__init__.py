"""The `hwm-lab` command groups (see lab/cli.py)."""
