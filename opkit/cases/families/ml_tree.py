"""Family ``ml_tree``: the ai.onnx.ml tree ensembles, built valid by construction.

One draw makes 1-4 trees of depth <= 4 over an input X [N, F] of small values on a half-integer
grid; every threshold is one of X's values in its column (or half a step beside it), so rows go
both ways, and BRANCH_EQ / BRANCH_NEQ meet equality. A NaN feature appears only together with
``nodes_missing_value_tracks_true``. Node ids count 0.. per tree in preorder (the root first), the
nodes are listed tree by tree; each leaf votes.

- TreeEnsembleRegressor: 1-3 targets, SUM / AVERAGE / MIN / MAX (MIN and MAX: every leaf votes for
  every target, the rule that keeps "the minimum of no vote" out), any post transform, base values
  or not; versions 3 and 5 give the double ``*_as_tensor`` twins half the time.
- TreeEnsembleClassifier: int or string labels (exactly one), 2-4 classes. The binary case (two
  labels, every vote for class 0) is drawn as the spec's rule admits it: no base values, NONE with
  non-negative weights or LOGISTIC; two labels otherwise get votes for both classes at every leaf.
- TreeEnsemble-5: interior nodes and leaves in separate tables, a single-leaf tree as a root whose
  two branches name one leaf, BRANCH_MEMBER with NaN-terminated member sets; MIN and MAX give each
  target a tree of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from ..case import ABSENT
from ..context import Context, Draft

_LEGACY_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
_POST = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
_AGG = ("AVERAGE", "SUM", "MIN", "MAX")
_NP = {"float": np.float32, "double": np.float64, "float16": np.float16, "int64": np.int64, "int32": np.int32}


@dataclass
class _Tree:
    """One tree in preorder: per node (mode index or -1 for a leaf, feature, threshold, true, false,
    NaN goes true), leaves by node position."""

    nodes: list = field(default_factory=list)


def _input(draw, elem: str) -> np.ndarray:
    rows, feats = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    grid = st.integers(-6, 6)
    data = np.array([[draw(grid) for _ in range(feats)] for _ in range(rows)], dtype=np.float64)
    if elem not in ("int64", "int32"):
        data = data / 2.0  # half-integers: exact in float16 and float32 alike
    return data


def _threshold(draw, column: np.ndarray, integer: bool) -> float:
    finite = column[~np.isnan(column)]
    base = float(draw(st.sampled_from(sorted(set(finite.tolist()))))) if finite.size else 0.0
    shift = draw(st.sampled_from((0.0, 0.0, 0.25, -0.25))) if not integer else draw(st.sampled_from((0, 0, 0.5)))
    return base + shift


def _grow(draw, tree: _Tree, X, depth: int, modes, nan_ok: bool, integer: bool) -> int:
    me = len(tree.nodes)
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        tree.nodes.append([-1, 0, 0.0, 0, 0, 0])
        return me
    feature = draw(st.integers(0, X.shape[1] - 1))
    mode = draw(st.sampled_from(modes))
    threshold = _threshold(draw, X[:, feature], integer)
    tree.nodes.append([mode, feature, threshold, 0, 0, int(nan_ok and draw(st.booleans()))])
    tree.nodes[me][3] = _grow(draw, tree, X, depth - 1, modes, nan_ok, integer)
    tree.nodes[me][4] = _grow(draw, tree, X, depth - 1, modes, nan_ok, integer)
    return me


def _maybe_nan(draw, X: np.ndarray, elem: str) -> tuple[np.ndarray, bool]:
    """A NaN or two among the features, only for floats and then with missing-value tracking."""
    if elem in ("int64", "int32") or not draw(st.booleans()):
        return X, False
    X = X.copy()
    for _ in range(draw(st.integers(1, 2))):
        X[draw(st.integers(0, X.shape[0] - 1)), draw(st.integers(0, X.shape[1] - 1))] = np.nan
    return X, True


def _forest(draw, X, modes, nan_ok: bool, integer: bool) -> list[_Tree]:
    trees = []
    for _ in range(draw(st.integers(1, 4))):
        tree = _Tree()
        _grow(draw, tree, X, draw(st.integers(0, 4)), modes, nan_ok, integer)
        trees.append(tree)
    return trees


def _weight(draw, nonnegative: bool = False) -> float:
    w = draw(st.integers(0 if nonnegative else -16, 16)) / 4.0
    return w


def _legacy_nodes(trees: list[_Tree], prefix: str, as_tensor: bool, missing: bool, hitrates: bool) -> dict:
    attrs: dict = {"nodes_treeids": [], "nodes_nodeids": [], "nodes_modes": [], "nodes_featureids": [],
                   "nodes_truenodeids": [], "nodes_falsenodeids": []}
    values, tracks = [], []
    for t, tree in enumerate(trees):
        for d, (mode, feat, thr, tru, fal, nan_true) in enumerate(tree.nodes):
            attrs["nodes_treeids"].append(t)
            attrs["nodes_nodeids"].append(d)
            attrs["nodes_modes"].append("LEAF" if mode < 0 else _LEGACY_MODES[mode])
            attrs["nodes_featureids"].append(feat)
            attrs["nodes_truenodeids"].append(tru)
            attrs["nodes_falsenodeids"].append(fal)
            values.append(thr)
            tracks.append(nan_true)
    if as_tensor:
        attrs["nodes_values_as_tensor"] = np.array(values, dtype=np.float64)
    else:
        attrs["nodes_values"] = values
    attrs["nodes_missing_value_tracks_true"] = tracks if missing else ABSENT
    if hitrates:
        attrs["nodes_hitrates"] = [1.0] * len(values)
    del prefix
    return attrs


def _legacy_votes(draw, trees, n_out: int, prefix: str, every: bool, nonnegative: bool, only=None) -> tuple:
    """Votes (tree, node, id, weight) at the leaves: every id once (``every``), a fixed id
    (``only``), or one or two random ids."""
    out = []
    for t, tree in enumerate(trees):
        for d, node in enumerate(tree.nodes):
            if node[0] >= 0:
                continue
            if only is not None:
                ids = [only]
            elif every:
                ids = list(range(n_out))
            else:
                ids = [draw(st.integers(0, n_out - 1)) for _ in range(draw(st.integers(1, 2)))]
            out.extend((t, d, k, _weight(draw, nonnegative)) for k in ids)
    del prefix
    return out


def _vote_attrs(votes, prefix: str, id_name: str, as_tensor: bool) -> dict:
    weights = [w for *_, w in votes]
    attrs = {f"{prefix}_treeids": [v[0] for v in votes], f"{prefix}_nodeids": [v[1] for v in votes],
             id_name: [v[2] for v in votes]}
    if as_tensor:
        attrs[f"{prefix}_weights_as_tensor"] = np.array(weights, dtype=np.float64)
    else:
        attrs[f"{prefix}_weights"] = weights
    return attrs


def _base(draw, n: int, as_tensor: bool, allowed: bool = True) -> dict:
    if not allowed or not draw(st.booleans()):
        return {}
    vals = [_weight(draw) for _ in range(n)]
    return {"base_values_as_tensor": np.array(vals, dtype=np.float64)} if as_tensor else {"base_values": vals}


def _common(draw, ctx: Context):
    elem = ctx.elem("X")
    integer = elem in ("int64", "int32")
    X, nan_ok = _maybe_nan(draw, _input(draw, elem), elem)
    trees = _forest(draw, X, tuple(range(6)), nan_ok, integer)
    # "*_as_tensor ... if the element type is double": drawn for a double X only (onnxruntime reads
    # the tensors in X's type and refuses double thresholds beside a float X)
    as_tensor = ctx.has_attribute("nodes_values_as_tensor") and elem == "double" and draw(st.booleans())
    return elem, X, nan_ok, trees, as_tensor


def _regressor(draw, ctx: Context) -> Draft:
    elem, X, nan_ok, trees, as_tensor = _common(draw, ctx)
    n_targets = draw(st.integers(1, 3))
    agg = draw(st.sampled_from(_AGG))
    attrs = {a.name: ABSENT for a in ctx.version.attributes}
    attrs.update(_legacy_nodes(trees, "nodes", as_tensor, nan_ok, draw(st.booleans())))
    votes = _legacy_votes(draw, trees, n_targets, "target", agg in ("MIN", "MAX"), False)
    attrs.update(_vote_attrs(votes, "target", "target_ids", as_tensor))
    attrs.update(_base(draw, n_targets, as_tensor))
    attrs.update(n_targets=n_targets, aggregate_function=agg, post_transform=draw(st.sampled_from(_POST)))
    return Draft(attrs, {"X": X.astype(_NP[elem])})


def _classifier(draw, ctx: Context) -> Draft:
    elem, X, nan_ok, trees, as_tensor = _common(draw, ctx)
    n_classes = draw(st.integers(2, 4))
    attrs = {a.name: ABSENT for a in ctx.version.attributes}
    attrs.update(_legacy_nodes(trees, "nodes", as_tensor, nan_ok, draw(st.booleans())))
    binary = n_classes == 2 and draw(st.booleans())
    post = draw(st.sampled_from(("NONE", "LOGISTIC") if binary else _POST))
    if binary:
        votes = _legacy_votes(draw, trees, 2, "class", False, post == "NONE", only=0)
    else:
        votes = _legacy_votes(draw, trees, n_classes, "class", n_classes == 2, False)
    attrs.update(_vote_attrs(votes, "class", "class_ids", as_tensor))
    attrs.update(_base(draw, n_classes, as_tensor, allowed=not binary))
    if draw(st.booleans()):
        attrs["classlabels_int64s"] = sorted(draw(st.sets(st.integers(-3, 9), min_size=n_classes,
                                                          max_size=n_classes)))
    else:
        attrs["classlabels_strings"] = [f"c{i}" for i in range(n_classes)]
    attrs["post_transform"] = post
    return Draft(attrs, {"X": X.astype(_NP[elem])})


def _ensemble(draw, ctx: Context) -> Draft:
    """TreeEnsemble-5: preorder interior nodes of all trees in one table, leaves in another."""
    elem = ctx.elem("X")
    X, nan_ok = _maybe_nan(draw, _input(draw, elem), elem)
    trees = _forest(draw, X, tuple(range(7)), nan_ok, False)
    n_targets = draw(st.integers(1, 3))
    agg = draw(st.integers(0, 3))
    if agg >= 2:  # MIN / MAX: each target gets a tree of its own
        while len(trees) < n_targets:
            trees.append(_forest(draw, X, tuple(range(7)), nan_ok, False)[0])
    dt = _NP[elem]
    nodes = {k: [] for k in ("modes", "featureids", "splits", "truenodeids", "falsenodeids", "trueleafs",
                             "falseleafs", "missing")}
    leaf_t, leaf_w, roots, members = [], [], [], []
    for t, tree in enumerate(trees):
        target = t % n_targets if agg >= 2 else None
        n0 = len(nodes["modes"])
        leaf_of, inner_of = {}, {}
        for d, node in enumerate(tree.nodes):
            if node[0] < 0:
                leaf_of[d] = len(leaf_t)
                leaf_t.append(target if target is not None else draw(st.integers(0, n_targets - 1)))
                leaf_w.append(_weight(draw))
            else:
                inner_of[d] = n0 + len(inner_of)
        if not inner_of:  # a lone leaf: a root whose two branches name it
            inner_of[0] = n0
            tree = _Tree([[0, 0, 0.0, 0, 0, 0]])
            leaf_of = {"only": leaf_of[0]}
        roots.append(n0)
        for d, (mode, feat, thr, tru, fal, nan_true) in enumerate(tree.nodes):
            if d not in inner_of:
                continue
            for key, child in (("true", tru), ("false", fal)):
                child_leaf = "only" in leaf_of or child in leaf_of
                nodes[f"{key}leafs"].append(int(child_leaf))
                nodes[f"{key}nodeids"].append(leaf_of["only"] if "only" in leaf_of else
                                              (leaf_of[child] if child_leaf else inner_of[child]))
            if mode == 6:
                column = X[:, feat][~np.isnan(X[:, feat])]
                pool = sorted(set(column.tolist())) or [0.0]
                members.append(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True)))
                thr = 0.0
            for key, v in (("modes", mode), ("featureids", feat), ("splits", thr), ("missing", nan_true)):
                nodes[key].append(v)
    attrs = {a.name: ABSENT for a in ctx.version.attributes}
    attrs.update(tree_roots=roots, nodes_modes=np.array(nodes["modes"], dtype=np.uint8),
                 nodes_featureids=nodes["featureids"], nodes_splits=np.array(nodes["splits"], dtype=dt),
                 nodes_truenodeids=nodes["truenodeids"], nodes_falsenodeids=nodes["falsenodeids"],
                 nodes_trueleafs=nodes["trueleafs"], nodes_falseleafs=nodes["falseleafs"],
                 leaf_targetids=leaf_t, leaf_weights=np.array(leaf_w, dtype=dt), n_targets=n_targets,
                 aggregate_function=agg, post_transform=draw(st.integers(0, 4)))
    if nan_ok:
        attrs["nodes_missing_value_tracks_true"] = nodes["missing"]
    if members:
        flat = [v for group in members for v in (*group, np.nan)]
        attrs["membership_values"] = np.array(flat, dtype=dt)
    return Draft(attrs, {"X": X.astype(dt)})


def draw(draw, ctx: Context) -> Draft:
    if ctx.op == "TreeEnsembleRegressor":
        return _regressor(draw, ctx)
    if ctx.op == "TreeEnsembleClassifier":
        return _classifier(draw, ctx)
    return _ensemble(draw, ctx)
