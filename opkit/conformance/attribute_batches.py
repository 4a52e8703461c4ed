"""The robustness suite's attribute batches: a drawn case with each attribute set to each
out-of-domain value, on the base cases most likely to reach another code path."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..spec.model import OpVersion
from ..cases.hostile import attribute_candidates, max_rank
from ..cases.case import Case

ATTRIBUTE_BATCH = "attributes"  # a robustness draw (case, seed, ATTRIBUTE_BATCH): hostile.attribute_variants


ATTRIBUTE_BATCHES = 2  # robustness bindings per op version that get the attribute batch


def attribute_batch(bases, version: OpVersion, swept: list) -> list:
    """For the first ATTRIBUTE_BATCHES bindings of an op version whose robustness draws found
    nothing: a drawn case, each attribute then set to each out-of-domain value
    (``hostile.attribute_variants``). A crash is an attribute's code path, rarely a type's (the
    crash replay takes it to the other bindings), but often the path the other attributes choose:
    onnxruntime 1.16's MaxPool divided by a stride of 0 and read out of bounds with pads of -1 on
    the plain path (unit dilations, no pads), and gave a clean error for both with dilations of 2.
    So the first base is the one giving the most attribute values, the second the plainest (fewest
    attributes off their neutral value, see ``_plainness``), of an input rank the first did not
    have where the draws allow (1-D, 2-D and 3-D pooling are separate kernels), as the plainest
    model (``_plain_model``: constant inputs, no optional outputs)."""
    if len(swept) >= ATTRIBUTE_BATCHES or not bases or not attribute_candidates(version):
        return []
    # by identity: a Case holds arrays, whose == compares (and broadcasts) element by element
    fresh = [d for d in bases if all(d[0] is not case for case in swept)] or bases
    if not swept:
        base = max(fresh, key=lambda d: (len(d[0].attributes), d[0].size()))
    else:
        ranks = {max_rank(case) for case in swept}
        base = max(fresh, key=lambda d: (max_rank(d[0]) not in ranks, -_plainness(d[0], version), d[0].size()))
        base = (_plain_model(base[0], version), *base[1:])
    swept.append(base[0])
    return [(base[0], base[1], ATTRIBUTE_BATCH)]


def _plain_model(case: Case, version: OpVersion) -> Case:
    """``case`` as the plainest model of it: every tensor input a constant (an initializer: the
    runtime's shape inference and constant folding see the shapes and values at load, where
    onnxruntime 1.16 divided by MaxPool's zero stride; fed inputs are declared with symbolic
    dimensions, and it returned an error at run time), and only the leading required outputs
    declared (a node may leave trailing optional outputs out; MaxPool's Indices output is
    another path)."""
    tensors = frozenset(name for name, arr in case.inputs if isinstance(arr, np.ndarray))
    options = [p.option for p in version.outputs]
    required = next((i for i, option in enumerate(options) if option == "optional"), len(options))
    plain = replace(case, initializers=tensors)
    if not case.n_outputs and "variadic" not in options and 0 < required < len(options):
        plain = replace(plain, n_outputs=required)
    return plain


def _plainness(case: Case, version: OpVersion) -> int:
    """How many attributes ``case`` sets off their neutral value: the spec's default, or a list
    of all zeros or all ones (no pads, unit strides or dilations, a kernel of 1), which is how the
    spec's defaults for those read when the list is given explicitly."""
    defaults = {a.name: a.default for a in version.attributes if a.has_default}
    off = 0
    for name, value in case.attributes:
        if name in defaults and defaults[name] == value:
            continue
        if isinstance(value, (list, tuple)) and value and len(set(value)) == 1 and value[0] in (0, 1):
            continue
        off += 1
    return off
