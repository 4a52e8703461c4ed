"""The ai.onnx.preview.training optimizers: Adagrad, Adam and Momentum kernels against values worked
by hand from the ONNX pseudo code, their rules, and the ``training`` family hook's cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from opkit.kernels import KernelValidationError
from opkit.kernels.lib import adagrad, adam, momentum
from opkit.kernels.registry import get_kernel

D = "ai.onnx.preview.training"
f32 = np.float32


def _f(*v):
    return np.array(v, f32)


def test_adagrad_hand_values():
    # r = 1; H_new = H + G^2 = [9, 25]; X_new = X - G / sqrt(H_new) = [1 - 1, -2 - 0.8]
    x, h = adagrad(f32(1), np.int64(0), [_f(1, -2), _f(3, 4), _f(0, 9)], epsilon=0.0)
    np.testing.assert_allclose(h, [9, 25])
    np.testing.assert_allclose(x, [0, -2.8], rtol=1e-6)
    assert x.dtype == np.float32 and h.dtype == np.float32


def test_adagrad_decay_and_regularization():
    # r = 0.3 / (1 + 2 * 0.5) = 0.15; G_reg = 0.5 * 2 + 1 = 2; H_new = 4; X_new = 2 - 0.15 * 2 / 2
    x, h = adagrad(f32(0.3), np.int64(2), [_f(2), _f(1), _f(0)], decay_factor=0.5, norm_coefficient=0.5, epsilon=0.0)
    assert h[0] == 4
    np.testing.assert_allclose(x, [1.85], rtol=1e-6)


def test_adam_bias_correction_only_after_first_step():
    inputs = [_f(1, 2), _f(2, -2), _f(0, 0), _f(0, 0)]
    x0, v0, h0 = adam(f32(1), np.int64(0), inputs, alpha=0.5, beta=0.75, epsilon=0.0)
    np.testing.assert_allclose(v0, [1, -1])
    np.testing.assert_allclose(h0, [1, 1])
    np.testing.assert_allclose(x0, [0, 3])
    x2, _, _ = adam(f32(1), np.int64(2), inputs, alpha=0.5, beta=0.75, epsilon=0.0)
    r = np.sqrt(1 - 0.75 ** 2) / (1 - 0.5 ** 2)
    np.testing.assert_allclose(x2, [1 - r, 2 + r], rtol=1e-6)


def test_adam_post_regularization_scales_the_update():
    x, _, _ = adam(f32(1), np.int64(0), [_f(4), _f(0), _f(0), _f(1)], norm_coefficient_post=0.5, epsilon=0.0)
    assert x[0] == 2.0  # V_new = 0: X unchanged, then halved


def test_momentum_first_step_ignores_beta():
    inputs = [_f(1, 2), _f(1, 1), _f(2, -2)]
    x, v = momentum(f32(0.5), np.int64(0), inputs, alpha=0.5, beta=0.25, mode="standard", norm_coefficient=0.0)
    np.testing.assert_array_equal(v, [2, 0])
    np.testing.assert_array_equal(x, [0, 2])
    x, v = momentum(f32(0.5), np.int64(1), inputs, alpha=0.5, beta=0.25, mode="standard", norm_coefficient=0.0)
    np.testing.assert_array_equal(v, [1.25, -0.75])


def test_momentum_nesterov_steps_along_gradient_plus_momentum():
    # G_reg = 0.5 * X + G = [2, -1]; V_new = 0.5 * V + 0.25 * G_reg = [1.5, -1.25]
    x, v = momentum(f32(0.5), np.int64(3), [_f(2, -4), _f(1, 1), _f(2, -2)], alpha=0.5, beta=0.25,
                    mode="nesterov", norm_coefficient=0.5)
    np.testing.assert_array_equal(v, [1.5, -1.25])
    np.testing.assert_array_equal(x, [2 - 0.5 * (2 + 0.75), -4 - 0.5 * (-1 - 0.625)])


def test_several_tensors_are_updated_independently():
    one = adagrad(f32(0.5), np.int64(1), [_f(1), _f(2), _f(3)])
    two = adagrad(f32(0.5), np.int64(1), [_f(1), _f(5, 6), _f(2), _f(7, 8), _f(3), _f(9, 9)])
    assert len(two) == 4
    np.testing.assert_array_equal(two[0], one[0])  # X_1 first, then X_2, H_1, H_2
    np.testing.assert_array_equal(two[2], one[1])
    assert two[1].shape == (2,) and two[3].shape == (2,)


def test_double_tensors_stay_double():
    out = adam(np.float64(0.1), np.int64(5), [np.ones(3)] * 4)
    assert all(o.dtype == np.float64 for o in out)


@pytest.mark.parametrize("op,inputs,rule", [
    ("Adagrad", [_f(1), _f(1)], "C1"),                       # not groups of 3
    ("Adagrad", [_f(1, 2), _f(1), _f(1, 2)], "C2"),          # gradient of another shape
    ("Adam", [_f(1)] * 3, "C1"),                            # Adam needs groups of 4
])
def test_rules_reject_malformed_groups(op, inputs, rule):
    with pytest.raises(KernelValidationError) as err:
        get_kernel(D, op, 1)(f32(0.1), np.int64(0), *inputs)
    assert err.value.rule == rule


def test_negative_update_count_is_rejected():
    with pytest.raises(KernelValidationError) as err:
        get_kernel(D, "Adagrad", 1)(f32(0.1), np.int64(-1), *[_f(1)] * 3)
    assert err.value.rule == "C3"


def test_momentum_mode_domain():
    with pytest.raises(KernelValidationError):
        get_kernel(D, "Momentum", 1)(f32(0.1), np.int64(0), *[_f(1)] * 3, alpha=0.5, beta=0.5, mode="heavy",
                                     norm_coefficient=0.0)


def _cases(op):
    from opkit.cases import cases
    from opkit.conformance import harness

    spec = harness.load_op(D, op)
    return spec, spec.versions[0], cases(spec, spec.versions[0])


@pytest.mark.parametrize("op,groups", [("Adagrad", 3), ("Adam", 4), ("Momentum", 3)])
def test_generated_cases_are_valid(op, groups):
    spec, version, strategy = _cases(op)
    kernel = get_kernel(D, op, 1)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(case):
        named = dict(case.inputs)
        tensors = [a for name, a in case.inputs if name.startswith("inputs")]
        n = len(tensors) // groups
        assert n >= 1 and len(tensors) == n * groups
        for i in range(n):
            assert all(tensors[i + g * n].shape == tensors[i].shape for g in range(groups))
        assert np.ndim(named["R"]) == 0 and int(named["T"]) >= 0
        assert case.n_outputs == n * (groups - 1)
        out = kernel(*case.positional(), **case.kernel_attributes())
        assert len(out) == n * (groups - 1)
        assert all(o.shape == t.shape for o, t in zip(out, tensors[:n] + tensors[2 * n:]))

    check()
