"""Conformance testing: run backends against the specs and report.

- ``model``: one-node ONNX models per case signature (IR version / opset a backend accepts)
- ``worker``: a long-lived process per backend, sessions cached per signature, crash/timeout isolation
- ``runner``: the suites (examples, properties, differential) driving hypothesis over ``opkit.cases.strategies``
- ``lowerings``: spec lowerings checked against the reference kernel
- ``compare``: value comparison, NaN- and infinity-aware, floats held to an allowance
- ``allowance``: per output, the allowance from the op's accuracy class (``opkit.spec.accuracy``)
- ``accumulation``: the error models of accumulating ops (reductions, MatMul, normalisations)
- ``ulp``: units in the last place of every ONNX float type
- ``outcomes``: outcome vocabulary and expectations files
- ``report``: the JSON report (schema: ``report.schema.json``), summary table, progress
- ``repro``: standalone repro bundles
- ``cli``: ``opkit test`` (``add_test_arguments``, ``run_test``)
- ``pytest_support``: what generated tests call
"""
