"""Declares `--impl` here, at the top, where pytest reads it before it looks for test paths: declared in
tests/conftest.py, `python -m pytest --impl exercises` took `exercises` for a folder of tests."""


def pytest_addoption(parser):
    parser.addoption(
        "--impl",
        default="solutions",
        help="implementation of the exercises to test: solutions (default), exercises, or a module name",
    )
