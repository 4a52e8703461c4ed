"""Which ONNX an onnxruntime release knows: its newest IR version and opsets, per release.

onnxruntime refuses a model whose IR version is newer than the onnx it was built with ("Unsupported
model IR version: 13, max supported IR version: 9" on 1.16) and, for an opset newer than the last
released one it knows, says "Opset 27 is under development ... Current official support for domain
ai.onnx is till opset 26". Neither is a finding about an operator: opkit writes models at the IR
version the installed release reads and skips op versions beyond its opsets.

Sources: releases up to 1.20 are the table of onnxruntime's docs page "ONNX Runtime compatibility"
(docs/reference/compatibility.md, "ONNX opset support"). That page stops at 1.20; the rows after it
were measured on the released wheels (a one-node model loaded at rising IR versions and opsets,
reading the limits from the two messages above). Measuring 1.20.1 the same way gave the docs'
numbers except ai.onnx.ml (loader 5, docs 4: the docs column is the ML opset whose kernels are
implemented, the loader accepts the newest released one); the table keeps the docs' value.

A release newer than the last row gets the last row's numbers: a model it could read is never
refused, and at worst an op version it might know is skipped instead of run (``for_version``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Compatibility:
    """What one onnxruntime release reads."""

    ir_version: int  # the newest model IR version it loads
    ai_onnx_opset: int  # the newest ai.onnx opset it officially supports
    ai_onnx_ml_opset: int  # the newest ai.onnx.ml opset
    source: str  # "docs" (the compatibility page) or "measured" (the released wheel)

    def opsets(self) -> dict[str, int]:
        return {"ai.onnx": self.ai_onnx_opset, "ai.onnx.ml": self.ai_onnx_ml_opset}


def _docs(ir: int, opset: int, ml: int) -> Compatibility:
    return Compatibility(ir, opset, ml, "docs")


def _measured(ir: int, opset: int, ml: int) -> Compatibility:
    return Compatibility(ir, opset, ml, "measured")


# (major, minor) -> what the release reads; patch releases never changed these
TABLE: dict[tuple[int, int], Compatibility] = {
    (1, 0): _docs(6, 11, 2), (1, 1): _docs(6, 11, 2), (1, 2): _docs(6, 11, 2),
    (1, 3): _docs(7, 12, 2), (1, 4): _docs(7, 12, 2), (1, 5): _docs(7, 12, 2),
    (1, 6): _docs(7, 13, 2), (1, 7): _docs(7, 13, 2),
    (1, 8): _docs(7, 14, 2),
    (1, 9): _docs(8, 15, 2), (1, 10): _docs(8, 15, 2),
    (1, 11): _docs(8, 16, 2),
    (1, 12): _docs(8, 17, 3), (1, 13): _docs(8, 17, 3),
    (1, 14): _docs(8, 18, 3),
    (1, 15): _docs(8, 19, 3),
    (1, 16): _docs(9, 19, 3),
    (1, 17): _docs(9, 20, 4),
    (1, 18): _docs(10, 21, 4), (1, 19): _docs(10, 21, 4), (1, 20): _docs(10, 21, 4),
    (1, 21): _measured(10, 22, 5), (1, 22): _measured(10, 22, 5),
    (1, 23): _measured(11, 23, 5),
    (1, 24): _measured(13, 25, 5),
    (1, 25): _measured(13, 26, 5), (1, 26): _measured(13, 26, 5), (1, 27): _measured(13, 26, 5),
    (1, 28): _measured(13, 26, 5), (1, 29): _measured(13, 26, 5), (1, 30): _measured(13, 26, 5),
    (1, 31): _measured(13, 26, 5),
    (1, 32): _measured(14, 28, 5),
}
# "All versions of ONNX Runtime support ONNX opsets from ONNX v1.2.1+ (opset version 7 and higher)"
# (the compatibility page, "ONNX opset support"). Below it onnxruntime keeps no kernels for the
# op versions opset 7 replaced (Add-6: "Could not find an implementation for Add(6)") and its graph
# transformers break opset-1 models (a Cast with an INT "to", which Cast-1 types as a STRING).
OLDEST_AI_ONNX_OPSET = 7
OLDEST = min(TABLE)
NEWEST = max(TABLE)


def release(version: str) -> tuple[int, int] | None:
    """(major, minor) of a version string ("1.16.3", "1.31.1+cu12", "1.32.0.dev20260101"); None
    when it has no such prefix."""
    m = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def for_version(version: str) -> Compatibility:
    """What the release ``version`` reads. Releases newer than the table get its newest row,
    older ones (and unparsable versions) its oldest."""
    key = release(version)
    if key is None or key < OLDEST:
        return TABLE[OLDEST]
    if key > NEWEST:
        return TABLE[NEWEST]
    if key in TABLE:
        return TABLE[key]
    return TABLE[max(k for k in TABLE if k <= key)]
