"""Tensor bytes in ONNX's layout, the one runtimes read and write: sub-byte types packed.

ONNX stores int4, uint4 and float4e2m1 two to a byte and int2, uint2 four to a byte (TensorProto
raw data; the first element in the lowest bits, an odd count padded with zero bits), and a runtime's
tensor of such a type holds the same packed bytes. numpy (through ml_dtypes) keeps one element per
byte instead, in the byte's low bits. Handing a runtime the numpy bytes as they are makes it read
two elements from each (onnxruntime read int4 [1, -2, 3] as [1, 0, -2]): a mismatch that is opkit's
doing. ``raw_bytes`` and ``from_raw_bytes`` convert between the two; wider types are plain
little-endian bytes either way.
"""

from __future__ import annotations

import numpy as np

from ..core.dtypes import elem_of, np_dtype

BITS = {"int4": 4, "uint4": 4, "float4e2m1": 4, "int2": 2, "uint2": 2}  # elements narrower than a byte


def is_packed(elem: str) -> bool:
    return elem_of(elem) in BITS


def packed_size(count: int, elem: str) -> int:
    """Bytes holding ``count`` elements of ``elem`` in ONNX's layout."""
    bits = BITS.get(elem_of(elem))
    if bits is None:
        return count * np_dtype(elem_of(elem)).itemsize
    per_byte = 8 // bits
    return (count + per_byte - 1) // per_byte


def raw_bytes(array: np.ndarray, elem: str) -> bytes:
    """``array``'s elements as ONNX raw data of element type ``elem`` (row-major)."""
    elem = elem_of(elem)
    array = np.asarray(array)
    bits = BITS.get(elem)
    if bits is None:
        return np.ascontiguousarray(array).tobytes()
    per_byte = 8 // bits
    # ml_dtypes keeps the value in the low bits of its byte (the high bits are not part of it)
    values = np.ascontiguousarray(array).reshape(-1).view(np.uint8) & np.uint8((1 << bits) - 1)
    padded = np.zeros(packed_size(values.size, elem) * per_byte, dtype=np.uint8)
    padded[:values.size] = values
    lanes = padded.reshape(-1, per_byte)
    packed = np.zeros(lanes.shape[0], dtype=np.uint8)
    for lane in range(per_byte):
        packed |= lanes[:, lane] << np.uint8(lane * bits)
    return packed.tobytes()


def from_raw_bytes(data: bytes, elem: str, shape) -> np.ndarray:
    """The array of element type ``elem`` and ``shape`` that ONNX raw data ``data`` holds."""
    elem = elem_of(elem)
    shape = tuple(int(d) for d in shape)
    dtype = np_dtype(elem)
    count = int(np.prod(shape, dtype=np.int64))
    bits = BITS.get(elem)
    buf = np.frombuffer(bytes(data), dtype=np.uint8)
    if bits is None:
        return buf.view(dtype)[:count].reshape(shape).copy()
    if buf.size < packed_size(count, elem):
        raise ValueError(f"{buf.size} bytes cannot hold {count} {elem} elements ({packed_size(count, elem)} needed)")
    per_byte = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    lanes = [(buf >> np.uint8(lane * bits)) & mask for lane in range(per_byte)]
    values = np.stack(lanes, axis=1).reshape(-1)[:count]
    return values.view(dtype).reshape(shape).copy()
