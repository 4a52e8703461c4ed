"""validate catches kernels that would only fail later: an unknown template (a traceback in
`opkit gen`), a dangling same_as, and a reused body that reads names the reusing version lacks
(Tile-1 reused Tile-13's body, which reads `repeats`: every Tile-1 case was a NameError)."""

from __future__ import annotations

import os

from opkit.spec.load import load_spec_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TILE = os.path.join(ROOT, "specs", "ai.onnx", "Tile.yaml")

SPEC = """op: Two
domain: my.ops
versions:
- since: 1
  inputs:
  - name: X
    type: T
  outputs:
  - name: Y
    type: T
  type_constraints:
    T:
      types: [tensor(float)]
  kernel:
    {kernel1}
- since: 2
  inputs:
  - name: Z
    type: T
  outputs:
  - name: Y
    type: T
  type_constraints:
    T:
      types: [tensor(float)]
  kernel:
    {kernel2}
"""


def messages(kernel1: str, kernel2: str) -> list[str]:
    text = SPEC.format(kernel1=kernel1, kernel2=kernel2)
    _, diags = load_spec_file("my.ops/Two.yaml", text.encode())
    return [f"{d.location.line}: {d.message}" for d in diags]


def test_a_reused_body_must_only_use_names_the_version_has():
    assert messages("same_as: 2", "python: return np.abs(Z)") == [
        "15: kernel same_as 2: the body of version 2 uses 'Z', which version 1 does not have "
        "(hint: give this version a kernel of its own)"]
    assert messages("python: return np.abs(X)", "same_as: 1") == [
        "27: kernel same_as 1: the body of version 1 uses 'X', which version 2 does not have "
        "(hint: give this version a kernel of its own)"]


def test_same_as_must_name_a_version_with_a_kernel():
    assert messages("python: return X", "same_as: 7") == [
        "27: kernel same_as 7: no version 7 with a kernel (or a cycle); versions: 1, 2"]
    assert messages("same_as: 2", "same_as: 1")[0].startswith("15: kernel same_as 2: no version 1 with a kernel (or a cycle)")


def test_an_unknown_template_is_a_located_error():
    assert messages("template: unry", "python: return Z") == [
        "15: unknown kernel template 'unry' (hint: did you mean 'unary'?)"]


def test_tile_1_has_a_kernel_of_its_own_that_runs():
    from opkit.kernels.registry import get_kernel
    import numpy as np

    spec, diags = load_spec_file(TILE)
    assert not diags
    tile_1 = get_kernel("ai.onnx", "Tile", 1)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = tile_1(x, np.array(2.0, np.float32), np.array(1.0, np.float32))
    assert np.array_equal(y, np.tile(x, [1, 2]))
