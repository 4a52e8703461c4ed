"""The signal family hook draws valid cases (opkit.cases.families.signal)."""

from __future__ import annotations

import pytest

from family_cases import kernel_versions, op_cases, assert_mostly_valid

FAMILY = "signal"
OPS = ["DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"]

def _versions():
    return kernel_versions(OPS)


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == FAMILY
    assert_mostly_valid(spec, version, 3, 8)


def _drawn(op, since, n=60):
    return [(dict(case.attributes), dict(case.inputs)) for case in op_cases(op, since, n, seed_value=1)]


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
