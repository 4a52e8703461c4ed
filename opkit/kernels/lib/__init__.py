"""Compute helpers shared by several kernels (families of versions of one op, or related ops).

Spec ``python:`` bodies call these where versions differ only in how arguments arrive (an
attribute in one version, an input in the next): the semantics live here once. The helpers live in
one private module per family of ops; this package is their one public face: generated kernel
modules star-import it (``__all__``), other code imports names from it.
"""

from __future__ import annotations

# the module-level names lib.py had (lib.np, lib.math, lib.widen, ...), kept so that they stay reachable
import contextvars  # noqa: F401
import math  # noqa: F401

import ml_dtypes  # noqa: F401
import numpy as np  # noqa: F401

from ..runtime import as_dtype, compute_dtype, onnx_dtype, reduce_core, widen  # noqa: F401
from ._attention import attention, attention_defined, linear_attention, linear_attention_defined, rotary_embedding
from ._elementwise import dropout_core, int_div, int_pow, int_pow_defined, rng, shrink, shrink_defined, sigmoid
from ._indexing import gather_nd, scatter_elements, scatter_nd, tensor_scatter, topk_core, unique_core
from ._normalization import batch_norm, batch_norm_in_range, group_norm, layer_norm, rms_norm, stash_dtype
from ._quantization import (
    conv_integer, dequantize, dynamic_quantize_linear, matmul_integer, qlinear_conv, qlinear_matmul, quantize,
)
from ._ranges import einsum_in_range, mean_defined, prod_in_range, sampling_abs_max, sampling_type_max
from ._recurrent import RECURRENCE_PERTURBATION, _activation, rnn_core  # noqa: F401  (_activation: tests)
from ._reduction import REDUCERS, cumulative, log_sum_exp, reduce_float64, reduce_mean
from ._resize import resize, resize_is_whole
from ._sampling import (
    affine_grid, grid_sample, max_roi_pool, nearest_ties_clear, non_max_suppression, roi_align, roi_align_in_range,
)
from ._shape import center_crop_pad, depth_to_space, pad_core, slice_core, space_to_depth, split_core
from ._signal import dft, mel_weight_matrix, stft, window
from ._softmax import hardmax, log_softmax, nll_loss, softmax, softmax_2d, softmax_cross_entropy
from ._strings import string_normalizer, string_split, tfidf_vectorizer
from ._window import (
    causal_conv_in_range, causal_conv_with_state, col2im, conv, conv_in_range, conv_transpose, conv_transpose_in_range,
    deform_conv, max_unpool, pool, window_geometry,
)

__all__ = [
    "gather_nd", "scatter_elements", "scatter_nd", "split_core", "slice_core", "pad_core",
    "cumulative", "topk_core", "softmax", "log_softmax", "hardmax", "softmax_2d", "REDUCERS",
    "dropout_core", "unique_core", "batch_norm", "string_split", "string_normalizer",
    "window_geometry", "pool", "conv", "conv_transpose", "quantize", "dequantize", "matmul_integer",
    "conv_integer", "qlinear_matmul", "qlinear_conv", "max_unpool", "non_max_suppression", "col2im",
    "tensor_scatter", "rnn_core", "dft", "stft", "mel_weight_matrix", "resize", "grid_sample", "roi_align",
    "resize_is_whole", "conv_transpose_in_range", "roi_align_in_range", "sampling_abs_max", "sampling_type_max",
    "tfidf_vectorizer", "deform_conv", "depth_to_space", "space_to_depth", "layer_norm", "group_norm",
    "rms_norm", "rotary_embedding", "center_crop_pad", "affine_grid", "nll_loss", "mean_defined", "softmax_cross_entropy",
    "dynamic_quantize_linear", "window", "max_roi_pool", "rng", "attention", "attention_defined", "causal_conv_with_state",
    "linear_attention", "linear_attention_defined", "reduce_float64", "log_sum_exp", "int_pow", "int_pow_defined", "int_div", "reduce_mean", "stash_dtype",
    "shrink", "shrink_defined", "sigmoid",
    "conv_in_range", "causal_conv_in_range", "einsum_in_range", "batch_norm_in_range", "prod_in_range",
    "nearest_ties_clear",
]

# one module per newer family of ops; each lists its public helpers in its own ``__all__``
from . import _contrib_misc, _contrib_quant, _contrib_transformer, _control_flow, _ml, _ml_maps, _ml_trees, _training  # noqa: E402
from ._contrib_misc import *  # noqa: E402,F401,F403
from ._contrib_quant import *  # noqa: E402,F401,F403
from ._contrib_transformer import *  # noqa: E402,F401,F403
from ._control_flow import *  # noqa: E402,F401,F403
from ._ml import *  # noqa: E402,F401,F403
from ._ml_maps import *  # noqa: E402,F401,F403
from ._ml_trees import *  # noqa: E402,F401,F403
from ._training import *  # noqa: E402,F401,F403

__all__ += [*_contrib_misc.__all__, *_contrib_quant.__all__, *_contrib_transformer.__all__, *_control_flow.__all__,
            *_ml.__all__, *_ml_maps.__all__, *_ml_trees.__all__, *_training.__all__]
