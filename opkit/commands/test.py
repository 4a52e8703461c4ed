"""``opkit test``: run a conformance suite against a backend.

    opkit test --backend reference --suite onnx-node [--op OP ...] [--report out.json]

Each suite is one function ``_suite_<name>(args) -> int`` registered in ``SUITES``; more suites
(property-based, ...) and backends plug in the same way. Exit 0 when every selected case passes.
"""

from __future__ import annotations

import argparse
import sys


def _suite_onnx_node(args: argparse.Namespace) -> int:
    from ..suites import onnx_node

    if args.op:
        known = {c.op for c in onnx_node.collect()} | {c.op.split("::")[-1] for c in onnx_node.collect()}
        unknown = [op for op in args.op if op not in known]
        if unknown:
            print(f"opkit test: no onnx node test for op(s) {', '.join(unknown)}", file=sys.stderr)
            return 2
    failed = 0
    for backend in args.backend or ["reference"]:
        result = onnx_node.run(backend, ops=args.op, report_path=args.report, progress=not args.quiet)
        if args.verbose:
            for c in result.cases:
                if c.status != "pass":
                    print(f"{c.status:<11} {c.name}: {c.message}")
        failed += not result.ok
    return 1 if failed else 0


SUITES = {"onnx-node": _suite_onnx_node}


def cmd_test(args: argparse.Namespace) -> int:
    return SUITES[args.suite](args)


def register(subparsers) -> None:
    p = subparsers.add_parser("test", help="run a conformance suite against a backend",
                              description="Run a conformance suite against one or more backends and "
                                          "report per-op pass/total. Exit 0 when every case passes.")
    p.add_argument("--backend", action="append", metavar="NAME",
                   help="backend: 'reference' (default) or module:Class of an onnx Backend (repeatable)")
    p.add_argument("--suite", default="onnx-node", choices=sorted(SUITES), help="suite to run")
    p.add_argument("--op", action="append", metavar="OP", help="only this op (repeatable)")
    p.add_argument("--report", metavar="PATH", help="write a JSON report here")
    p.add_argument("-v", "--verbose", action="store_true", help="print every failing case")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-op summary")
    p.set_defaults(func=cmd_test)
