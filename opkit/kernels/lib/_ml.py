"""Compute helpers of the ai.onnx.ml ops on plain tensors (Binarizer, Scaler, Normalizer,
ArrayFeatureExtractor, Imputer, LabelEncoder, CategoryMapper, OneHotEncoder, FeatureVectorizer,
the linear and SVM models and their score transforms, SVMClassifier's one-vs-one votes and Platt
probabilities).

The texts of these ops are terse; where a helper settles a point the text leaves loose, the spec's
op-level ``doc`` says which reading it takes and why.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "ml_binarize", "ml_scale", "ml_normalize", "ml_normalizer_defined", "ml_feature_extract", "ml_impute",
    "ml_label_encode", "ml_keys_distinct", "ml_category_map", "ml_one_hot", "ml_one_hot_defined",
    "ml_feature_vectorize", "ml_probit", "ml_post_transform", "ml_linear_regress", "ml_linear_classify",
    "ml_linear_scores", "ml_transform_defined", "ml_svm_kernel", "ml_svm_regress",
    "ml_svm_classify", "ml_svm_decisions", "ml_svm_couple", "ml_svm_classify_defined",
]

_F32 = np.float32


def _as_rows(X: np.ndarray) -> np.ndarray:
    """[C] read as [1, C]: the ml ops treat a vector as one example."""
    return X.reshape(1, -1) if X.ndim == 1 else X


def ml_binarize(X, *, threshold=0.0):
    """Y = 1 where X > threshold, else 0 (NaN is not greater: 0), in X's type."""
    if X.dtype.kind in "iu":
        # exact for every int64: x > t  <=>  x > floor(t) for a finite float t
        t = float(threshold)
        if math.isnan(t):
            above = np.zeros(X.shape, dtype=bool)
        elif math.isinf(t):
            above = np.full(X.shape, t < 0)
        else:
            above = X > math.floor(t)
    else:
        above = X.astype(np.float64) > float(threshold)
    return above.astype(X.dtype)


def ml_scale(X, *, scale=None, offset=None):
    """Y = (X - offset) * scale per feature (last axis), in float64, rounded once to float."""
    x = X.astype(np.float64)
    off = np.asarray(offset, dtype=np.float64)
    sc = np.asarray(scale, dtype=np.float64)
    return ((x - off) * sc).astype(_F32)


def _divisor(x: np.ndarray, norm: str) -> np.ndarray:
    if norm == "MAX":
        return np.max(x, axis=1, keepdims=True) if x.shape[1] else np.zeros((x.shape[0], 1))
    if norm == "L1":
        return np.sum(np.abs(x), axis=1, keepdims=True)
    return np.sqrt(np.sum(x * x, axis=1, keepdims=True))


def ml_normalize(X, *, norm="MAX"):
    """Each row divided by its max (signed), L1 norm or L2 norm; a row whose divisor is 0 is
    copied. Evaluated in float64, rounded once to float."""
    x = _as_rows(X).astype(np.float64)
    with np.errstate(all="ignore"):
        div = _divisor(x, norm)
        y = np.where(div == 0, x, x / np.where(div == 0, 1.0, div))
    return y.reshape(X.shape).astype(_F32)


def ml_normalizer_defined(X, norm) -> bool:
    """The divisor of every row is finite and (for L2) its square sum does not overflow float32:
    a runtime squares and sums in float32, the text in exact arithmetic."""
    x = _as_rows(X).astype(np.float64)
    if not x.size:
        return True
    with np.errstate(all="ignore"):
        div = _divisor(x, norm)
        sq = np.sum(x * x, axis=1)
    ok = bool(np.all(np.isfinite(div) | np.isnan(div)))
    return ok and bool(np.all(~np.isfinite(sq) | (sq < 3.0e38) | np.isnan(sq)) and np.all(np.abs(x[np.isfinite(x)]) < 1e18))


def ml_feature_extract(X, Y):
    """Z = X[..., Y] with the flattened indices on the last axis; a 1-D X gives [1, len(Y)]."""
    idx = np.asarray(Y, dtype=np.int64).ravel()
    Z = X[..., idx]
    return Z.reshape(1, -1) if X.ndim == 1 else Z


def ml_impute(X, *, imputed_value_floats=None, imputed_value_int64s=None, replaced_value_float=0.0,
              replaced_value_int64=0):
    """Elements equal to the replaced value (NaN matches NaN) become the imputed value of their
    feature (last axis), or the single imputed value."""
    if X.dtype.kind == "f":
        values, replaced = np.asarray(imputed_value_floats, dtype=np.float64), float(replaced_value_float)
        hit = np.isnan(X) if math.isnan(replaced) else (X.astype(np.float64) == replaced)
    else:
        values, replaced = np.asarray(imputed_value_int64s, dtype=np.int64), int(replaced_value_int64)
        hit = X == replaced
    fill = np.broadcast_to(values.astype(X.dtype), X.shape[-1:] if X.ndim else ()) if values.size > 1 \
        else values.astype(X.dtype)[0]
    return np.where(hit, fill, X).astype(X.dtype)


def _same_key(a, b) -> bool:
    """Key equality: NaN matches NaN, anything else by value."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _key_of(v):
    """A hashable key under which NaN matches NaN (the texts map a NaN key to NaN inputs)."""
    if isinstance(v, float) and math.isnan(v):
        return ("nan",)
    return v


def ml_keys_distinct(keys) -> bool:
    """No key is given twice (NaN twice counts as twice)."""
    if keys is None:
        return True
    items = [_key_of(v) for v in np.asarray(keys).ravel().tolist()]
    return len(set(items)) == len(items)


def _pick(*candidates):
    """The first attribute that is set (non-empty)."""
    for c in candidates:
        if c is not None and np.size(c) > 0:
            return c
    return None


def _out_dtype(values, values_floats, values_int64s, values_strings, values_tensor):
    if values is values_tensor:
        return np.asarray(values_tensor).dtype
    if values is values_floats:
        return np.dtype(_F32)
    if values is values_int64s:
        return np.dtype(np.int64)
    return np.dtype(object)


def _lookup(X, keys, values, default, dtype):
    """Y[i] = values[j] for the last j with keys[j] == X[i], else default."""
    table = {}
    for k, v in zip(np.asarray(keys).ravel().tolist(), np.asarray(values).ravel().tolist()):
        table[_key_of(k)] = v
    flat = [table.get(_key_of(x), default) for x in X.ravel().tolist()]
    out = np.empty(len(flat), dtype=dtype)
    out[:] = flat
    return out.reshape(X.shape)


def ml_label_encode(X, *, classes_strings=None, default_int64=-1, default_string="_Unused", default_float=-0.0,
                    keys_floats=None, keys_int64s=None, keys_strings=None, keys_tensor=None,
                    values_floats=None, values_int64s=None, values_strings=None, values_tensor=None,
                    default_tensor=None):
    """LabelEncoder: version 1 maps strings to their index in classes_strings and indices back;
    versions 2 and 4 map each key to its parallel value, a miss to the default of the values' type."""
    if keys_floats is None and keys_int64s is None and keys_strings is None and keys_tensor is None \
            and values_tensor is None and values_floats is None and values_int64s is None and values_strings is None:
        classes = list(classes_strings or [])
        if X.dtype == object:  # strings to their first index
            return _lookup(X, classes[::-1], list(range(len(classes)))[::-1], int(default_int64), np.int64)
        return _lookup(X, list(range(len(classes))), classes, default_string, object)
    keys = _pick(keys_floats, keys_int64s, keys_strings, keys_tensor)
    values = _pick(values_floats, values_int64s, values_strings, values_tensor)
    dtype = _out_dtype(values, values_floats, values_int64s, values_strings, values_tensor)
    if default_tensor is not None and np.size(default_tensor) > 0:
        default = np.asarray(default_tensor).ravel().tolist()[0]
    elif dtype == object:
        default = default_string
    elif dtype.kind == "f":
        default = float(default_float)
    else:
        default = int(default_int64)
    if keys is keys_floats:
        keys = np.asarray(keys_floats, dtype=_F32)
    if values is values_floats:
        values = np.asarray(values_floats, dtype=_F32)
    xs = X.astype(np.float64) if X.dtype.kind == "f" else X
    ks = np.asarray(keys).astype(np.float64) if np.asarray(keys).dtype.kind == "f" else keys
    return _lookup(xs, ks, values, default, dtype)


def ml_category_map(X, *, cats_int64s=None, cats_strings=None, default_int64=-1, default_string="_Unused"):
    """Strings to the integer at the same position, integers to the string; a miss takes the default."""
    ints, strs = list(cats_int64s or []), list(cats_strings or [])
    if X.dtype == object:
        return _lookup(X, strs, ints, int(default_int64), np.int64)
    return _lookup(X, ints, strs, default_string, object)


def _one_hot_codes(X):
    """The lookup keys of X: strings as they are, numbers cast to integers (toward zero)."""
    if X.dtype == object:
        return X
    if X.dtype.kind == "f":
        return np.trunc(X.astype(np.float64)).astype(np.int64)
    return X.astype(np.int64)


def ml_one_hot_defined(X, cats_int64s, cats_strings, zeros) -> bool:
    """Every element casts to an integer (finite, in int64 range) and, with zeros = 0, is a category."""
    if X.dtype.kind == "f":
        x = X.astype(np.float64)
        if not np.all(np.isfinite(x) & (np.abs(x) < 2.0**62)):
            return False
    if zeros:
        return True
    cats = set(cats_strings or []) if X.dtype == object else set(cats_int64s or [])
    return all(v in cats for v in _one_hot_codes(X).ravel().tolist())


def ml_one_hot(X, *, cats_int64s=None, cats_strings=None, zeros=1):
    """Y[..., j] = 1.0 where X (cast to an integer unless strings) is the j-th category, else 0."""
    cats = list(cats_strings) if X.dtype == object else list(cats_int64s)
    position = {c: j for j, c in enumerate(cats)}  # a repeated category: the last one wins
    codes = _one_hot_codes(X).ravel().tolist()
    Y = np.zeros((len(codes), len(cats)), dtype=_F32)
    for i, c in enumerate(codes):
        j = position.get(c)
        if j is not None:
            Y[i, j] = 1.0
    return Y.reshape(X.shape + (len(cats),))


def ml_feature_vectorize(X, *, inputdimensions=None):
    """The inputs (each [N, C_i], or [C_i] as [1, C_i]) side by side along axis 1, as float."""
    rows = [_as_rows(x).astype(np.float64) for x in X]
    return np.concatenate(rows, axis=1).astype(_F32)


# ---------------------------------------------------------------------------------------------
# score transforms of the linear and SVM models


def _erfinv(y: float) -> float:
    """The inverse of erf, to double precision: a starting guess refined by Newton steps."""
    if y <= -1.0:
        return -math.inf if y == -1.0 else math.nan
    if y >= 1.0:
        return math.inf if y == 1.0 else math.nan
    if math.isnan(y):
        return math.nan
    # Winitzki's closed form as the first guess, then Newton on erf(x) - y
    a = 0.147
    ln = math.log((1.0 - y) * (1.0 + y))
    t = 2.0 / (math.pi * a) + ln / 2.0
    x = math.copysign(math.sqrt(math.sqrt(t * t - ln / a) - t), y)
    for _ in range(6):
        err = math.erf(x) - y
        x -= err / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def ml_probit(p: np.ndarray) -> np.ndarray:
    """PROBIT: the inverse of the standard normal CDF, sqrt(2) * erfinv(2 p - 1)."""
    flat = [math.sqrt(2.0) * _erfinv(2.0 * float(v) - 1.0) for v in np.asarray(p, dtype=np.float64).ravel()]
    return np.asarray(flat, dtype=np.float64).reshape(np.shape(p))


def _softmax_rows(s: np.ndarray) -> np.ndarray:
    m = np.max(s, axis=1, keepdims=True)
    e = np.exp(s - m)
    return e / np.sum(e, axis=1, keepdims=True)


def _softmax_zero_rows(s: np.ndarray) -> np.ndarray:
    """SOFTMAX_ZERO: a softmax in which a score of exactly 0 stays 0 (it takes no part)."""
    zero = s == 0
    m = np.max(np.where(zero, -np.inf, s), axis=1, keepdims=True)  # NaN in a row: NaN
    m = np.where(m == -np.inf, 0.0, m)  # an all-zero row: every entry stays 0
    e = np.where(zero, 0.0, np.exp(s - m))
    total = np.sum(e, axis=1, keepdims=True)
    out = np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)
    return np.where(np.isnan(total), np.nan, out)  # a NaN score makes the whole row NaN, as softmax does


def ml_post_transform(scores: np.ndarray, post_transform: str) -> np.ndarray:
    """The post_transform of a [N, E] float64 score matrix, row by row."""
    s = np.asarray(scores, dtype=np.float64)
    with np.errstate(all="ignore"):
        if post_transform == "LOGISTIC":
            return 1.0 / (1.0 + np.exp(-s))
        if post_transform == "SOFTMAX":
            return _softmax_rows(s) if s.size else s
        if post_transform == "SOFTMAX_ZERO":
            return _softmax_zero_rows(s) if s.size else s
        if post_transform == "PROBIT":
            return ml_probit(s)
    return s


def _model_rows(X) -> np.ndarray:
    return _as_rows(X).astype(np.float64)


def ml_linear_scores(X, coefficients, intercepts) -> np.ndarray:
    """The raw scores X . W^T + b of a linear model, W being [rows, C] (float64)."""
    x = _model_rows(X)
    w = np.asarray(coefficients, dtype=np.float64).reshape(-1, x.shape[1])
    with np.errstate(all="ignore"):
        s = x @ w.T
        if intercepts is not None and len(intercepts):
            s = s + np.asarray(intercepts, dtype=np.float64)
    return s


def ml_transform_defined(scores: np.ndarray, post_transform: str) -> bool:
    """Where the name SOFTMAX_ZERO leaves the transform open, the scores stay out: every row has
    a non-zero score, and no score is zero to within 1e-7 without being 0 (onnxruntime counts
    |s| <= 1e-7 as zero, the name suggests exact zeros)."""
    if post_transform != "SOFTMAX_ZERO" or not np.size(scores):
        return True
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        s = s.reshape(1, -1)
    near = (s != 0) & (np.abs(s) <= 1e-7)
    return bool(np.all(np.any(s != 0, axis=1)) and not np.any(near))


def ml_linear_regress(X, *, coefficients=None, intercepts=None, targets=1, post_transform="NONE"):
    """Y[n, t] = post_transform(sum_c X[n, c] * coefficients[t * C + c] + intercepts[t])."""
    return ml_post_transform(ml_linear_scores(X, coefficients, intercepts), post_transform).astype(_F32)


def _labels_out(picks, classlabels_ints, classlabels_strings) -> np.ndarray:
    labels = list(classlabels_strings) if classlabels_strings else list(classlabels_ints)
    Y = np.empty(len(picks), dtype=object if classlabels_strings else np.int64)
    Y[:] = [labels[int(i)] for i in picks]
    return Y


def ml_linear_classify(X, *, coefficients=None, intercepts=None, classlabels_ints=None, classlabels_strings=None,
                       multi_class=0, post_transform="NONE"):
    """Scores X . W^T + b per class; the label is the class of the largest raw score (the first
    on ties). One row of coefficients with two class labels is a binary model: scores [-s, s],
    label classlabels[1] where s > 0, else classlabels[0]. Z is post_transform(scores)."""
    s = ml_linear_scores(X, coefficients, intercepts)
    n_labels = len(classlabels_strings or classlabels_ints or [])
    if s.shape[1] == 1 and n_labels == 2:
        picks = np.where(s[:, 0] > 0, 1, 0)
        s = np.concatenate([-s, s], axis=1)
    else:
        picks = np.argmax(np.where(np.isnan(s), -np.inf, s), axis=1) if s.shape[0] else np.zeros(0, np.int64)
    return _labels_out(picks, classlabels_ints, classlabels_strings), \
        ml_post_transform(s, post_transform).astype(_F32)


# ---------------------------------------------------------------------------------------------
# support vector machines


def ml_svm_kernel(x: np.ndarray, sv: np.ndarray, kernel_type: str, kernel_params) -> np.ndarray:
    """K(x_n, sv_j) for every example n and support vector j, [N, V], in float64: LINEAR x . v,
    POLY (gamma x . v + coef0)^degree, RBF exp(-gamma |x - v|^2), SIGMOID tanh(gamma x . v + coef0)."""
    gamma, coef0, degree = (list(kernel_params) + [0.0, 0.0, 0.0])[:3] if kernel_params else (0.0, 0.0, 0.0)
    with np.errstate(all="ignore"):
        if kernel_type == "RBF":
            diff = x[:, None, :] - sv[None, :, :]
            return np.exp(-gamma * np.sum(diff * diff, axis=2))
        dot = x @ sv.T
        if kernel_type == "POLY":
            return np.power(gamma * dot + coef0, degree)
        if kernel_type == "SIGMOID":
            return np.tanh(gamma * dot + coef0)
    return dot


def ml_svm_regress(X, *, coefficients=None, kernel_params=None, kernel_type="LINEAR", n_supports=0, one_class=0,
                   post_transform="NONE", rho=None, support_vectors=None):
    """Y[n, 0] = sum_j coefficients[j] K(X[n], sv_j) + rho[0] (n_supports > 0), or
    X[n] . coefficients + rho[0] (n_supports = 0); one_class gives the sign (1 or -1); then the
    post_transform of the single score."""
    x = _model_rows(X)
    b = float(rho[0]) if rho else 0.0
    with np.errstate(all="ignore"):
        if n_supports and n_supports > 0:
            sv = np.asarray(support_vectors, dtype=np.float64).reshape(int(n_supports), -1)
            y = ml_svm_kernel(x, sv, kernel_type, kernel_params) @ np.asarray(coefficients, dtype=np.float64) + b
        else:
            y = x @ np.asarray(coefficients, dtype=np.float64) + b
    y = y.reshape(-1, 1)
    if one_class:
        y = np.where(y > 0, 1.0, -1.0)
    return ml_post_transform(y, post_transform).astype(_F32)


def _svm_linear_mode(X, labels, coefficients, rho, post_transform):
    """liblinear's layout: s[n, e] = X[n] . coefficients[e] + rho[0]; the largest score wins."""
    x = _model_rows(X)
    w = np.asarray(coefficients, dtype=np.float64).reshape(len(labels), -1)
    with np.errstate(all="ignore"):
        s = x @ w.T + float(rho[0])
    picks = np.argmax(np.where(np.isnan(s), -np.inf, s), axis=1) if s.shape[0] else np.zeros(0, np.int64)
    return picks, ml_post_transform(s, post_transform)


def ml_svm_decisions(X, coefficients, kernel_params, kernel_type, rho, support_vectors, vectors_per_class):
    """libsvm's one-vs-one decision values, [N, E(E-1)/2] in pair order (0,1), (0,2) ... (1,2) ...,
    and beside them the sum of their terms' magnitudes. With V support vectors stored class after
    class (vectors_per_class) and coefficients as [E-1, V], the pair (i, j) sums
    coefficients[j-1, v] K(x, sv_v) over class i's vectors, coefficients[i, v] K(x, sv_v) over class
    j's, and adds rho[pair]."""
    x = _model_rows(X)
    counts = [int(c) for c in vectors_per_class]
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    sv = np.asarray(support_vectors, dtype=np.float64).reshape(int(starts[-1]), -1)
    coef = np.asarray(coefficients, dtype=np.float64).reshape(len(counts) - 1, int(starts[-1]))
    k = ml_svm_kernel(x, sv, kernel_type, kernel_params)
    cols, mags = [], []
    with np.errstate(all="ignore"):
        for p, (i, j) in enumerate((i, j) for i in range(len(counts)) for j in range(i + 1, len(counts))):
            ti = coef[j - 1, starts[i]:starts[i + 1]] * k[:, starts[i]:starts[i + 1]]
            tj = coef[i, starts[j]:starts[j + 1]] * k[:, starts[j]:starts[j + 1]]
            cols.append(np.sum(ti, axis=1) + np.sum(tj, axis=1) + float(rho[p]))
            mags.append(np.sum(np.abs(ti), axis=1) + np.sum(np.abs(tj), axis=1) + abs(float(rho[p])))
    shape = (x.shape[0], len(cols))
    return np.stack(cols, axis=1).reshape(shape), np.stack(mags, axis=1).reshape(shape)


_COUPLING_STEPS = 100  # onnxruntime stops after 100 sweeps, onnx.reference after max(100, E)


def ml_svm_couple(r: np.ndarray) -> tuple[np.ndarray, float]:
    """Class probabilities p from pairwise ones r[i, j] = P(i | i or j) by Wu, Lin and Weng's
    second method (libsvm's multiclass_probability): minimise p' Q p over the simplex with
    Q[t, t] = sum_{j != t} r[j, t]^2 and Q[t, j] = -r[j, t] r[t, j], by coordinate sweeps from the
    uniform p, stopping when max_t |(Qp)_t - p'Qp| < 0.005 / E or after 100 sweeps. Also returns
    how close (relative to the threshold) any check came to it: a check that close is decided by
    rounding, not by the text."""
    k = r.shape[0]
    q = -(r.T * r)
    np.fill_diagonal(q, 0.0)
    np.fill_diagonal(q, np.sum(r * r, axis=0) - np.diag(r) ** 2)
    p = np.full(k, 1.0 / k)
    eps = 0.005 / k
    margin = math.inf
    for _ in range(_COUPLING_STEPS):
        qp = q @ p
        pqp = float(p @ qp)
        err = float(np.max(np.abs(qp - pqp)))
        margin = min(margin, abs(err - eps) / eps)
        if err < eps:
            break
        for t in range(k):
            diff = (pqp - qp[t]) / q[t, t]
            p[t] += diff
            pqp = (pqp + diff * (diff * q[t, t] + 2.0 * qp[t])) / (1.0 + diff) ** 2
            qp = (qp + diff * q[t, :]) / (1.0 + diff)
            p = p / (1.0 + diff)
    return p, margin


def _svm_pairwise_r(d_row: np.ndarray, prob_a, prob_b, k: int) -> np.ndarray:
    """r[i, j] = 1 / (1 + exp(A d + B)) (Platt's sigmoid as libsvm writes it) clipped to
    [1e-7, 1 - 1e-7], and r[j, i] = 1 - r[i, j]."""
    r = np.zeros((k, k))
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            with np.errstate(all="ignore"):
                v = 1.0 / (1.0 + math.exp(min(float(d_row[p]) * float(prob_a[p]) + float(prob_b[p]), 700.0)))
            r[i, j] = min(max(v, 1e-7), 1.0 - 1e-7)
            r[j, i] = 1.0 - r[i, j]
            p += 1
    return r


def _svm_votes(d: np.ndarray, k: int) -> np.ndarray:
    """The one-vs-one vote winner of each row: pair (i, j) votes i when its value is > 0, else j;
    the first class with the most votes wins."""
    votes = np.zeros((d.shape[0], k), dtype=np.int64)
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            votes[:, i] += d[:, p] > 0
            votes[:, j] += ~(d[:, p] > 0)
            p += 1
    return np.argmax(votes, axis=1) if d.shape[0] else np.zeros(0, np.int64)


def _svm_vector_mode(X, labels, coefficients, kernel_params, kernel_type, rho, support_vectors, vectors_per_class,
                     prob_a, prob_b, post_transform):
    """Y the vote winner; Z the decision values (two classes: [-d, d]) or, with prob_a, the
    coupled class probabilities, through post_transform."""
    k = len(labels)
    d, _ = ml_svm_decisions(X, coefficients, kernel_params, kernel_type, rho, support_vectors, vectors_per_class)
    picks = _svm_votes(d, k)
    if prob_a:
        z = np.zeros((d.shape[0], k))
        for n in range(d.shape[0]):
            z[n], _ = ml_svm_couple(_svm_pairwise_r(d[n], prob_a, prob_b, k))
    elif k == 2:
        z = np.concatenate([-d, d], axis=1)
    else:
        z = d
    return picks, ml_post_transform(z, post_transform)


def ml_svm_classify(X, *, classlabels_ints=None, classlabels_strings=None, coefficients=None, kernel_params=None,
                    kernel_type="LINEAR", post_transform="NONE", prob_a=None, prob_b=None, rho=None,
                    support_vectors=None, vectors_per_class=None):
    """SVMClassifier: the linear mode (no support vectors) scores each class, the support-vector
    mode takes one-vs-one votes (see the two mode helpers and the op's page)."""
    labels = classlabels_strings or classlabels_ints
    if vectors_per_class and sum(int(c) for c in vectors_per_class) > 0:
        picks, z = _svm_vector_mode(X, labels, coefficients, kernel_params, kernel_type, rho, support_vectors,
                                    vectors_per_class, prob_a, prob_b, post_transform)
    else:
        picks, z = _svm_linear_mode(X, labels, coefficients, rho, post_transform)
    return _labels_out(picks, classlabels_ints, classlabels_strings), z.astype(_F32)


def ml_svm_classify_defined(X, coefficients, kernel_params, kernel_type, rho, support_vectors, vectors_per_class,
                            prob_a, prob_b, post_transform, n_classes) -> bool:
    """The support-vector mode's points that rounding, not the text, would decide stay out: every
    decision value finite and clear of 0 by 1e-4 of its terms' magnitudes (its vote), every
    coupling check clear of its threshold by 1% (the sweep count), and post_transform defined."""
    d, mag = ml_svm_decisions(X, coefficients, kernel_params, kernel_type, rho, support_vectors, vectors_per_class)
    if not np.all(np.isfinite(d)) or np.any(np.abs(d) <= 1e-4 * mag + 1e-6):
        return False
    if not prob_a:
        z = np.concatenate([-d, d], axis=1) if n_classes == 2 else d
        return ml_transform_defined(z, post_transform)
    rows = []
    for n in range(d.shape[0]):
        p, margin = ml_svm_couple(_svm_pairwise_r(d[n], prob_a, prob_b, n_classes))
        if margin < 0.01:
            return False
        rows.append(p)
    return ml_transform_defined(np.asarray(rows).reshape(d.shape[0], n_classes), post_transform)
