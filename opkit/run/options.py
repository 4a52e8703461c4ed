"""The options of ``opkit test`` (``add_test_arguments``) and the checks of their values: every
problem is a ``TestUsageError`` (exit 2, before the first case runs)."""

from __future__ import annotations

from ..core.distribution import pip_install

import argparse

from ..cases.bindings import PROBE_LIMIT
from ..results.outcomes import SPEC_SUITES

EXIT_CODES_HELP = (
    "exit codes: 0 every case opkit could test passed (or failed as an expectations file says); cases "
    "opkit could not test (outcome 'untested': no valid input, a reference-kernel or property error) are "
    "listed apart and never count against the backend; 1 any other outcome, or no case ran (or none "
    "could be tested; the reason is printed per op); 2 usage errors, checked before the first "
    "case runs (bad options such as -j 0, a --report folder that is missing or read-only, a --repro-dir "
    "that cannot be written, an expectations file that does not load); 130 interrupted by Ctrl-C or "
    "SIGTERM: the report still holds every case that finished (settings.interrupted true, summary.ok "
    "false). Expectations entries that matched no case are warnings (stderr and summary.warnings).")
SUITE_CHOICES = SPEC_SUITES + ("all",)


class TestUsageError(Exception):
    """A problem found before the first case runs: one line, exit 2, nothing written."""


def add_test_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--backend", action="append", metavar="NAME", dest="backend",
                        help="backend to test (repeatable): onnxruntime, onnx-reference, reference, module:Class, "
                             "or a name from the opkit.backends entry-point group")
    parser.add_argument("--op", action="append", metavar="OP",
                        help="only this op (repeatable; 'Trilu' or 'com.microsoft::Trilu'; default: every op "
                             "with a reference kernel); 'Add-14' the version introduced in opset 14, 'Add@13' "
                             "the version a model of opset 13 uses, 'Add@7..13' those of opsets 7 to 13")
    parser.add_argument("--opset", action="append", metavar="N",
                        help="test what a model of this opset uses: of each op, the version in force at opset N "
                             "(ai.onnx; DOMAIN:N for another domain; ops that do not exist there are left out)")
    parser.add_argument("--suite", action="append", choices=SUITE_CHOICES, metavar="SUITE",
                        help="examples, properties, differential, robustness (hostile inputs: a crash or hang "
                             "is a finding, any answer else passes), lowerings or all (default: all; repeatable)")
    parser.add_argument("--max-examples", type=int, default=100, metavar="N",
                        help="hypothesis examples per (op version, type binding) (default 100)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="per-case time limit; the backend worker is killed and restarted (default 10)")
    parser.add_argument("--report", metavar="FILE.json", help="write the JSON report here")
    parser.add_argument("--junit-xml", metavar="FILE.xml",
                        help="also write the cases as JUnit XML (one testcase per case: xfail and untested "
                             "skipped, a wrong value or refusal a failure, an error, crash or hang an error), "
                             "for CI systems (docs/ci.md)")
    parser.add_argument("--repro-dir", metavar="DIR",
                        help="write a repro bundle per distinct failure here (default: .opkit/repro)")
    parser.add_argument("--no-repro", action="store_true", help="write no repro bundles")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                        help="run N ops at a time, each in its own process with its own backend workers "
                             "(at least 1; default 1)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the ops on the Dask cluster whose scheduler is at ADDRESS (e.g. "
                             "tcp://10.0.0.5:8786; default: $DASK_SCHEDULER_ADDRESS, else here); needs "
                             f"{pip_install('dask')} here and opkit with the backend on every worker "
                             "(docs/scale-out.md)")
    parser.add_argument("--expectations", action="append", metavar="FILE",
                        help="expectations file (repeatable; default conformance/expectations/<backend>.yaml)")
    parser.add_argument("--no-expectations", action="store_true", help="ignore expectations files")
    parser.add_argument("--providers", metavar="LIST",
                        help="onnxruntime execution providers, comma separated (default CPUExecutionProvider)")
    parser.add_argument("--no-isolate", action="store_true",
                        help="run backends in this process (faster start, no crash/timeout protection)")
    parser.add_argument("--siblings", type=int, default=15, metavar="N",
                        help="extra derived cases per hypothesis example, run in one round trip (default 15)")
    parser.add_argument("--max-bindings", type=int, default=64, metavar="N",
                        help="type bindings per op version: all of them up to N, else a subset covering every "
                             "type of every parameter (default 64; 0: all)")
    parser.add_argument("--probe-limit", type=int, default=PROBE_LIMIT, metavar="N",
                        help="bindings past --max-bindings get a few examples each (a missing type "
                             f"registration shows at the first): all of them when an op version has at most N "
                             f"(default {PROBE_LIMIT}: every Cast pair), else a set covering every pair of types; "
                             "0: none")
    parser.add_argument("--shrink-budget", type=int, default=None, metavar="N",
                        help="draws hypothesis may spend shrinking each failure to a minimal repro (default 60; "
                             "lower it for engines that compile every model, e.g. 10)")
    parser.add_argument("--memory-limit", type=float, default=4.0, metavar="GB",
                        help="resident-memory limit per backend worker and the processes it starts (a killed "
                             "case says so), and address-space limit of the runner's own reference kernels, so "
                             "absurd drawn inputs cannot exhaust the machine (default 4; 0: none)")
    parser.add_argument("--second-opinion", action="append", metavar="NAME", dest="second_opinion",
                        help="also run each failure's minimal case on this engine and record whether it agrees "
                             "with opkit or with the runtime (repeatable; default: onnx-reference, onnx's "
                             "ReferenceEvaluator, and onnxruntime, each when installed and not the backend under "
                             "test)")
    parser.add_argument("--no-second-opinion", action="store_true", help="ask no other engine about failures")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress, no table; failures only")
    if EXIT_CODES_HELP not in (parser.epilog or ""):
        parser.epilog = f"{parser.epilog}\n\n{EXIT_CODES_HELP}" if parser.epilog else EXIT_CODES_HELP
    return parser


def _check_options(args) -> None:
    if args.max_examples < 1:
        raise TestUsageError("--max-examples must be at least 1")
    if args.timeout <= 0:
        raise TestUsageError("--timeout must be positive")
    if args.shrink_budget is not None and args.shrink_budget < 0:
        raise TestUsageError("--shrink-budget must be 0 or more")
    if args.jobs is None or args.jobs < 1:
        raise TestUsageError(f"-j/--jobs must be at least 1 (got {args.jobs})")
    if args.siblings < 0:
        raise TestUsageError("--siblings must be 0 or more")
    if args.max_bindings < 0:
        raise TestUsageError("--max-bindings must be 0 (all) or more")
    if args.probe_limit < 0:
        raise TestUsageError("--probe-limit must be 0 (no probes) or more")
    if args.memory_limit < 0:
        raise TestUsageError("--memory-limit must be 0 (none) or more")


def _suites(args) -> list[str]:
    chosen = args.suite or ["all"]
    if "all" in chosen:
        return list(SPEC_SUITES)
    return list(dict.fromkeys(chosen))
