"""``opkit test``: run conformance suites against backends.

    opkit test --backend onnxruntime --op Trilu [--suite examples|properties|differential|lowerings|all]
    opkit test --backend reference --suite onnx-node [--op OP ...] [--report out.json]

The spec-driven suites run through ``opkit.run`` (options, session; the engine is
``opkit.conformance``); onnx's node cases in ``opkit.suites.onnx_node``. Exit 0 when every selected
case passes (or fails as an expectations file says), 1 otherwise, 2 on usage errors, 130 when
interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..core.exit_codes import ExitCode


def _suite_onnx_node(args: argparse.Namespace) -> int:
    from ..suites import onnx_node

    if args.op:
        known = {c.op for c in onnx_node.collect()} | {c.op.split("::")[-1] for c in onnx_node.collect()}
        unknown = [op for op in args.op if op not in known]
        if unknown:
            print(f"opkit test: no onnx node test for op(s) {', '.join(unknown)}", file=sys.stderr)
            return ExitCode.USAGE
    if _cluster_named(args):  # said, not silently ignored: the user asked for a cluster
        print("opkit test: the onnx-node suite runs on this machine; --scheduler sends the spec suites (examples, "
              "properties, differential, robustness, lowerings) to the cluster", file=sys.stderr)
    failed = 0
    backends = args.backend or ["reference"]
    for backend in backends:
        try:
            result = onnx_node.run(backend, ops=args.op, report_path=_node_report_path(args, backend, len(backends)),
                                   progress=not args.quiet)
        except (ValueError, ImportError) as exc:  # unknown backend, or one without the Backend API
            print(f"opkit test: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        if args.verbose:
            for c in result.cases:
                if c.status != "pass":
                    print(f"{c.status:<11} {c.name}: {c.message}")
        failed += not result.ok
    return ExitCode.PROBLEMS if failed else ExitCode.OK


def _cluster_named(args: argparse.Namespace) -> bool:
    from ..run.cluster import ClusterUsageError, scheduler_address

    try:
        return scheduler_address(args) is not None
    except ClusterUsageError:  # an empty --scheduler: the spec suites' run says what is wrong with it
        return False


def _node_report_path(args: argparse.Namespace, backend: str, n_backends: int) -> str | None:
    """The onnx-node report path: --report itself, unless other suites or backends share it."""
    if not args.report:
        return None
    shared = n_backends > 1 or any(s != "onnx-node" for s in (args.suite or []))
    if not shared:
        return args.report
    stem, ext = os.path.splitext(args.report)
    safe = backend.replace(":", "_").replace("/", "_")
    return f"{stem}-onnx-node-{safe}{ext or '.json'}"


def cmd_test(args: argparse.Namespace) -> int:
    """onnx-node runs onnx's fixed node cases; every other suite is the spec-driven harness."""
    from ..run.session import run_test

    chosen = args.suite or ["all"]
    codes = []
    if "onnx-node" in chosen:
        codes.append(_suite_onnx_node(args))
    rest = [suite for suite in chosen if suite != "onnx-node"]
    if rest:
        args.suite = rest
        codes.append(run_test(args))
    return max(codes)


def register(subparsers) -> None:
    from ..run.options import SUITE_CHOICES, add_test_arguments

    p = subparsers.add_parser(
        "test", help="run conformance suites against one or more backends",
        description="Run spec-driven conformance suites (examples, properties, differential against the "
                    "reference kernels, robustness on hostile inputs, lowerings) or onnx's node test cases (onnx-node) against backends, "
                    "with a terminal summary, a JSON report and repro bundles. Exit 0 when every case "
                    "passes or fails as expected (xfail), 1 otherwise, 2 on usage errors, 130 when "
                    "interrupted (Ctrl-C or SIGTERM; the report still holds the cases that finished).",
        epilog="'all' means examples, properties, differential, robustness and lowerings; add --suite onnx-node for "
               "onnx's node tests (needs a backend with onnx's Backend API, e.g. reference or "
               "onnxruntime-backend-api).")
    add_test_arguments(p)
    for action in p._actions:  # the node suite is one more --suite choice
        if action.dest == "suite":
            action.choices = tuple(SUITE_CHOICES) + ("onnx-node",)
            action.help = action.help.replace(" or all (default", ", all or onnx-node (default")
    p.add_argument("-v", "--verbose", action="store_true", help="onnx-node: print every failing case")
    p.set_defaults(func=cmd_test)
