"""Benchmark: onnx's node test suite through opkit's ReferenceBackend vs onnx.reference.ReferenceEvaluator.

Plain script, run on demand:

    python benchmarks/bench_kernels.py [--repeat 3] [--op Add --op Conv ...] [--json out.json]

Both runtimes get the same cases in the same process (one prepare + run per case, outputs checked
with the suite's comparison). Reported: wall time of each over the cases both attempt, the
ratio opkit / ReferenceEvaluator (target <= 1.0), and pass counts. The best of ``--repeat`` runs
is taken per runtime to damp noise on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np


class EvaluatorBackend:
    """onnx.reference.ReferenceEvaluator behind the same prepare(model).run(inputs) shape."""

    @classmethod
    def prepare(cls, model, device="CPU"):
        from onnx.reference import ReferenceEvaluator

        sess = ReferenceEvaluator(model)
        names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]

        class Rep:
            def run(self, inputs):
                return sess.run(None, dict(zip(names, inputs)))

        return Rep()


def _time_suite(backend, cases) -> tuple[float, dict[str, str]]:
    from opkit.suites.onnx_node import run_case

    statuses = {}
    start = time.perf_counter()
    for case in cases:
        statuses[case.name] = run_case(backend, case).status
    return time.perf_counter() - start, statuses


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--op", action="append")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)

    from opkit.backends.reference import ReferenceBackend
    from opkit.suites.onnx_node import select

    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    cases = select(args.op)
    # warm-up: load every generated kernel module and onnx.reference's op classes once
    _time_suite(ReferenceBackend, cases[:50])
    _time_suite(EvaluatorBackend, cases[:50])

    best = {}
    statuses = {}
    for label, backend in (("opkit", ReferenceBackend), ("onnx.reference", EvaluatorBackend)):
        times = []
        for _ in range(args.repeat):
            t, st = _time_suite(backend, cases)
            times.append(t)
            statuses[label] = st
        best[label] = min(times)

    ok = {label: {n for n, s in st.items() if s == "pass"} for label, st in statuses.items()}
    both = ok["opkit"] & ok["onnx.reference"]
    # time again on the cases both pass, so neither side is credited for failing fast
    common = [c for c in cases if c.name in both]
    common_t = {label: min(_time_suite(b, common)[0] for _ in range(args.repeat))
                for label, b in (("opkit", ReferenceBackend), ("onnx.reference", EvaluatorBackend))}
    result = {
        "cases": len(cases),
        "passed": {label: len(s) for label, s in ok.items()},
        "seconds_all_cases": {k: round(v, 3) for k, v in best.items()},
        "ratio_all_cases": round(best["opkit"] / best["onnx.reference"], 3),
        "cases_both_pass": len(common),
        "seconds_common_cases": {k: round(v, 3) for k, v in common_t.items()},
        "ratio_common_cases": round(common_t["opkit"] / common_t["onnx.reference"], 3),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
