"""pytest plugin (entry point ``opkit``): options for running generated conformance tests."""

from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("opkit")
    group.addoption("--backend", action="append", default=None,
                    help="opkit backend to test generated conformance tests against (repeatable)")
