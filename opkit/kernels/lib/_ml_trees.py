"""Compute helpers of the ai.onnx.ml tree ensembles (TreeEnsembleRegressor, TreeEnsembleClassifier,
TreeEnsemble): one tree walker over a normalised node table, the aggregations, the post transforms,
and the structural checks the specs' rules call.

Both encodings end in the same table: a tree is a tuple of ``_Node`` with its root at index 0; a
leaf carries its votes ``(target, weight)``. The legacy ops name nodes by (tree id, node id) and
hang votes on leaf nodes through ``target_*`` / ``class_*`` lists; TreeEnsemble-5 indexes interior
nodes and leaves apart (``nodes_*`` and ``leaf_*``) with a flag per branch telling which one a
child id points into.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._ml import ml_post_transform

__all__ = [
    "tree_ensemble_regressor", "tree_ensemble_classifier", "tree_ensemble",
    "legacy_node_lengths_ok", "legacy_node_ids_ok", "legacy_links_ok", "legacy_votes_ok",
    "legacy_min_max_covered", "ensemble_links_ok", "ensemble_min_max_covered", "membership_ok",
    "pick_values", "LEGACY_MODES", "AGGREGATES", "POST_TRANSFORMS",
]

# TreeEnsemble-5 numbers its modes 0..6 (BRANCH_MEMBER = 6); the legacy ops spell them out
LEGACY_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF")
_LEAF = 7
_MEMBER = 6
AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")  # TreeEnsemble-5's codes 0..3
POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")  # codes 0..4


@dataclass(frozen=True)
class _Node:
    mode: int  # 0..6 as TreeEnsemble-5 numbers them, 7 for a leaf
    feature: int
    value: object  # threshold (a NumPy scalar) or, for BRANCH_MEMBER, a frozenset of members
    true: int
    false: int
    nan_true: bool
    votes: tuple = ()  # ((target, weight), ...) of a leaf


def pick_values(plain, as_tensor):
    """The attribute in force of a float list and its ``*_as_tensor`` double twin (None if neither):
    the tensor keeps its own precision, the list is float32 as ONNX stores it."""
    if as_tensor is not None:
        return np.asarray(as_tensor).ravel()
    if plain is not None:
        return np.asarray(plain, dtype=np.float32).ravel()
    return None


# --------------------------------------------------------------------------------------------
# structural checks (the rules C1.. of the specs call these)


def legacy_node_lengths_ok(treeids, nodeids, modes, featureids, truenodeids, falsenodeids, values,
                           *optional) -> bool:
    """Every ``nodes_*`` list has one entry per node; optional ones are absent or complete."""
    if any(v is None for v in (treeids, nodeids, modes, featureids, truenodeids, falsenodeids, values)):
        return False
    n = len(treeids)
    required = (nodeids, modes, featureids, truenodeids, falsenodeids, values)
    return n > 0 and all(len(v) == n for v in required) and all(o is None or len(o) == n for o in optional)


def _trees(treeids, nodeids) -> dict:
    trees: dict = {}
    for i, (t, n) in enumerate(zip(treeids, nodeids)):
        trees.setdefault(int(t), {})[int(n)] = i
    return trees


def legacy_node_ids_ok(treeids, nodeids) -> bool:
    """Per tree, the node ids are 0, 1, ... n-1, each once."""
    trees = _trees(treeids, nodeids)
    if sum(len(t) for t in trees.values()) != len(nodeids):
        return False  # a (tree, node) pair given twice
    return all(sorted(t) == list(range(len(t))) for t in trees.values())


def _acyclic(n: int, children, root: int = 0) -> bool:
    """Every node reachable from ``root`` is reached once: no cycle, no shared subtree."""
    seen, stack = set(), [root]
    while stack:
        i = stack.pop()
        if i in seen:
            return False
        seen.add(i)
        stack.extend(children(i))
    return True


def legacy_links_ok(treeids, nodeids, modes, truenodeids, falsenodeids) -> bool:
    """Each branch's two children are nodes of its own tree, and every tree is a tree (acyclic)."""
    trees = _trees(treeids, nodeids)
    for tree in trees.values():
        for i in tree.values():
            if modes[i] != "LEAF" and (int(truenodeids[i]) not in tree or int(falsenodeids[i]) not in tree):
                return False

        def children(nid, tree=tree):
            i = tree[nid]
            return [] if modes[i] == "LEAF" else [int(truenodeids[i]), int(falsenodeids[i])]
        if not _acyclic(len(tree), children):
            return False
    return True


def legacy_votes_ok(treeids, nodeids, modes, v_treeids, v_nodeids, v_ids, weights, n_out) -> bool:
    """The vote lists have equal lengths, each vote hangs on a leaf, its target/class is in range."""
    if any(v is None for v in (v_treeids, v_nodeids, v_ids, weights)):
        return False
    n = len(v_treeids)
    if not (len(v_nodeids) == n and len(v_ids) == n and len(weights) == n):
        return False
    index = {(int(t), int(d)): i for i, (t, d) in enumerate(zip(treeids, nodeids))}
    for t, d, k in zip(v_treeids, v_nodeids, v_ids):
        i = index.get((int(t), int(d)))
        if i is None or modes[i] != "LEAF" or not 0 <= int(k) < n_out:
            return False
    return True


def legacy_min_max_covered(aggregate_function, treeids, nodeids, modes, v_treeids, v_nodeids, v_ids,
                           n_targets) -> bool:
    """MIN and MAX of no vote are undefined: there every leaf votes for every target."""
    if aggregate_function not in ("MIN", "MAX"):
        return True
    voted: dict = {}
    for t, d, k in zip(v_treeids, v_nodeids, v_ids):
        voted.setdefault((int(t), int(d)), set()).add(int(k))
    return all(voted.get((int(t), int(d)), set()) == set(range(n_targets))
               for t, d, m in zip(treeids, nodeids, modes) if m == "LEAF")


def ensemble_links_ok(tree_roots, modes, truenodeids, falsenodeids, trueleafs, falseleafs, n_leaves) -> bool:
    """TreeEnsemble-5: child ids index the node or the leaf table as their flag says, and each tree
    reached from its root is acyclic."""
    n = len(modes)
    for i in range(n):
        for child, leaf in ((truenodeids[i], trueleafs[i]), (falsenodeids[i], falseleafs[i])):
            if int(leaf) not in (0, 1) or not 0 <= int(child) < (n_leaves if leaf else n):
                return False
    for root in tree_roots:
        if not 0 <= int(root) < n:
            return False
        def children(i):
            return [int(c) for c, leaf in ((truenodeids[i], trueleafs[i]), (falsenodeids[i], falseleafs[i])) if not leaf]
        if not _acyclic(n, children, int(root)):
            return False
    return True


def _reached_leaves(root, truenodeids, falsenodeids, trueleafs, falseleafs) -> set:
    """The leaves reachable from ``root``, each node visited once: rules are all evaluated even
    when an earlier one (C3, acyclic trees) fails, and a cycle would otherwise loop forever."""
    leaves, stack, seen = set(), [int(root)], set()
    while stack:
        i = stack.pop()
        if i in seen or not 0 <= i < len(truenodeids):
            continue
        seen.add(i)
        for child, leaf in ((truenodeids[i], trueleafs[i]), (falsenodeids[i], falseleafs[i])):
            (leaves.add if leaf else stack.append)(int(child))
    return leaves


def ensemble_min_max_covered(aggregate_function, tree_roots, truenodeids, falsenodeids, trueleafs,
                             falseleafs, leaf_targetids, n_targets) -> bool:
    """MIN and MAX of no vote are undefined: there every target has a tree whose every leaf votes for
    it, so each input gives each target a vote."""
    if aggregate_function not in (2, 3):
        return True
    covered = set()
    for root in tree_roots:
        targets = {int(leaf_targetids[j]) for j in _reached_leaves(root, truenodeids, falsenodeids,
                                                                    trueleafs, falseleafs)}
        if len(targets) == 1:
            covered |= targets
    return covered == set(range(n_targets))


def membership_ok(modes, membership_values) -> bool:
    """One NaN-terminated set of members per BRANCH_MEMBER node, in node order."""
    n_member = int(np.sum(np.asarray(modes) == _MEMBER))
    if membership_values is None:
        return n_member == 0
    values = np.asarray(membership_values, dtype=np.float64).ravel()
    if n_member == 0:
        return True
    return int(np.isnan(values).sum()) == n_member and bool(np.isnan(values[-1]))


# --------------------------------------------------------------------------------------------
# evaluation


def _goes_true(node: _Node, x) -> bool:
    """The branch test; a NaN feature follows ``nan_true`` whatever the mode (the text: "in the
    presence of a NaN use the 'true' or 'false' branch based on the value in this array")."""
    if isinstance(x, (float, np.floating)) and math.isnan(x):
        return node.nan_true
    m, v = node.mode, node.value
    if m == _MEMBER:
        return x in v
    return bool((x <= v, x < v, x >= v, x > v, x == v, x != v)[m])


def _walk(tree: tuple, row) -> _Node:
    nodes, root = tree
    node = nodes[root]
    while node.mode != _LEAF:
        node = nodes[node.true if _goes_true(node, row[node.feature]) else node.false]
    return node


def _compare_type(X: np.ndarray, thresholds: np.ndarray) -> np.dtype:
    """Integer features are compared as the thresholds' type, floats in the wider of the two."""
    if X.dtype.kind in "iu":
        return thresholds.dtype
    return np.promote_types(X.dtype, thresholds.dtype)


def _aggregate(trees, X, n_out: int, aggregate: str, base) -> np.ndarray:
    """Scores [N, n_out] in float64: every tree's reached leaf votes; SUM / AVERAGE (sum over the
    number of trees) / MIN / MAX per target; then the base values are added."""
    out = np.zeros((X.shape[0], n_out), dtype=np.float64)
    for r, row in enumerate(X):
        votes: list = [[] for _ in range(n_out)]
        for tree in trees:
            for k, w in _walk(tree, row).votes:
                votes[k].append(float(w))
        for k, vs in enumerate(votes):
            if not vs:
                continue  # no vote: 0 (SUM and AVERAGE; MIN and MAX keep this out by rule)
            if aggregate in ("SUM", "AVERAGE"):
                out[r, k] = math.fsum(vs)
            else:
                out[r, k] = min(vs) if aggregate == "MIN" else max(vs)
    if aggregate == "AVERAGE":
        out /= len(trees)
    if base is not None:
        out += np.asarray(base, dtype=np.float64).reshape(1, -1)
    return out


def _post(scores: np.ndarray, post: str) -> np.ndarray:
    """The post transform, shared with the other ai.onnx.ml ops (SOFTMAX_ZERO: a score of 0 takes
    no part and stays 0; PROBIT: the exact normal quantile)."""
    return ml_post_transform(scores, post)


# --------------------------------------------------------------------------------------------
# the three ops


def _legacy_trees(X, treeids, nodeids, modes, featureids, values, truenodeids, falsenodeids, missing,
                  v_treeids, v_nodeids, v_ids, v_weights) -> list:
    index = {(int(t), int(d)): i for i, (t, d) in enumerate(zip(treeids, nodeids))}
    votes: dict = {}
    for t, d, k, w in zip(v_treeids, v_nodeids, v_ids, v_weights):
        votes.setdefault((int(t), int(d)), []).append((int(k), w))
    dtype = _compare_type(X, values)
    trees = []
    for t in sorted({int(t) for t in treeids}):
        n = sum(1 for tt in treeids if int(tt) == t)
        nodes = []
        for d in range(n):
            i = index[t, d]
            mode = LEGACY_MODES.index(modes[i])
            nodes.append(_Node(_LEAF if mode == 6 else mode, int(featureids[i]), dtype.type(values[i]),
                               int(truenodeids[i]), int(falsenodeids[i]),
                               bool(missing is not None and int(missing[i]) != 0),
                               tuple(votes.get((t, d), ()))))
        trees.append((tuple(nodes), 0))
    return trees


def _rows(X: np.ndarray, dtype) -> np.ndarray:
    return np.asarray(X).astype(dtype) if X.dtype != dtype else np.asarray(X)


def tree_ensemble_regressor(X, *, aggregate_function="SUM", post_transform="NONE", n_targets=None,
                            nodes_treeids=None, nodes_nodeids=None, nodes_modes=None, nodes_featureids=None,
                            nodes_values=None, nodes_values_as_tensor=None, nodes_truenodeids=None,
                            nodes_falsenodeids=None, nodes_missing_value_tracks_true=None,
                            target_treeids=None, target_nodeids=None, target_ids=None, target_weights=None,
                            target_weights_as_tensor=None, base_values=None, base_values_as_tensor=None,
                            **_unused):
    """TreeEnsembleRegressor-1/3/5: Y[n, t] = post(aggregate of the reached leaves' votes for t + base[t])."""
    values = pick_values(nodes_values, nodes_values_as_tensor)
    weights = pick_values(target_weights, target_weights_as_tensor)
    trees = _legacy_trees(X, nodes_treeids, nodes_nodeids, nodes_modes, nodes_featureids, values,
                          nodes_truenodeids, nodes_falsenodeids, nodes_missing_value_tracks_true,
                          target_treeids, target_nodeids, target_ids, weights)
    rows = _rows(X, _compare_type(X, values))
    scores = _aggregate(trees, rows, int(n_targets), aggregate_function,
                        pick_values(base_values, base_values_as_tensor))
    with np.errstate(all="ignore"):
        return _post(scores, post_transform).astype(np.float32)


def _binary(scores: np.ndarray, post: str) -> np.ndarray:
    """Two labels, one voted column s: the scores are (1 - s, s) (NONE) or (logistic(-s),
    logistic(s)) (LOGISTIC), as onnxruntime and onnx.reference both give (the text is silent)."""
    s = scores[:, :1]
    if post == "LOGISTIC":
        return np.concatenate([_post(-s, post), _post(s, post)], axis=1)
    return np.concatenate([1.0 - s, s], axis=1)


def tree_ensemble_classifier(X, *, post_transform="NONE", classlabels_int64s=None, classlabels_strings=None,
                             nodes_treeids=None, nodes_nodeids=None, nodes_modes=None, nodes_featureids=None,
                             nodes_values=None, nodes_values_as_tensor=None, nodes_truenodeids=None,
                             nodes_falsenodeids=None, nodes_missing_value_tracks_true=None,
                             class_treeids=None, class_nodeids=None, class_ids=None, class_weights=None,
                             class_weights_as_tensor=None, base_values=None, base_values_as_tensor=None,
                             **_unused):
    """TreeEnsembleClassifier-1/3/5: Z = post(base + sum of the reached leaves' class votes), Y the
    label of the top raw score (the first on ties)."""
    labels = classlabels_strings if classlabels_strings is not None else classlabels_int64s
    values = pick_values(nodes_values, nodes_values_as_tensor)
    weights = pick_values(class_weights, class_weights_as_tensor)
    trees = _legacy_trees(X, nodes_treeids, nodes_nodeids, nodes_modes, nodes_featureids, values,
                          nodes_truenodeids, nodes_falsenodeids, nodes_missing_value_tracks_true,
                          class_treeids, class_nodeids, class_ids, weights)
    rows = _rows(X, _compare_type(X, values))
    raw = _aggregate(trees, rows, len(labels), "SUM", pick_values(base_values, base_values_as_tensor))
    with np.errstate(all="ignore"):
        if len(labels) == 2 and len({int(k) for k in class_ids}) == 1:
            Z = _binary(raw, post_transform)
            top = (Z[:, 1] > Z[:, 0]).astype(np.int64)
        else:
            Z = _post(raw, post_transform)
            top = np.argmax(raw, axis=1) if raw.size else np.zeros(raw.shape[0], np.int64)
    if classlabels_strings is not None:
        Y = np.array([labels[i] for i in top], dtype=object).reshape(-1)
    else:
        Y = np.array([labels[i] for i in top], dtype=np.int64).reshape(-1)
    return Y, Z.astype(np.float32)


def _ensemble_trees(X, tree_roots, modes, featureids, splits, truenodeids, falsenodeids, trueleafs,
                    falseleafs, missing, leaf_targetids, leaf_weights, membership_values) -> list:
    n = len(modes)
    members = []
    if membership_values is not None:
        current: list = []
        for v in np.asarray(membership_values).ravel():
            if np.isnan(v):
                members.append(frozenset(current))
                current = []
            else:
                current.append(X.dtype.type(v))
    member_of = {}
    for i, m in enumerate(modes):
        if int(m) == _MEMBER:
            member_of[i] = members[len(member_of)]
    table = []  # interior nodes 0..n-1, then leaves n..n+L-1
    for i in range(n):
        t = int(truenodeids[i]) + (n if trueleafs[i] else 0)
        f = int(falsenodeids[i]) + (n if falseleafs[i] else 0)
        value = member_of.get(i, X.dtype.type(splits[i]))
        table.append(_Node(int(modes[i]), int(featureids[i]), value, t, f,
                           bool(missing is not None and int(missing[i]) != 0)))
    for j, (k, w) in enumerate(zip(leaf_targetids, leaf_weights)):
        table.append(_Node(_LEAF, 0, None, 0, 0, False, ((int(k), w),)))
    return [(tuple(table), int(root)) for root in tree_roots]


def tree_ensemble(X, *, aggregate_function=1, post_transform=0, tree_roots=None, nodes_modes=None,
                  nodes_featureids=None, nodes_splits=None, nodes_truenodeids=None, nodes_falsenodeids=None,
                  nodes_trueleafs=None, nodes_falseleafs=None, nodes_missing_value_tracks_true=None,
                  leaf_targetids=None, leaf_weights=None, membership_values=None, n_targets=None, **_unused):
    """TreeEnsemble-5: Y[n, t] = post(aggregate of the reached leaves' weights for target t), in T."""
    trees = _ensemble_trees(X, tree_roots, np.asarray(nodes_modes).ravel(), nodes_featureids,
                            np.asarray(nodes_splits).ravel(), nodes_truenodeids, nodes_falsenodeids,
                            nodes_trueleafs, nodes_falseleafs, nodes_missing_value_tracks_true, leaf_targetids,
                            np.asarray(leaf_weights).ravel(), membership_values)
    scores = _aggregate(trees, X, int(n_targets), AGGREGATES[int(aggregate_function)], None)
    with np.errstate(all="ignore"):
        return _post(scores, POST_TRANSFORMS[int(post_transform)]).astype(X.dtype)
