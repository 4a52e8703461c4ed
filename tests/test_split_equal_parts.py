"""Split before opset 18 without `split` cuts the axis "to equal sized parts": an axis the number
of outputs does not divide has no defined result (Split-18 added num_outputs and a smaller last
chunk). The kernel rejected nothing and chunked [1, 2]; runtimes then disagreed every which way
(torch refuses, OpenVINO returns empty chunks) and opkit charged them."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.kernels import KernelValidationError
from opkit.kernels.registry import get_kernel


@pytest.mark.parametrize("since", [2, 11, 13])
def test_an_uneven_equal_split_is_not_a_valid_case(since):
    split = get_kernel("ai.onnx", "Split", since)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    with pytest.raises(KernelValidationError, match="equal parts"):
        split(x, axis=-1, _n_outputs=2)
    assert [c.shape for c in split(x, axis=0, _n_outputs=2)] == [(2, 3), (2, 3)]


def test_split_18_keeps_its_smaller_last_chunk():
    split = get_kernel("ai.onnx", "Split", 18)
    chunks = split(np.arange(7, dtype=np.float32), None, axis=0, num_outputs=4, _n_outputs=4)
    assert [c.shape for c in chunks] == [(2,), (2,), (2,), (1,)]
