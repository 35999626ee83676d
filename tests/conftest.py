"""Shared test options: `pytest --impl solutions|exercises|MODULE` picks the code under test."""

import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--impl",
        default="solutions",
        help="implementation of the exercises to test: solutions (default), exercises, or a module name",
    )


@pytest.fixture(scope="session")
def impl(request):
    from lab import impl as impl_module

    return impl_module.load(request.config.getoption("--impl"))
