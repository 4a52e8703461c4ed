"""Trilu on a 4096x4096 float32 input: opkit's generated reference kernel vs np.triu/np.tril and
onnxruntime, in the same run (Kernels issue targets: faster than np.triu, within 1.5x of
onnxruntime, peak memory <= 2x the output size).

Run on demand: python benchmarks/bench_trilu.py [--runs N] [--size N]
Peak memory is measured with tracemalloc (numpy reports its buffers to it) for opkit and numpy;
onnxruntime allocates outside Python, so only its time is compared.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from opkit.kernels.registry import get_kernel  # noqa: E402


def best(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def peak(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, high = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return high


def ort_session(upper: int):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)
    graph = helper.make_graph([node], "trilu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                                helper.make_tensor_value_info("k", TensorProto.INT64, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=10)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]), ort.__version__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--size", type=int, default=4096)
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal((args.size, args.size), dtype=np.float32)
    trilu = get_kernel("ai.onnx", "Trilu", 14)
    out_mb = x.nbytes / 2**20
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, numpy {np.__version__}")
    print(f"input {x.shape} float32, output {out_mb:.0f} MiB; best / median of {args.runs} runs\n")
    print(f"{'case':<16}{'opkit':>18}{'numpy':>18}{'onnxruntime':>18}{'opkit/numpy':>13}{'opkit/ort':>11}"
          f"{'peak opkit':>12}{'peak numpy':>12}")
    for upper, k in ((1, 0), (0, 0), (1, -100), (0, 1000)):
        kk = np.array(k, dtype=np.int64)
        ours = best(lambda: trilu(x, kk, upper=upper), args.runs)
        np_fn = (lambda: np.triu(x, k)) if upper else (lambda: np.tril(x, k))
        theirs = best(np_fn, args.runs)
        try:
            sess, _ = ort_session(upper)
            ort_t = best(lambda: sess.run(None, {"x": x, "k": kk}), args.runs)
            ort_col = f"{ort_t[0] * 1e3:7.1f}/{ort_t[1] * 1e3:5.1f} ms"
            ratio_ort = f"{ours[0] / ort_t[0]:10.2f}x"
        except ImportError:
            ort_col, ratio_ort = "not installed", "-"
        p_ours, p_np = peak(lambda: trilu(x, kk, upper=upper)), peak(np_fn)
        name = f"{'triu' if upper else 'tril'} k={k}"
        print(f"{name:<16}{ours[0] * 1e3:8.1f}/{ours[1] * 1e3:5.1f} ms{theirs[0] * 1e3:8.1f}/{theirs[1] * 1e3:5.1f} ms"
              f"{ort_col:>18}{ours[0] / theirs[0]:12.2f}x{ratio_ort:>11}"
              f"{p_ours / x.nbytes:10.2f}x{p_np / x.nbytes:11.2f}x")
    print("\npeak columns: tracemalloc peak / output size (target for opkit: <= 2x)")


if __name__ == "__main__":
    main()
