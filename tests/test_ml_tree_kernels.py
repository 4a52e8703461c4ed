"""The ai.onnx.ml tree ensemble kernels against hand-computed values, their rules, and the
``ml_tree`` family hook's validity (every drawn ensemble satisfies the rules)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opkit.cases.context import Context
from opkit.cases.families import ml_tree
from opkit.kernels import KernelValidationError
from opkit.kernels.registry import get_kernel
from opkit.spec.load import load_specs_or_raise

# one tree: x0 <= 1 ? (leaf 1: +10 on target 0) : (x1 < 0 ? leaf 3: +20 on target 1 : leaf 4: +30 on target 0)
TREE = dict(nodes_treeids=[0, 0, 0, 0, 0], nodes_nodeids=[0, 1, 2, 3, 4],
            nodes_modes=["BRANCH_LEQ", "LEAF", "BRANCH_LT", "LEAF", "LEAF"], nodes_featureids=[0, 0, 1, 0, 0],
            nodes_values=[1.0, 0.0, 0.0, 0.0, 0.0], nodes_truenodeids=[1, 0, 3, 0, 0],
            nodes_falsenodeids=[2, 0, 4, 0, 0])
VOTES = dict(target_treeids=[0, 0, 0], target_nodeids=[1, 3, 4], target_ids=[0, 1, 0],
             target_weights=[10.0, 20.0, 30.0])
X = np.array([[0.5, 5.0], [2.0, -1.0], [2.0, 1.0]], np.float32)


def test_regressor_walks_each_row_to_its_leaf():
    Y = get_kernel("ai.onnx.ml", "TreeEnsembleRegressor", 3)(X, n_targets=2, **TREE, **VOTES)[0]
    assert Y.dtype == np.float32
    np.testing.assert_array_equal(Y, [[10, 0], [0, 20], [30, 0]])


def test_regressor_base_average_and_logistic():
    two = {k: v + v for k, v in TREE.items()}
    two["nodes_treeids"] = [0] * 5 + [1] * 5
    votes = dict(target_treeids=[0, 0, 0, 1, 1, 1], target_nodeids=[1, 3, 4] * 2, target_ids=[0, 1, 0] * 2,
                 target_weights=[10.0, 20.0, 30.0, 2.0, 4.0, 6.0])
    k = get_kernel("ai.onnx.ml", "TreeEnsembleRegressor", 3)
    Y = k(X, n_targets=2, aggregate_function="AVERAGE", base_values=[1.0, -1.0], **two, **votes)[0]
    np.testing.assert_allclose(Y, [[7, -1], [1, 11], [19, -1]])
    Y = k(X[:1], n_targets=1, post_transform="LOGISTIC", **TREE,
          **dict(VOTES, target_ids=[0, 0, 0], target_weights=[0.0, 1.0, 1.0]))[0]
    np.testing.assert_allclose(Y, [[0.5]])  # one target: logistic still applies (onnxruntime skips it)


def test_nan_follows_missing_value_tracks_even_for_neq():
    tree = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_modes=["BRANCH_NEQ", "LEAF", "LEAF"],
                nodes_featureids=[0, 0, 0], nodes_values=[1.0, 0, 0], nodes_truenodeids=[1, 0, 0],
                nodes_falsenodeids=[2, 0, 0], target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0],
                target_weights=[10.0, 20.0], n_targets=1)
    k = get_kernel("ai.onnx.ml", "TreeEnsembleRegressor", 1)
    nan = np.array([[np.nan]], np.float32)
    assert k(nan, **tree)[0][0, 0] == 20.0  # default: the false branch, as the text says
    assert k(nan, nodes_missing_value_tracks_true=[1, 0, 0], **tree)[0][0, 0] == 10.0


def test_min_max_without_a_vote_is_rejected():
    k = get_kernel("ai.onnx.ml", "TreeEnsembleRegressor", 3)
    with pytest.raises(KernelValidationError, match="D1"):
        k(X, n_targets=2, aggregate_function="MIN", **TREE, **VOTES)


def test_cycle_and_foreign_child_are_rejected():
    k = get_kernel("ai.onnx.ml", "TreeEnsembleRegressor", 3)
    bad = dict(TREE, nodes_truenodeids=[1, 0, 0, 0, 0])  # node 2 sends its true branch back to the root
    with pytest.raises(KernelValidationError, match="C3"):
        k(X, n_targets=2, **bad, **VOTES)
    with pytest.raises(KernelValidationError, match="C3"):
        k(X, n_targets=2, **dict(TREE, nodes_falsenodeids=[9, 0, 4, 0, 0]), **VOTES)
    with pytest.raises(KernelValidationError, match="C4"):
        k(X, n_targets=2, **dict(TREE, nodes_featureids=[2, 0, 1, 0, 0]), **VOTES)


def test_classifier_top_class_and_binary_case():
    k = get_kernel("ai.onnx.ml", "TreeEnsembleClassifier", 3)
    votes = dict(class_treeids=[0, 0, 0], class_nodeids=[1, 3, 4], class_ids=[0, 1, 2],
                 class_weights=[1.0, 2.0, 3.0])
    Y, Z = k(X, classlabels_strings=["a", "b", "c"], **TREE, **votes)
    assert Y.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(Z, [[1, 0, 0], [0, 2, 0], [0, 0, 3]])
    # binary: two labels, every vote for class 0 -> (1 - s, s), label 1 when s > 0.5
    binary = dict(class_treeids=[0, 0, 0], class_nodeids=[1, 3, 4], class_ids=[0, 0, 0],
                  class_weights=[0.25, 0.75, 0.5])
    Y, Z = k(X, classlabels_int64s=[5, 7], **TREE, **binary)
    assert Y.tolist() == [5, 7, 5]
    np.testing.assert_allclose(Z, [[0.75, 0.25], [0.25, 0.75], [0.5, 0.5]])
    with pytest.raises(KernelValidationError, match="D1"):
        k(X, classlabels_int64s=[5, 7], post_transform="SOFTMAX", **TREE, **binary)


def test_tree_ensemble_leaf_table_and_membership():
    k = get_kernel("ai.onnx.ml", "TreeEnsemble", 5)
    Xd = np.array([[1.0], [3.0], [np.nan]])
    Y = k(Xd, tree_roots=[0], nodes_modes=np.array([6], np.uint8), nodes_featureids=[0],
          nodes_splits=np.array([0.0]), nodes_truenodeids=[0], nodes_falsenodeids=[1], nodes_trueleafs=[1],
          nodes_falseleafs=[1], leaf_targetids=[0, 0], leaf_weights=np.array([4.0, 8.0]), n_targets=1,
          membership_values=np.array([1.0, 2.0, np.nan]))[0]
    np.testing.assert_array_equal(Y, [[4.0], [8.0], [8.0]])


def _spec(op):
    return load_specs_or_raise([f"specs/ai.onnx.ml/{op}.yaml"])[0]


@pytest.mark.parametrize("op,since,elem", [("TreeEnsembleRegressor", 3, "double"),
                                           ("TreeEnsembleRegressor", 1, "int64"),
                                           ("TreeEnsembleClassifier", 3, "float"),
                                           ("TreeEnsemble", 5, "float")])
def test_hook_draws_valid_ensembles(op, since, elem):
    spec = _spec(op)
    version = next(v for v in spec.versions if v.since == since)
    binding = {"T": f"tensor({elem})"} if op != "TreeEnsembleClassifier" else {"T1": f"tensor({elem})",
                                                                              "T2": "tensor(int64)"}
    ctx = Context(spec, version, binding)
    kernel = get_kernel("ai.onnx.ml", op, since)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        draft = ml_tree.draw(data.draw, ctx)
        attrs = {k: v for k, v in draft.attributes.items() if not _absent(v)}
        kernel(draft.inputs["X"], **attrs)  # raises KernelValidationError on any broken rule

    check()


def _absent(v) -> bool:
    from opkit.cases.case import ABSENT
    return v is ABSENT


_VERSIONS = [("TreeEnsembleRegressor", 1), ("TreeEnsembleRegressor", 3), ("TreeEnsembleRegressor", 5),
             ("TreeEnsembleClassifier", 1), ("TreeEnsembleClassifier", 3), ("TreeEnsembleClassifier", 5),
             ("TreeEnsemble", 5)]


@pytest.mark.parametrize("op,since", _VERSIONS)
def test_every_version_has_examples_the_kernel_reproduces(op, since):
    from opkit.conformance import harness
    from opkit.conformance.case_exec import example_exec
    from opkit.conformance.worker_engine import Result

    spec = _spec(op)
    version = next(v for v in spec.versions if v.since == since)
    hand_written = [e for e in version.examples if not e.source]
    assert len(hand_written) >= 2 and all(e.doc for e in hand_written)
    kernel = get_kernel("ai.onnx.ml", op, since)
    for example in version.examples:
        case, expected = harness.example_case(spec, version, example)
        got = kernel(*[v for _, v in case.inputs], **case.kernel_attributes())
        outcome = example_exec(version, case, example, expected, Result("ok", list(got))).outcome
        assert outcome == "pass", (op, since, example.name)


def test_examples_detect_a_wrong_aggregate():
    """The AVERAGE example fails when the kernel sums instead (what the check above would catch)."""
    from opkit.conformance import harness
    from opkit.conformance.case_exec import example_exec
    from opkit.conformance.worker_engine import Result

    spec = _spec("TreeEnsembleRegressor")
    version = next(v for v in spec.versions if v.since == 3)
    example = next(e for e in version.examples if e.name == "average_with_base_values")
    case, expected = harness.example_case(spec, version, example)
    attrs = dict(case.kernel_attributes(), aggregate_function="SUM")
    got = get_kernel("ai.onnx.ml", "TreeEnsembleRegressor", 3)(*[v for _, v in case.inputs], **attrs)
    assert example_exec(version, case, example, expected, Result("ok", list(got))).outcome == "mismatch"


def test_the_min_max_rule_ends_on_a_cyclic_tree():
    """Every rule is evaluated even when C3 (acyclic) fails: the relational edges moved a child id
    onto its parent and D1's leaf walk looped forever, hanging a sweep's -j process."""
    from opkit.kernels.lib._ml_trees import ensemble_min_max_covered

    # node 0 branches to node 1 and a leaf; node 1 branches back to node 0 and a leaf
    covered = ensemble_min_max_covered(2, [0], truenodeids=[1, 0], falsenodeids=[2, 3], trueleafs=[0, 0],
                                       falseleafs=[1, 1], leaf_targetids={2: 0, 3: 0}, n_targets=1)
    assert covered is True
