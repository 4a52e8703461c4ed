"""The closed vocabularies of the spec format: ONNX type strings, attribute types, levels.

Everything that names a type goes through this module, so a typo in a spec is caught in one
place and the rest of opkit can trust the strings it is handed.
"""

from __future__ import annotations

import functools
import re

# ONNX element types in TensorProto.DataType order (onnx 1.23). The names are the ones ONNX
# type strings use: tensor(float), tensor(bfloat16), ...
ELEMENT_TYPES: tuple[str, ...] = (
    "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool",
    "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16",
    "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4",
    "float4e2m1", "float8e8m0", "uint2", "int2", "float6e2m3", "float6e3m2",
)
ELEMENT_TYPE_CODES: dict[str, int] = {name: i + 1 for i, name in enumerate(ELEMENT_TYPES)}

# Attribute types as OpSchema.AttrType names them, lower-cased (the spelling gen_doc prints).
ATTRIBUTE_TYPES: tuple[str, ...] = (
    "float", "int", "string", "tensor", "graph", "sparse_tensor", "type_proto",
    "floats", "ints", "strings", "tensors", "graphs", "sparse_tensors", "type_protos",
)

SUPPORT_LEVELS: tuple[str, ...] = ("common", "experimental")
DETERMINISM: tuple[str, ...] = ("deterministic", "nondeterministic", "unknown")
# families of ops whose cases one hook builds valid by construction (opkit.cases.families)
FAMILIES: tuple[str, ...] = ("window", "indices", "shape", "einsum", "quantization", "strings", "rnn",
                             "normalization", "matmul", "elementwise", "signal", "loss", "attention", "constant",
                             "detection", "reduction", "cast", "sequence", "shrink", "ml", "ml_tree", "ml_map",
                             "training", "control_flow")
OPTIONS: tuple[str, ...] = ("single", "optional", "variadic")
# how close two conforming implementations' float outputs must be (opkit.spec.accuracy says what
# each class allows and which class an op gets when its spec does not say)
ACCURACY_CLASSES: tuple[str, ...] = ("exact", "rounded", "elementary", "composite", "accumulating", "approximate")

# OpSchema reports "unbounded" arity as INT_MAX.
INFINITE_ARITY = 2147483647

# Domains whose ops live in the protobuf default domain ''.
DEFAULT_DOMAIN = "ai.onnx"


class TypeStringError(ValueError):
    """A type string is not a valid ONNX type string."""


_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\(|\)|,)")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip() == "":
                break
            raise TypeStringError(f"unexpected character {text[pos]!r} in type string {text!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _parse(tokens: list[str], pos: int, text: str) -> int:
    """Parse one type at tokens[pos]; return the position after it."""
    if pos >= len(tokens):
        raise TypeStringError(f"type string {text!r} ends too early")
    head = tokens[pos]
    if head in ("tensor", "sparse_tensor"):
        pos = _expect(tokens, pos + 1, "(", text)
        elem = tokens[pos] if pos < len(tokens) else ""
        if elem not in ELEMENT_TYPE_CODES:
            raise TypeStringError(f"unknown element type {elem!r} in {text!r}" + suggest(elem, ELEMENT_TYPES))
        return _expect(tokens, pos + 1, ")", text)
    if head in ("seq", "optional"):
        pos = _expect(tokens, pos + 1, "(", text)
        pos = _parse(tokens, pos, text)
        return _expect(tokens, pos, ")", text)
    if head == "map":
        pos = _expect(tokens, pos + 1, "(", text)
        key = tokens[pos] if pos < len(tokens) else ""
        if key not in ELEMENT_TYPE_CODES:
            raise TypeStringError(f"unknown map key type {key!r} in {text!r}")
        pos = _expect(tokens, pos + 1, ",", text)
        # map values are written either as an element type (map(int64, float)) or a full type
        if pos < len(tokens) and tokens[pos] in ELEMENT_TYPE_CODES and tokens[pos] not in ("tensor",):
            pos += 1
        else:
            pos = _parse(tokens, pos, text)
        return _expect(tokens, pos, ")", text)
    raise TypeStringError(
        f"unknown type {head!r} in {text!r}; expected tensor(...), sparse_tensor(...), seq(...), "
        "optional(...) or map(...)" + suggest(head, ("tensor", "sparse_tensor", "seq", "optional", "map"))
    )


def _expect(tokens: list[str], pos: int, tok: str, text: str) -> int:
    if pos >= len(tokens) or tokens[pos] != tok:
        got = repr(tokens[pos]) if pos < len(tokens) else "the end"
        raise TypeStringError(f"expected {tok!r} but found {got} in type string {text!r}")
    return pos + 1


@functools.lru_cache(maxsize=None)
def check_type_string(text: str) -> str:
    """Return ``text`` if it is a valid ONNX type string, else raise TypeStringError."""
    tokens = _tokens(text)
    end = _parse(tokens, 0, text)
    if end != len(tokens):
        raise TypeStringError(f"trailing text after type in {text!r}")
    return text


def is_type_string(text: str) -> bool:
    try:
        check_type_string(text)
    except TypeStringError:
        return False
    return True


def tensor_element(type_str: str) -> str | None:
    """'tensor(float)' -> 'float'; None for anything that is not a plain tensor type."""
    if type_str.startswith("tensor(") and type_str.endswith(")"):
        return type_str[7:-1]
    return None


def closest(word, choices) -> str | None:
    """The choice ``word`` was most likely meant to be (ignoring case), or None."""
    import difflib

    names = [str(c) for c in choices]
    by_lower = {}
    for name in names:
        by_lower.setdefault(name.lower(), name)
    close = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def suggest(word: str, choices) -> str:
    """A did-you-mean hint, or ''."""
    close = closest(word, choices)
    return f" (hint: did you mean {close!r}?)" if close else ""


def show(value) -> str:
    """A value as a spec author wrote it: YAML spellings for booleans and null, repr otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return repr(value)


def proto_domain(domain: str) -> str:
    """The domain string ONNX protobufs use ('' for the default domain)."""
    return "" if domain == DEFAULT_DOMAIN else domain


# Integer element types and their inclusive value ranges.
INT_RANGES: dict[str, tuple[int, int]] = {
    "int2": (-2, 1), "uint2": (0, 3), "int4": (-8, 7), "uint4": (0, 15),
    "int8": (-(2**7), 2**7 - 1), "uint8": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1), "uint64": (0, 2**64 - 1),
}
# the type classes (one definition; opkit.core.dtypes builds its classes from these)
FLOAT_TYPES = ("float", "double", "float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
               "float8e5m2fnuz", "float4e2m1", "float8e8m0", "float6e2m3", "float6e3m2")
COMPLEX_TYPES = ("complex64", "complex128")


def element_value_problem(elem: str, value) -> str | None:
    """Why ``value`` cannot be an element of type ``elem``, or None when it can."""
    if elem == "bool":
        return None if isinstance(value, bool) else f"{show(value)} is not a boolean"
    if elem == "string":
        return None if isinstance(value, str) else f"{show(value)} is not a string"
    if isinstance(value, bool):
        return f"{show(value)} is a boolean, not a {elem} number"
    if elem in INT_RANGES:
        if not isinstance(value, int):
            return f"{show(value)} is not an integer"
        low, high = INT_RANGES[elem]
        if not low <= value <= high:
            return f"{value} is outside the {elem} range [{low}, {high}]"
        return None
    if elem in COMPLEX_TYPES:
        if isinstance(value, (int, float)):
            return None
        if isinstance(value, str):
            try:
                complex(value.replace(" ", ""))
                return None
            except ValueError:
                pass
        return f"{show(value)} is not a complex number (write e.g. '1+2j')"
    if isinstance(value, (int, float)):
        return None
    return f"{show(value)} is not a number"
