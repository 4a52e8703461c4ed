"""Recall: how many runtime bugs that others know of does opkit find?

Two measurements, both against lists kept in ``conformance/recall/`` (see its README):

``peer``: a peer project's list of a runtime's known failures, matched against a committed sweep
report (no run needed)::

    python benchmarks/recall.py peer conformance/recall/onnx-tests-onnxruntime.yaml \\
        conformance/reports/onnxruntime-sweep.json

``releases``: known, since-fixed bugs of older onnxruntime releases. For each bug, ``opkit test
--backend onnxruntime --op OP`` runs in a venv with a release that has the bug (made on demand
under ``--venvs``: ``python -m venv``, then ``pip install -e <this checkout> onnxruntime==X``) and
in one with the release that fixed it (``--fixed``, default: this interpreter's). Found means a
failure of the bug's kind in the broken release; fixed means none in the fixed one::

    python benchmarks/recall.py releases conformance/recall/onnxruntime-known-bugs.yaml \\
        --venvs /tmp/ort --runs /tmp/recall-runs

Both print a table and, with ``--markdown FILE``, write it as a Markdown section (for
docs/recall.md). Exit code 0; the numbers are the result.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from opkit.results.recall import (
    FIXED_SETTLEMENTS,
    audit_judge,
    findings,
    first_broken_release,
    KnownFailureError,
    load_known,
    match,
    recall,
    settle,
)
from opkit.results.audit import load_audit  # noqa: E402


def _table(rows: list[tuple], header: tuple) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in row) + " |" for row in rows]
    return "\n".join(out)


def peer(args) -> str:
    head, known = load_known(args.known)
    with open(args.report, encoding="utf-8") as f:
        report = json.load(f)
    matches = [match(k, report["cases"], audit_judge(report, load_audit(ROOT))) for k in known]
    found, total = recall(matches)
    rows = [(m.known.id, m.status, m.known.extra.get("verdict", ""), m.known.extra.get("peer_reason", ""),
             m.example[:120]) for m in matches]
    # entries the list's own verdicts set apart (fixed since, undefined by the text, rounding)
    deviations = [m for m in matches if m.known.extra.get("verdict", "deviates") == "deviates"]
    found_dev, total_dev = recall(deviations)
    versions = ", ".join(f"{b.get('name')} {b.get('version')}" for b in report.get("target", {}).get("backends", []))
    text = [f"{head.get('title', args.known)} ({versions}): opkit reports a failure for **{found} of {total}** "
            f"entries; of the {total_dev} that still deviate from the ONNX text on this release, "
            f"**{found_dev}**.", "", _table(rows, ("entry", "opkit", "verdict", "peer's reason", "opkit's message"))]
    return "\n".join(text)


def _venv(root: str, release: str) -> str:
    """The venv of onnxruntime ``release`` (made when missing); returns its opkit executable."""
    path = os.path.join(root, release)
    exe = os.path.join(path, "bin", "opkit")
    if os.path.exists(exe):
        return exe
    subprocess.run([sys.executable, "-m", "venv", path], check=True)
    minor = int(release.split(".")[1])
    numpy = "numpy<2" if minor < 19 else "numpy"  # releases before 1.19 were built against NumPy 1
    subprocess.run([os.path.join(path, "bin", "pip"), "install", "-q", "-e", ROOT, f"onnxruntime=={release}", numpy,
                    "ml_dtypes<0.6"], check=True)
    return exe


def _bundles(report_path: str) -> str:
    return report_path[:-len(".json")] + "-repro"


def _replay(python: str, case: dict, report_path: str) -> int | None:
    """Exit status of a finding's repro bundle run by ``python`` (the fixed release's): 0 when the
    discrepancy is gone there, 1 while it reproduces (a killed process counts as reproducing), None
    when the finding has no bundle or the bundle hangs."""
    bundle = case.get("repro")
    if not bundle:
        return None
    if not os.path.isabs(bundle):
        bundle = os.path.join(_bundles(report_path), bundle) if not os.path.isdir(bundle) else bundle
    script = os.path.join(bundle, "repro.py")
    if not os.path.exists(script):
        return None
    try:
        rc = subprocess.run([python, script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            timeout=120).returncode
    except subprocess.TimeoutExpired:
        return None
    return 1 if rc < 0 else rc  # a signal: the process died, as the finding did


def _run(exe: str, op: str, versions, out: str, examples: int) -> dict:
    if not os.path.exists(out):
        selector = op if not versions else f"{op}@{min(versions)}..{max(versions)}"
        started = time.perf_counter()
        # each run keeps its own repro bundles: the broken release's are replayed on the fixed one
        subprocess.run([exe, "test", "--backend", "onnxruntime", "--op", selector, "--max-examples", str(examples),
                        "--report", out, "--repro-dir", _bundles(out), "-q"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"  {os.path.basename(out)}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def releases(args) -> str:
    _, known = load_known(args.known)
    os.makedirs(args.runs, exist_ok=True)
    audit = load_audit(ROOT)
    fixed_exe = args.fixed or os.path.join(os.path.dirname(sys.executable), "opkit")
    plan = {}
    for k in known:
        broken = first_broken_release(k)
        tag = f"{k.op}-{'-'.join(map(str, k.versions))}"
        plan[k.id] = ((_venv(args.venvs, broken), k.op, k.versions, os.path.join(args.runs, f"{broken}-{tag}.json")),
                      (fixed_exe, k.op, k.versions, os.path.join(args.runs, f"fixed-{tag}.json")))
    runs = {r[3]: r for pair in plan.values() for r in pair}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # each run is its own opkit process
        reports = dict(zip(runs, pool.map(lambda r: _run(*r, args.max_examples), runs.values())))
    fixed_python = os.path.join(os.path.dirname(fixed_exe), "python")
    rows, found_n, fixed_n, gone_n = [], 0, 0, 0
    # a bug the list's own verdict calls undefined by the text is run and shown, never counted:
    # opkit does not charge a runtime with it (Range's int32 overflow: the formula and ONNX's
    # function body disagree)
    charged = [k for k in known if k.extra.get("verdict", "deviates") == "deviates"]
    for k in known:
        broken = first_broken_release(k)
        (old, new), old_path = (reports[r[3]] for r in plan[k.id]), plan[k.id][0][3]
        judge = audit_judge(old, audit)
        before = match(k, old["cases"], judge)
        after = match(k, new["cases"], audit_judge(new, audit))
        counted = k in charged
        found_n += counted and before.status == "found"
        fixed_n += counted and before.status == "found" and after.status != "found"
        # the case, not the kind, decides: is a finding of the broken release gone on the fixed one?
        settled = settle([_replay(fixed_python, c, old_path) for c in findings(k, old["cases"], judge)]) \
            if before.status == "found" else ""
        gone_n += counted and settled in FIXED_SETTLEMENTS
        rows.append((k.id, k.op, k.cls, k.extra.get("verdict", "deviates"), broken, before.status,
                     "fixed" if after.status != "found" else "still fails", settled, before.example[:100]))
    apart = len(known) - len(charged)
    text = [f"Known since-fixed onnxruntime bugs ({len(known)}"
            + (f"; {apart} the list's verdict sets apart as not a deviation from the ONNX text, shown and not "
               f"counted" if apart else "") + f"): of the {len(charged)} counted, opkit finds **{found_n}** "
            f"({100.0 * found_n / max(1, len(charged)):.0f}%) on a release that has them, by kind of failure; the "
            f"fixed release's own run shows none of that kind for **{fixed_n}** of those; a finding's repro bundle "
            f"no longer fails as recorded on the fixed release (the bug found is one the fix removed: 'gone', "
            f"or 'changed' when the case now fails another way) for **{gone_n}** "
            f"({100.0 * gone_n / max(1, len(charged)):.0f}%).", "",
            _table(rows, ("bug", "op", "class", "verdict", "broken release", "opkit on it", "fixed release's run",
                          "finding on the fixed release", "message"))]
    return "\n".join(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("peer", help="match a peer's known-failure list against a report")
    p.add_argument("known")
    p.add_argument("report")
    r = sub.add_parser("releases", help="run opkit on older releases with known bugs")
    r.add_argument("known")
    r.add_argument("--venvs", default="/tmp/ort", help="where the per-release venvs are (made when missing)")
    r.add_argument("--runs", default="/tmp/recall-runs", help="where the reports go (kept: a rerun reuses them)")
    r.add_argument("--fixed", default=None, help="opkit executable of the fixed release (default: this venv's)")
    r.add_argument("--max-examples", type=int, default=20)
    r.add_argument("-j", "--jobs", type=int, default=2, help="opkit runs at once (default 2)")
    for q in (p, r):
        q.add_argument("--markdown", default=None, help="also write the table to this file")
    args = parser.parse_args(argv)
    try:
        text = peer(args) if args.what == "peer" else releases(args)
    except KnownFailureError as exc:  # a bad list: one line naming file and entry, no traceback
        print(f"recall: {exc}", file=sys.stderr)
        return 2
    print(text)
    if args.markdown:
        tmp = args.markdown + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
