"""The signal family hook draws valid cases (opkit.cases.families.signal)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from opkit.cases.generator import cases
from opkit.cases.validity import measure
from opkit.conformance import harness
from opkit.strategies import covering_bindings


FAMILY = "signal"
OPS = ["DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"]

def _versions():
    for op in OPS:
        spec = harness.load_op("ai.onnx", op)
        for v in spec.versions:
            if v.kernel is not None:
                yield pytest.param(spec, v, id=f"{op}-{v.since}")


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == FAMILY
    bindings = covering_bindings(version)
    result = measure(spec, version, bindings[::max(1, len(bindings) // 3)][:3], 8)
    assert result.drawn and result.rate >= 0.9, result


def _drawn(op, since, n=60):
    spec = harness.load_op("ai.onnx", op)
    version = spec.version(since)
    out = []

    @seed(1)
    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.generate,))
    @given(cases(spec, version, initializers=False))
    def collect(case):
        out.append((dict(case.attributes), dict(case.inputs)))

    collect()
    return out


def test_dft_modes():
    for since in (17, 20):
        drawn = _drawn("DFT", since)
        # IRFFT (onesided + inverse) takes a complex signal, RFFT a real one
        irfft = [i for a, i in drawn if a.get("onesided") and a.get("inverse")]
        rfft = [i for a, i in drawn if a.get("onesided") and not a.get("inverse")]
        assert irfft and all(i["input"].shape[-1] == 2 for i in irfft)
        assert rfft and all(i["input"].shape[-1] == 1 for i in rfft)
        assert any(i["dft_length"] is not None for _, i in drawn)
        assert any(i["input"].ndim >= 4 for _, i in drawn)
    # negative axes, as an attribute (17) and as an input (20)
    assert any(a.get("axis", 0) < 0 for a, _ in _drawn("DFT", 17))
    assert any(i["axis"] is not None and int(i["axis"]) < 0 for _, i in _drawn("DFT", 20))


def test_stft_frame_sources():
    drawn = _drawn("STFT", 17)
    assert any(i["window"] is not None and i["frame_length"] is not None for _, i in drawn)
    assert any(i["window"] is None for _, i in drawn)
    assert any(i["frame_length"] is None for _, i in drawn)
    assert any(i["signal"].shape[-1] == 2 for _, i in drawn)
    assert any(int(i["frame_step"]) > 1 for _, i in drawn)


def test_window_sizes():
    drawn = _drawn("HannWindow", 17)
    sizes = {int(i["size"]) for _, i in drawn}
    assert 0 in sizes and max(sizes) >= 4
    assert {a.get("periodic") for a, _ in drawn} >= {0, 1}


def test_mel_edges_in_range():
    for _, i in _drawn("MelWeightMatrix", 17):
        lo, hi = float(i["lower_edge_hertz"]), float(i["upper_edge_hertz"])
        assert 0 <= lo < hi <= int(i["sample_rate"]) / 2
