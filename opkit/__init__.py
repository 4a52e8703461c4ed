"""opkit: operator specifications -> reference kernels, conformance tests and docs."""

__version__ = "0.1.0"
