"""Judging one draw of a random op (RandomUniform(Like), RandomNormal(Like), Bernoulli,
Multinomial, Dropout in training mode) by what the ONNX text says of its distribution, since the
values cannot be compared with the reference kernel's own draw.

A draw must pass, in this order:

* **structure**: each output's type and shape (as the reference kernel's draw has them);
* **range**: RandomUniform values in [low, high] (the text names the range "by low and high" and
  does not say whether high is excluded, so high is allowed; both ends rounded to the output
  type), RandomNormal values finite where the distribution fits the output type, Bernoulli values
  in {0, 1} with 0 where the probability is 0 and 1 where it is 1, Multinomial indices in
  [0, class count), Dropout outputs either 0 or ``data * scale`` (``scale = 1 / (1 - ratio)``),
  consistent with the mask when the mask is asked for;
* **moments**, only when the sample has at least ``MIN_SAMPLE`` values (smaller samples are
  skipped, and the verdict's notes say so): the sample mean (and for the continuous ops the mean
  squared deviation from the distribution's mean) within a bound chosen so that a conforming
  generator fails a check with probability at most ``FALSE_ALARM`` = 1e-6:

  - RandomUniform mean vs (low + high) / 2 and mean squared deviation vs (high - low)^2 / 12:
    Hoeffding, ``t = w * sqrt(ln(2 / 1e-6) / (2 n))`` with ``w`` the width of the values' range
    (high - low, and ((high - low) / 2)^2 for the squares);
  - RandomNormal mean vs ``mean``: exact for a normal sample, ``t = z * scale / sqrt(n)`` with
    ``z = 4.89`` (the two-sided 1e-6 quantile); mean squared deviation vs ``scale^2``: the
    Laurent-Massart chi-square bounds, ``scale^2 * [1 - 2 sqrt(x / n), 1 + 2 sqrt(x / n) + 2 x / n]``
    with ``x = ln(2 / 1e-6)``;
  - Bernoulli mean of the output vs mean of the input probabilities: Hoeffding with w = 1;
  - Multinomial frequency of each class in each row vs the softmax of the row (the text calls the
    input unnormalized log-probabilities): Hoeffding with the 1e-6 split over rows x classes;
  - Dropout kept fraction vs 1 - ratio: Hoeffding with w = 1.

  Every bound is widened by the rounding of the values to the output type (half an ULP of each
  value) and of the attributes to float32, so a correct generator in a narrow type is not charged.

A failed check raises ``Mismatch`` naming the statistic, the observed value, the bound and the
sample size ("mean 0.71 outside 0.5 +- 0.03 (n=4096, false alarm <= 1e-06)"). What the text does
not decide (RandomUniform with low > high, Dropout's ratio of 1) is not judged, and said so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ..core.dtypes import elem_from_dtype
from ..core.values import structure
from .output_compare import Mismatch, compare, compare_value
from .ulp import ulp

FALSE_ALARM = 1e-6  # chance that a conforming generator fails one moment check
MIN_SAMPLE = 1024  # fewer values: the moment checks are skipped (their bounds would say little)
_LOG = math.log(2.0 / FALSE_ALARM)  # Hoeffding's two-sided log term
_Z = NormalDist().inv_cdf(1.0 - FALSE_ALARM / 2.0)  # 4.89

RANDOM_OPS = ("RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Bernoulli",
              "Multinomial", "Dropout")


@dataclass(frozen=True)
class Moment:
    """One moment check: ``observed`` must be within ``center - low .. center + high``."""

    statistic: str
    observed: float
    center: float
    low: float
    high: float
    n: int

    @property
    def holds(self) -> bool:
        return bool(self.center - self.low <= self.observed <= self.center + self.high)

    def describe(self) -> str:
        spread = f"+- {self.high:.3g}" if math.isclose(self.low, self.high) else f"-{self.low:.3g} +{self.high:.3g}"
        return (f"{self.statistic} {self.observed:.6g} {'within' if self.holds else 'outside'} {self.center:.6g} "
                f"{spread} (n={self.n}, false alarm <= {FALSE_ALARM:g})")


def hoeffding(width: float, n: int, tests: int = 1) -> float:
    """Half-width t of the interval the mean of n independent values in a range of ``width``
    leaves with probability <= FALSE_ALARM (split over ``tests`` tests): P(|mean - mu| >= t) <=
    2 exp(-2 n t^2 / width^2)."""
    return width * math.sqrt(math.log(2.0 * tests / FALSE_ALARM) / (2.0 * n))


def judge(op: str, attributes: dict, inputs: dict, expected: tuple, actual: list) -> list[str]:
    """Raise ``Mismatch`` unless ``actual`` is a draw the text allows; return notes on what was
    judged (moments skipped, what the text leaves open)."""
    for i, exp in enumerate(expected):
        if exp is None:
            continue
        if i >= len(actual):
            raise Mismatch("missing", f"backend returned {len(actual)} outputs, expected {len(expected)}")
        compare_value(structure(exp), structure(actual[i]), name=f"output {i}")
    judge_fn = _JUDGES.get(op)
    if judge_fn is None:
        return []
    with np.errstate(all="ignore"):
        return judge_fn(attributes, inputs, [np.asarray(a) for a in actual])


def _f64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def _as_type(value: float, dtype) -> float:
    """``value`` rounded to the output type (how far a correct draw can reach)."""
    with np.errstate(all="ignore"):
        return float(np.asarray(value, dtype=np.float64).astype(dtype).astype(np.float64))


def _half_ulps(y: np.ndarray) -> np.ndarray:
    """Half an ULP of each value in its own type: how far rounding to the output type moves it."""
    return ulp(np.abs(_f64(y)), elem_from_dtype(y.dtype)) / 2.0


def _attr_slack(*values: float) -> float:
    """ONNX float attributes are float32: one float32 ULP of the largest of them."""
    return float(ulp(np.array(max(abs(v) for v in values)), "float")) if values else 0.0


def _check(moments: list[Moment]) -> list[str]:
    for m in moments:
        if not m.holds:
            raise Mismatch("statistic", m.describe(), {"statistic": m.statistic, "observed": m.observed,
                                                       "center": m.center, "bound": [m.low, m.high], "n": m.n,
                                                       "false_alarm": FALSE_ALARM})
    return [m.describe() for m in moments]


def _skipped(n: int) -> list[str]:
    return [f"moments not checked: n={n} < {MIN_SAMPLE} values"]


def _range_error(name: str, bad: np.ndarray, y: np.ndarray, what: str) -> Mismatch:
    first = int(np.flatnonzero(bad.ravel())[0])
    value = y.ravel()[first]
    value = value.item() if hasattr(value, "item") else value
    return Mismatch("range", f"{name}: {int(bad.sum())}/{bad.size} values {what}; first {value!r} "
                    f"at flat index {first}", {"mismatched": int(bad.sum()), "total": int(bad.size)})


def _uniform(attributes: dict, inputs: dict, actual: list) -> list[str]:
    y = actual[0]
    low, high = float(attributes.get("low", 0.0)), float(attributes.get("high", 1.0))
    if not low <= high:
        return [f"not judged: low {low:g} > high {high:g}, for which the text gives no range"]
    lo, hi = _as_type(low, y.dtype), _as_type(high, y.dtype)
    v = _f64(y)
    bad = ~((v >= lo) & (v <= hi))
    if bad.any():
        raise _range_error("output", bad, y, f"outside [low, high] = [{low:g}, {high:g}]")
    n = v.size
    if n < MIN_SAMPLE:
        return _skipped(n)
    width = high - low
    if not math.isfinite(width):
        return [f"moments not checked: high - low = {width} is not finite"]
    center = (low + high) / 2.0
    e = _half_ulps(y)
    a = _attr_slack(low, high)
    mean_t = hoeffding(width, n) + float(e.mean()) + a
    dev = v - center
    sq_t = hoeffding((width / 2.0) ** 2, n) + float(np.mean(2 * np.abs(dev) * (e + a) + (e + a) ** 2))
    return _check([Moment("mean", float(v.mean()), center, mean_t, mean_t, n),
                   Moment("mean squared deviation from (low+high)/2", float(np.mean(dev * dev)),
                          width * width / 12.0, sq_t, sq_t, n)])


def _normal(attributes: dict, inputs: dict, actual: list) -> list[str]:
    y = actual[0]
    mu, sigma = float(attributes.get("mean", 0.0)), float(attributes.get("scale", 1.0))
    v = _f64(y)
    fits = all(math.isfinite(_as_type(mu + k * sigma, y.dtype)) for k in (-40.0, 40.0))
    if fits and not np.isfinite(v).all():
        raise _range_error("output", ~np.isfinite(v), y, f"not finite (mean {mu:g}, scale {sigma:g})")
    n = v.size
    if n < MIN_SAMPLE:
        return _skipped(n)
    if not fits:
        return [f"moments not checked: mean {mu:g} +- 40 scale leaves the output type"]
    e = _half_ulps(y) + _attr_slack(mu, sigma) * (1.0 + np.abs(v - mu) / max(abs(sigma), 1e-300))
    mean_t = _Z * abs(sigma) / math.sqrt(n) + float(e.mean())
    dev = v - mu
    rounding = float(np.mean(2 * np.abs(dev) * e + e * e))
    s2 = sigma * sigma
    below = s2 * 2 * math.sqrt(_LOG / n) + rounding
    above = s2 * (2 * math.sqrt(_LOG / n) + 2 * _LOG / n) + rounding
    return _check([Moment("mean", float(v.mean()), mu, mean_t, mean_t, n),
                   Moment("mean squared deviation from mean", float(np.mean(dev * dev)), s2, below, above, n)])


def _bernoulli(attributes: dict, inputs: dict, actual: list) -> list[str]:
    y, p = _f64(actual[0]), _f64(inputs["input"])
    bad = ~((y == 0) | (y == 1))
    if bad.any():
        raise _range_error("output", bad, actual[0], "neither 0 nor 1")
    sure = ((p == 0) & (y != 0)) | ((p == 1) & (y != 1))
    if sure.any():
        raise _range_error("output", sure, actual[0], "differ from a probability of 0 or 1")
    n = y.size
    if n < MIN_SAMPLE:
        return _skipped(n)
    t = hoeffding(1.0, n)
    return _check([Moment("mean", float(y.mean()), float(p.mean()), t, t, n)])


def _multinomial(attributes: dict, inputs: dict, actual: list) -> list[str]:
    y, x = actual[0], _f64(inputs["input"])
    batch, classes = x.shape
    bad = ~((y >= 0) & (y < classes))
    if bad.any():
        raise _range_error("output", bad, y, f"outside the class indices [0, {classes})")
    samples = y.shape[1] if y.ndim == 2 else 0
    if samples < MIN_SAMPLE or batch == 0:
        return _skipped(samples)
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    t = hoeffding(1.0, samples, tests=batch * classes)
    worst = None
    for b in range(batch):
        if not np.isfinite(p[b]).all():
            continue  # a row without finite log-probabilities: the text gives it no distribution
        freq = np.bincount(y[b].astype(np.int64), minlength=classes) / samples
        k = int(np.argmax(np.abs(freq - p[b])))
        m = Moment(f"frequency of class {k} in row {b}", float(freq[k]), float(p[b, k]), t, t, samples)
        if worst is None or abs(m.observed - m.center) > abs(worst.observed - worst.center):
            worst = m
    return _check([worst]) if worst else ["moments not checked: no row has finite log-probabilities"]


def _dropout(attributes: dict, inputs: dict, actual: list) -> list[str]:
    data, ratio, training = inputs.get("data"), inputs.get("ratio"), inputs.get("training_mode")
    r = 0.5 if ratio is None else float(_f64(ratio).reshape(-1)[0])
    y = actual[0]
    mask = actual[1] if len(actual) > 1 and actual[1] is not None else None
    if training is None or not bool(np.asarray(training).reshape(-1)[0]) or r == 0:
        # the text: no training (or nothing dropped), the output is the input
        compare(data, y, name="output (not training: the input itself)")
        return ["not training or ratio 0: the output must be the input"]
    if not 0 <= r < 1:
        return [f"not judged: ratio {r:g} outside [0, 1)"]
    x, v = _f64(data), _f64(y)
    scaled = x / (1.0 - r)
    tol = 2 * ulp(np.abs(scaled), elem_from_dtype(y.dtype)) + 2 * ulp(np.abs(scaled), "float")
    in_type = scaled.astype(y.dtype).astype(np.float64)  # past the type's range: its infinity
    kept = (v == scaled) | (v == in_type) | (np.abs(v - scaled) <= tol) | (np.isnan(scaled) & np.isnan(v))
    # dropped: the text's scale * data * mask is 0, or NaN for a NaN or infinite data value (where
    # a runtime that selects 0 instead is not charged either)
    dropped = (v == 0) | (~np.isfinite(x) & np.isnan(v))
    bad = ~(kept | dropped)
    if bad.any():
        raise _range_error("output", bad, y, f"neither 0 nor data * scale (scale 1/(1-{r:g}))")
    if mask is not None:
        m = np.asarray(mask).astype(bool)
        wrong = (m & ~kept) | (~m & ~dropped)
        if wrong.any():
            raise _range_error("output", wrong, y, "disagree with the mask (kept: data * scale, dropped: 0)")
        known, keep = np.ones(m.shape, bool), m
    else:  # where data is 0 (or scaled data rounds to 0) the output does not say
        known, keep = kept != dropped, kept & ~dropped
    n = int(known.sum())
    if n < MIN_SAMPLE:
        return _skipped(n)
    t = hoeffding(1.0, n)
    return _check([Moment("kept fraction", float(keep[known].mean()), 1.0 - r, t, t, n)])


_JUDGES = {"RandomUniform": _uniform, "RandomUniformLike": _uniform, "RandomNormal": _normal,
           "RandomNormalLike": _normal, "Bernoulli": _bernoulli, "Multinomial": _multinomial, "Dropout": _dropout}
