"""The ai.onnx.ml kernels on plain tensors (opkit.kernels.lib._ml) and their family hook (ml).

Kernels are checked against hand-computed values, on the points where the texts are easy to get
wrong (NaN against a threshold, a signed max, a zero divisor, the binary linear classifier, the
last repeated key); the hook against the rules: every drawn case is valid.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from family_cases import kernel_versions, op_cases, assert_mostly_valid
from opkit.kernels.lib import _ml as ml
from opkit.kernels.registry import get_kernel

OPS = ["Binarizer", "Scaler", "Normalizer", "ArrayFeatureExtractor", "Imputer", "LabelEncoder", "CategoryMapper",
       "OneHotEncoder", "FeatureVectorizer", "LinearRegressor", "LinearClassifier", "SVMRegressor", "SVMClassifier"]
F = np.float32


def test_binarizer_nan_and_exact_int_threshold():
    y = ml.ml_binarize(np.array([np.nan, 0.5, 0.50000006, -np.inf, np.inf], F), threshold=0.5)
    assert y.dtype == F and y.tolist() == [0, 0, 1, 0, 1]
    big = np.array([2**62, 2**62 + 1], np.int64)
    assert ml.ml_binarize(big, threshold=float(2**62)).tolist() == [0, 1]


def test_scaler_rounds_once_to_float():
    y = ml.ml_scale(np.array([[1, 3]], np.int64), offset=[1.0, 1.0], scale=[0.5, 0.25])
    assert y.dtype == F and y.tolist() == [[0.0, 0.5]]
    # one offset and one scale for every feature
    assert ml.ml_scale(np.array([2.0, 4.0]), offset=[1.0], scale=[3.0]).tolist() == [3.0, 9.0]


def test_normalizer_signed_max_zero_divisor_and_l2_sign():
    x = np.array([[-1.0, -2.0], [0.0, -3.0], [3.0, -4.0]], F)
    assert ml.ml_normalize(x, norm="MAX").tolist() == [[1.0, 2.0], [0.0, -3.0], [1.0, np.float32(-4 / 3)]]
    assert ml.ml_normalize(x, norm="L2")[2].tolist() == pytest.approx([0.6, -0.8])
    assert ml.ml_normalize(np.zeros((1, 3), F), norm="L1").tolist() == [[0.0, 0.0, 0.0]]
    assert ml.ml_normalize(np.array([1, -3], np.int32), norm="L1").tolist() == [0.25, -0.75]


def test_array_feature_extractor_shapes():
    x = np.arange(12).reshape(2, 2, 3)
    assert ml.ml_feature_extract(x, np.array([[2, 0]])).tolist() == [[[2, 0], [5, 3]], [[8, 6], [11, 9]]]
    assert ml.ml_feature_extract(np.array([7, 8, 9]), np.array([1])).shape == (1, 1)


def test_imputer_last_axis_and_nan():
    x = np.array([[[np.nan, 1.0], [2.0, np.nan]]], F)
    y = ml.ml_impute(x, imputed_value_floats=[10.0, 20.0], replaced_value_float=float("nan"))
    assert y.tolist() == [[[10.0, 1.0], [2.0, 20.0]]]
    y = ml.ml_impute(np.array([-1, 4, -1], np.int32), imputed_value_int64s=[9], replaced_value_int64=-1)
    assert y.dtype == np.int32 and y.tolist() == [9, 4, 9]


def test_label_encoder_versions():
    # version 1: both directions, the first index of a label
    s = np.array(["b", "z"], object)
    assert ml.ml_label_encode(s, classes_strings=["a", "b"], default_int64=-7).tolist() == [1, -7]
    assert ml.ml_label_encode(np.array([1, 2, -1]), classes_strings=["a", "b"], default_string="?").tolist() == \
        ["b", "?", "?"]
    # version 2/4: NaN key, float output, default_float
    y = ml.ml_label_encode(np.array([np.nan, 1.5, 3.0], F), keys_floats=[float("nan"), 1.5], values_floats=[1.0, 2.0],
                           default_float=-0.5)
    assert y.dtype == F and y.tolist() == [1.0, 2.0, -0.5]
    # version 4: the last repeated key wins; tensor keys and values with a default tensor
    y = ml.ml_label_encode(np.array([1]), keys_int64s=[1, 1], values_strings=["first", "last"])
    assert y.tolist() == ["last"]
    y = ml.ml_label_encode(np.array([3, 4], np.int16), keys_tensor=np.array([3], np.int16),
                           values_tensor=np.array([2.5]), default_tensor=np.array([-1.0]))
    assert y.dtype == np.float64 and y.tolist() == [2.5, -1.0]


def test_category_mapper_and_one_hot():
    y = ml.ml_category_map(np.array([["dog", "x"]], object), cats_strings=["cat", "dog"], cats_int64s=[1, 2])
    assert y.tolist() == [[2, -1]]
    assert ml.ml_category_map(np.array([2, 5]), cats_strings=["cat", "dog"], cats_int64s=[1, 2]).tolist() == \
        ["dog", "_Unused"]
    y = ml.ml_one_hot(np.array([2.75, -1.5]), cats_int64s=[-1, 2])
    assert y.shape == (2, 2) and y.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert not ml.ml_one_hot_defined(np.array([5]), [1, 2], None, 0)
    assert not ml.ml_one_hot_defined(np.array([np.nan]), [1], None, 1)


def test_feature_vectorizer():
    y = ml.ml_feature_vectorize([np.array([1.5, 2.5]), np.array([3], np.int64)], inputdimensions=[2, 1])
    assert y.dtype == F and y.tolist() == [[1.5, 2.5, 3.0]]


def test_probit_is_inverse_normal_cdf():
    p = np.array([0.5, 0.975, 0.025, 0.8413447460685429, 1.5])
    z = ml.ml_probit(p)
    assert z[:4] == pytest.approx([0.0, 1.959963984540054, -1.959963984540054, 1.0], abs=1e-12)
    assert math.isnan(z[4])


def test_post_transforms():
    s = np.array([[0.0, 1.0, -1.0]])
    assert ml.ml_post_transform(s, "LOGISTIC")[0, 0] == 0.5
    sz = ml.ml_post_transform(s, "SOFTMAX_ZERO")[0]
    assert sz[0] == 0.0 and sz[1:].sum() == pytest.approx(1.0) and sz[1] > sz[2]
    assert ml.ml_post_transform(s, "SOFTMAX")[0].sum() == pytest.approx(1.0)
    assert np.isnan(ml.ml_post_transform(np.array([[np.nan, 1.0, 0.0]]), "SOFTMAX_ZERO")).all()
    assert not ml.ml_transform_defined(np.array([[0.0, 0.0]]), "SOFTMAX_ZERO")
    assert not ml.ml_transform_defined(np.array([[1e-8, 1.0]]), "SOFTMAX_ZERO")


def test_linear_models():
    y = ml.ml_linear_regress(np.array([[1.0, 2.0]]), coefficients=[1.0, 1.0, 2.0, -1.0], intercepts=[0.5, 0.0],
                             targets=2)
    assert y.tolist() == [[3.5, 0.0]]
    # the binary model: one row, two labels, scores [-s, s], label[1] only where s > 0
    labels, z = ml.ml_linear_classify(np.array([[1.0], [-1.0], [0.0]], F), coefficients=[2.0], intercepts=[0.0],
                                      classlabels_strings=["no", "yes"])
    assert labels.tolist() == ["yes", "no", "no"] and z.tolist() == [[-2.0, 2.0], [2.0, -2.0], [0.0, 0.0]]
    labels, z = ml.ml_linear_classify(np.array([[1.0, 0.0]], F), coefficients=[1.0, 0.0, 0.0, 1.0, 1.0, 0.0],
                                      classlabels_ints=[5, 6, 7], post_transform="LOGISTIC")
    assert labels.tolist() == [5]  # a tie: the first class
    assert z[0].tolist() == pytest.approx([1 / (1 + math.exp(-1)), 0.5, 1 / (1 + math.exp(-1))])


def test_svm_regressor_kernels():
    x = np.array([[1.0, 2.0]])
    sv = dict(n_supports=1, support_vectors=[1.0, 0.0], coefficients=[2.0], rho=[0.5])
    assert ml.ml_svm_regress(x, kernel_type="LINEAR", **sv).tolist() == [[2.5]]
    assert ml.ml_svm_regress(x, kernel_type="POLY", kernel_params=[1.0, 1.0, 3.0], **sv).tolist() == [[16.5]]
    assert ml.ml_svm_regress(x, kernel_type="RBF", kernel_params=[0.5, 0.0, 0.0], **sv)[0, 0] == \
        pytest.approx(2 * math.exp(-2) + 0.5)
    assert ml.ml_svm_regress(x, coefficients=[1.0, -1.0], rho=[0.5], one_class=1).tolist() == [[-1.0]]


def test_generated_kernels_enforce_rules():
    scaler = get_kernel("ai.onnx.ml", "Scaler", 1)
    with pytest.raises(ValueError, match="C2"):
        scaler(np.ones((2, 3), F), offset=[1.0, 2.0], scale=[1.0, 2.0])
    afe = get_kernel("ai.onnx.ml", "ArrayFeatureExtractor", 1)
    with pytest.raises(ValueError, match="C2"):
        afe(np.ones((2, 3), F), np.array([3]))


def _versions():
    return kernel_versions(OPS, domain="ai.onnx.ml")


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_hook_draws_valid_cases(spec, version):
    assert version.family == "ml" or spec.name == "Binarizer"
    assert_mostly_valid(spec, version, 3, 6)


@pytest.mark.parametrize("op,since", [("Scaler", 1), ("Imputer", 1), ("LinearClassifier", 1), ("SVMRegressor", 1)])
def test_attributes_sized_to_input(op, since):
    for case in op_cases(op, since, 30, seed_value=2, domain="ai.onnx.ml"):
        a, x = dict(case.attributes), dict(case.inputs)["X"]
        c = x.shape[-1]
        if op == "Scaler":
            assert len(a["scale"]) == len(a["offset"]) in (1, c)
        elif op == "Imputer":
            imputed = a.get("imputed_value_floats") or a.get("imputed_value_int64s")
            assert len(imputed) in (1, c)
        elif op == "LinearClassifier":
            rows = len(a["coefficients"]) // c
            labels = a.get("classlabels_ints") or a.get("classlabels_strings")
            assert len(a["coefficients"]) == rows * c and (len(labels) == rows or (rows == 1 and len(labels) == 2))
            assert not (a.get("classlabels_ints") and a.get("classlabels_strings"))
        else:
            n = a.get("n_supports") or 0
            assert len(a["coefficients"]) == (n if n else c)
            if n:
                assert len(a["support_vectors"]) == n * c


def test_svm_classifier_linear_mode():
    labels, z = ml.ml_svm_classify(np.array([[1.0, 2.0], [3.0, 0.0]], F), classlabels_ints=[4, 5],
                                   coefficients=[1.0, 0.0, 0.0, 1.0], rho=[-1.0])
    assert labels.tolist() == [5, 4] and z.tolist() == [[0.0, 1.0], [2.0, -1.0]]


def test_svm_classifier_one_vs_one_layout_and_vote_tie():
    # V = 4 vectors of one feature, classes holding 1, 2 and 1 of them; coefficients [E-1, V]: the pair
    # (i, j) takes row j-1 over class i's vectors and row i over class j's (libsvm's layout)
    x = np.array([[1.0]], F)
    model = dict(vectors_per_class=[1, 2, 1], support_vectors=[1.0, 2.0, -1.0, 3.0], kernel_type="LINEAR",
                 kernel_params=[0.0, 0.0, 0.0], coefficients=[1.0, 10.0, 100.0, 1000.0, 0.5, 0.25, 0.125, -1.0],
                 rho=[0.0, -0.5, 0.125], classlabels_ints=[7, 8, 9])
    labels, z = ml.ml_svm_classify(x, **model)
    # d01 = 1*1 + 10*2 + 100*(-1); d02 = 0.5*1 + 1000*3 - 0.5; d12 = 0.25*2 + 0.125*(-1) - 1*3 + 0.125
    assert z.tolist() == [[-79.0, 3000.0, -2.5]]
    # votes: (0,1) -> 1, (0,2) -> 0, (1,2) -> 2: a three-way tie, the first class wins
    assert labels.tolist() == [7]
    labels, _ = ml.ml_svm_classify(x, **{**model, "rho": [80.0, -0.5, 0.125]})
    assert labels.tolist() == [7]
    labels, _ = ml.ml_svm_classify(x, **{**model, "rho": [0.0, -3001.0, 0.125]})
    assert labels.tolist() == [9]  # (0,1) -> 1, (0,2) -> 2, (1,2) -> 2


def test_svm_classifier_two_classes_kernels_and_zero_vote():
    model = dict(vectors_per_class=[1, 1], support_vectors=[1.0, 0.0, 0.0, 1.0], coefficients=[1.0, -1.0],
                 rho=[-0.5], classlabels_strings=["a", "b"])
    x = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], F)
    labels, z = ml.ml_svm_classify(x, kernel_type="POLY", kernel_params=[1.0, 1.0, 2.0], **model)
    assert labels.tolist() == ["a", "b", "b"] and z.tolist() == [[-2.5, 2.5], [3.5, -3.5], [0.5, -0.5]]
    labels, z = ml.ml_svm_classify(x[:1], kernel_type="RBF", kernel_params=[0.5, 0.0, 0.0], **model)
    assert z[0, 1] == pytest.approx(1.0 - math.exp(-1.0) - 0.5)
    _, z = ml.ml_svm_classify(x[:1], kernel_type="SIGMOID", kernel_params=[2.0, -1.0, 0.0], **model)
    assert z[0, 1] == pytest.approx(math.tanh(1.0) - math.tanh(-1.0) - 0.5)
    # a decision value of exactly 0 votes for the second class of the pair
    labels, _ = ml.ml_svm_classify(x[2:], kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0],
                                   **{**model, "rho": [0.0]})
    assert labels.tolist() == ["b"]


def test_svm_coupling_recovers_consistent_probabilities():
    p = np.array([0.5, 0.3, 0.2])
    r = p[:, None] / (p[:, None] + p[None, :])
    np.fill_diagonal(r, 0.0)
    got, margin = ml.ml_svm_couple(r)
    assert got.sum() == pytest.approx(1.0) and got == pytest.approx(p, abs=5e-3) and margin > 0
    got, _ = ml.ml_svm_couple(np.array([[0.0, 0.5], [0.5, 0.0]]))
    assert got.tolist() == [0.5, 0.5]  # already optimal: no sweep


def test_svm_classifier_platt_sign_and_coupling():
    # one vector per class, LINEAR: d = x - 0.5; Platt r = 1 / (1 + exp(-2 d)) is class 0's probability
    model = dict(vectors_per_class=[1, 1], support_vectors=[1.0, 0.0], coefficients=[1.0, 1.0], rho=[-0.5],
                 kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0], prob_a=[-2.0], prob_b=[0.0],
                 classlabels_ints=[0, 1])
    labels, z = ml.ml_svm_classify(np.array([[1.0], [0.5]], F), **model)
    assert labels.tolist() == [0, 1]
    assert z[0].tolist() == pytest.approx([1 / (1 + math.exp(-1.0)), 1 / (1 + math.exp(1.0))], abs=5e-3)
    assert z[1].tolist() == [0.5, 0.5]
    # three classes: one probability per class, summing to 1, the class favoured in every pair largest
    three = dict(vectors_per_class=[1, 1, 1], support_vectors=[0.0, 2.0, 4.0], kernel_type="RBF",
                 kernel_params=[0.5, 0.0, 0.0], coefficients=[1.0, -1.0, -1.0, 1.0, 1.0, -1.0], rho=[0.0] * 3,
                 prob_a=[-3.0] * 3, prob_b=[0.0] * 3, classlabels_ints=[0, 1, 2])
    labels, z = ml.ml_svm_classify(np.array([[4.0]], F), **three)
    assert labels.tolist() == [2] and z.shape == (1, 3) and float(z.sum()) == pytest.approx(1.0, abs=1e-6)
    assert int(np.argmax(z[0])) == 2


def test_svm_classifier_rules_keep_undecided_cases_out():
    kernel = get_kernel("ai.onnx.ml", "SVMClassifier", 1)
    base = dict(vectors_per_class=[1, 1], support_vectors=[1.0, 0.0, 0.0, 1.0], coefficients=[1.0, -1.0],
                rho=[-0.5], kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0], classlabels_ints=[0, 1])
    x = np.array([[1.0, 0.0]], F)
    kernel(x, **base)  # valid
    with pytest.raises(ValueError, match="C7"):  # d = 0: rounding would decide the vote
        kernel(np.array([[0.5, 0.0]], F), **base)
    with pytest.raises(ValueError, match="C4"):  # one rho per pair
        kernel(x, **{**base, "rho": [0.0, 1.0]})
    with pytest.raises(ValueError, match="C6"):  # probabilities only with support vectors
        kernel(x, coefficients=[1.0, 0.0, 0.0, 1.0], rho=[0.0], classlabels_ints=[0, 1], prob_a=[-1.0],
               prob_b=[0.0], kernel_params=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="C9"):  # two classes: the runtimes disagree on SOFTMAX
        kernel(x, **{**base, "post_transform": "SOFTMAX"})
    with pytest.raises(ValueError, match="C8"):  # a fractional degree
        kernel(x, **{**base, "kernel_type": "POLY", "kernel_params": [1.0, 0.0, 1.5]})


def test_svm_classifier_hook_draws_both_modes():
    modes = set()
    for case in op_cases("SVMClassifier", 1, 60, seed_value=4, domain="ai.onnx.ml"):
        a, x = dict(case.attributes), dict(case.inputs)["X"]
        labels = a.get("classlabels_ints") or a.get("classlabels_strings")
        e, c, counts = len(labels), x.shape[-1], a.get("vectors_per_class")
        if not counts:
            modes.add("linear")
            assert len(a["coefficients"]) == e * c and len(a["rho"]) == 1 and not a.get("prob_a")
            continue
        v, pairs = sum(counts), e * (e - 1) // 2
        modes.add("probabilities" if a.get("prob_a") else "vectors")
        assert len(counts) == e and v >= 1 and min(counts) >= 0
        assert len(a["support_vectors"]) == v * c and len(a["coefficients"]) == (e - 1) * v
        assert len(a["rho"]) == pairs and len(a["kernel_params"]) == 3
        if a.get("prob_a"):
            assert len(a["prob_a"]) == len(a["prob_b"]) == pairs
        elif e == 2:
            assert a["post_transform"] in ("NONE", "LOGISTIC") and min(a["coefficients"]) < 0
    assert modes == {"linear", "vectors", "probabilities"}
