"""The conformance engine (layer 7 of docs/design.md): runs one op version's suites against a
backend and judges each case. It imports cases, backends and results; the run layer above drives it.

- ``harness``: a spec's kernels and examples, the oracle's view of a case
- ``runner``: ``Runner``, the suites (examples, properties, differential, robustness) over the
  mixins ``hypothesis_search`` (the per-binding search), ``binding_checks`` (load checks, valid
  cases), ``case_executors``, ``crash_replay``, ``recording``; ``backend_runner``: one backend's runs
- ``case_exec``: what one backend call gave (``Exec``) and how it is classed
- ``worker``, ``worker_engine``, ``worker_process``, ``process_kill``, ``worker_output``: a
  long-lived process per backend, sessions cached per signature, crash/timeout isolation
- ``output_compare``, ``allowance``, ``accumulation``, ``ulp``: value comparison and tolerances
- ``second_opinion``: a second engine asked about every finding (its words: ``opkit.results.verdicts``)
- ``lowerings``, ``property_bundle``, ``property_calls``: lowerings and properties checked
- ``validity``, ``triggers``, ``attribute_batches``, ``stopping``, ``limits``, ``determinism``
- ``repro``: standalone repro bundles
- ``pytest_support``: what generated tests call
"""
