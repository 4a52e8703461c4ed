"""Conformance suites a backend can be run against (``opkit test --suite NAME``)."""
