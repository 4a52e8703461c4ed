"""The attention family hook draws valid cases (opkit.cases.families.attention)."""

from __future__ import annotations

import numpy as np
import pytest

from family_cases import kernel_versions, op_cases, assert_mostly_valid

FAMILY = "attention"
OPS = ["Attention", "RotaryEmbedding", "LinearAttention", "CausalConvWithState"]

def _versions():
    return kernel_versions(OPS)


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == FAMILY
    assert_mostly_valid(spec, version, 3, 8)


def _drawn(op, since, n=60, types=None):
    return [(dict(case.attributes), dict(case.inputs)) for case in op_cases(op, since, n, seed_value=1, types=types)]


def test_attention_layouts_and_caches():
    for since in (23, 24, 25):
        drawn = _drawn("Attention", since, 120)
        three = [(a, i) for a, i in drawn if i["Q"].ndim == 3]
        four = [(a, i) for a, i in drawn if i["Q"].ndim == 4]
        assert three and four
        assert all(a["q_num_heads"] % a["kv_num_heads"] == 0 for a, _ in three)
        assert any(a["q_num_heads"] > a["kv_num_heads"] for a, _ in three)  # GQA / MQA
        assert any(i["Q"].shape[1] > i["K"].shape[1] for _, i in four)
        assert any(i["past_key"] is not None for _, i in drawn)
        assert all((i["past_key"] is None) == (i["past_value"] is None) for _, i in drawn)
        # a mask is boolean or of Q's type (the attn_mask text): none under other bindings of U
        assert all(i["attn_mask"] is None or i["attn_mask"].dtype in (np.bool_, i["Q"].dtype) for _, i in drawn)
        for mask_type in ("tensor(bool)", "tensor(float)"):
            with_masks = _drawn("Attention", since, 30, types={"T1": "tensor(float)", "T2": "tensor(float)",
                                                                "U": mask_type})
            assert any(i["attn_mask"] is not None for _, i in with_masks), mask_type
        assert any(a.get("is_causal") == 1 for a, _ in drawn)
        assert {a.get("qk_matmul_output_mode") for a, _ in drawn} >= {0, 1, 2, 3}
        assert any(a.get("softcap") for a, _ in drawn) and any(a.get("scale") is not None for a, _ in drawn)
    assert any(i["nonpad_kv_seqlen"] is not None for _, i in _drawn("Attention", 24, 80))
    assert any(a.get("left_window_size", -1) >= 0 for a, _ in _drawn("Attention", 25, 80))


def test_rotary_positions_in_range():
    drawn = _drawn("RotaryEmbedding", 23, 80)
    with_ids = [i for _, i in drawn if i["position_ids"] is not None]
    assert with_ids and any(i["position_ids"] is None for _, i in drawn)
    for i in with_ids:
        assert 0 <= i["position_ids"].min() and i["position_ids"].max() < i["cos_cache"].shape[0]
    assert any(i["X"].ndim == 3 for _, i in drawn) and any(i["X"].ndim == 4 for _, i in drawn)
    assert any(a.get("interleaved") == 1 for a, _ in drawn)
    assert any(a.get("rotary_embedding_dim") and i["cos_cache"].shape[-1] * 2 < i["X"].shape[-1]
               for a, i in drawn if i["X"].ndim == 4)  # partial rotation


def test_linear_attention_rules():
    drawn = _drawn("LinearAttention", 27, 80)
    rules = {a.get("update_rule", "gated_delta") for a, _ in drawn}
    assert rules == {"linear", "gated", "delta", "gated_delta"}
    for a, i in drawn:
        rule = a.get("update_rule", "gated_delta")
        assert (i["decay"] is not None) == ("gated" in rule)
        assert (i["beta"] is not None) == ("delta" in rule)


def test_causal_conv_state():
    drawn = _drawn("CausalConvWithState", 27)
    for _, i in drawn:
        if i["past_state"] is not None:
            assert i["past_state"].shape[-1] == i["weight"].shape[-1] - 1
    assert any(i["past_state"] is not None and i["past_state"].shape[-1] > 0 for _, i in drawn)
