"""Time opkit's docs rendering against onnx's gen_doc.py, in one process.

    python benchmarks/bench_docs.py [--repeat N]

opkit: import the docs emitters, load every spec, render Changelog.md + Changelog-ml.md, the operator
index and (when present) the per-op pages of opkit/emit/docs_pages.py. Nothing is written.
onnx: import onnx.defs.gen_doc (which collects every node-test snippet) and run its main() for the
(Operators.md, Changelog.md) and (Operators-ml.md, Changelog-ml.md) pairs into a temporary folder.
Target: opkit <= 2 s for everything.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = os.path.join(ROOT, "specs")
TARGET = 2.0


def bench_opkit() -> dict[str, float]:
    t = {}
    start = time.perf_counter()
    from opkit.emit import GenContext, changelog, operator_index
    from opkit.spec.load import load_specs
    try:
        docs_pages = importlib.import_module("opkit.emit.docs_pages")
    except ModuleNotFoundError:
        docs_pages = None
    t["import"] = time.perf_counter() - start

    mark = time.perf_counter()
    specs, diags = load_specs([SPECS])
    if diags:
        sys.exit(f"{len(diags)} spec errors; run `opkit validate`")
    t["load specs"] = time.perf_counter() - mark
    ctx = GenContext(tuple(specs), ROOT)

    mark = time.perf_counter()
    files = changelog.emit(ctx)
    t["changelog (both)"] = time.perf_counter() - mark
    mark = time.perf_counter()
    files.update(operator_index.emit(ctx))
    t["operator index"] = time.perf_counter() - mark
    if docs_pages is not None:
        mark = time.perf_counter()
        pages = docs_pages.emit(ctx)
        t[f"op pages ({len(pages)} files)"] = time.perf_counter() - mark
        files.update(pages)
    t["total"] = time.perf_counter() - start
    t["_bytes"] = sum(len(text.encode("utf-8")) for text in files.values())
    return t


def bench_gen_doc() -> dict[str, float]:
    t = {}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.defs import gen_doc
    t["import onnx.defs.gen_doc"] = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "docs"))
        saved = gen_doc.__file__
        gen_doc.__file__ = os.path.join(tmp, "onnx", "defs", "gen_doc.py")
        try:
            mark = time.perf_counter()
            gen_doc.main(gen_doc.Args("Operators.md", "Changelog.md"))
            gen_doc.main(gen_doc.Args("Operators-ml.md", "Changelog-ml.md"))
            t["main() x2"] = time.perf_counter() - mark
        finally:
            gen_doc.__file__ = saved
        t["_bytes"] = sum(os.path.getsize(os.path.join(tmp, "docs", f)) for f in os.listdir(os.path.join(tmp, "docs")))
    t["total"] = time.perf_counter() - start
    return t


def _print(title: str, t: dict[str, float]) -> None:
    print(title)
    for key, value in t.items():
        if not key.startswith("_"):
            print(f"  {key:<28} {value:8.3f} s")
    print(f"  {'output':<28} {t['_bytes'] / 1e6:8.2f} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="opkit runs (best is reported; imports are cached)")
    args = parser.parse_args()
    runs = [bench_opkit() for _ in range(max(1, args.repeat))]
    first, best = runs[0], min(runs, key=lambda r: r["total"])
    _print("opkit, first run (cold imports)", first)
    if len(runs) > 1:
        _print(f"opkit, best of {len(runs)}", best)
    peer = bench_gen_doc()
    _print("onnx gen_doc (peer)", peer)
    ok = first["total"] <= TARGET
    print(f"\nopkit {first['total']:.2f} s (cold) / {best['total']:.2f} s (warm) vs gen_doc {peer['total']:.2f} s: "
          f"{peer['total'] / first['total']:.1f}x faster cold; target <= {TARGET:.0f} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
