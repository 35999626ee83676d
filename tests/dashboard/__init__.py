"""Tests of the dashboard (the `web` package)."""
