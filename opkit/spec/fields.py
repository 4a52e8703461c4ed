"""The spec format, declared once.

This table is the single description of every key a spec file may hold. The loader checks keys
and value kinds against it, ``opkit gen`` derives the published JSON Schema from it, and the docs'
field reference is rendered from that schema, so the three can never disagree.

Kinds: ``string``, ``integer``, ``number``, ``boolean``, ``any``, ``enum``, ``rank``, ``arity``,
``list:<kind>``, ``map:<kind>`` (name -> kind), ``intmap:<kind>`` (integer -> kind),
``obj:<Object>``, and ``tensor`` (a literal tensor or a bare value).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.onnx_types import (
    ACCURACY_CLASSES,
    ATTRIBUTE_TYPES,
    DETERMINISM,
    ELEMENT_TYPES,
    FAMILIES,
    OPTIONS,
    SUPPORT_LEVELS,
)


@dataclass(frozen=True, slots=True)
class Field:
    kind: str
    doc: str
    required: bool = False
    enum: tuple = ()
    extension: bool = False  # an opkit extension, not a field of ONNX's OpSchema
    default: object = None


F = Field

OBJECTS: dict[str, dict[str, Field]] = {
    "Spec": {
        "op": F("string", "Operator name, e.g. `Trilu`.", required=True),
        "domain": F("string", "Operator domain: `ai.onnx` (the protobuf default domain ''), `ai.onnx.ml`, "
                    "`com.microsoft`, or your own, e.g. `directml`.", required=True),
        "source": F("map:string", "Where the spec came from, e.g. `{onnx: 1.23.2}`; written by `opkit import`. "
                    "Hand-written specs say `{hand-written: <reference>}`."),
        "doc": F("string", "Notes on the operator as a whole (not versioned).", extension=True),
        "versions": F("list:obj:Version", "Every version of the operator, oldest first.", required=True),
    },
    "Version": {
        "since": F("integer", "Opset version of the domain that introduced this version.", required=True),
        "support_level": F("enum", "OpSchema support level.", enum=SUPPORT_LEVELS, default="common"),
        "deprecated": F("boolean", "The version deprecates the operator.", default=False),
        "doc": F("string", "The operator's documentation for this version (markdown)."),
        "attributes": F("map:obj:Attribute", "Attributes by name, in schema order."),
        "inputs": F("list:obj:Parameter", "Formal inputs, in order."),
        "outputs": F("list:obj:Parameter", "Formal outputs, in order."),
        "type_constraints": F("map:obj:TypeConstraint", "Type parameters by name, in schema order."),
        "input_range": F("arity", "`[min, max]` number of inputs where it differs from what the inputs "
                         "imply (max may be `inf`)."),
        "output_range": F("arity", "`[min, max]` number of outputs where it differs from what the outputs imply."),
        "function": F("intmap:string", "Function bodies in ONNX text form, keyed by the opset version "
                      "each body targets."),
        "context_dependent_function": F("list:integer", "Opset versions for which the op has a context "
                                        "dependent function body (built per node, so not stored)."),
        "shape_inference": F("boolean", "OpSchema has a type and shape inference function.", default=True),
        "data_propagation": F("boolean", "OpSchema has a data propagation function.", default=False),
        "determinism": F("enum", "OpSchema node determinism.", enum=DETERMINISM, default="deterministic"),
        "changes": F("string", "What changed against the previous version, in a sentence or two.",
                     extension=True),
        "semantics": F("string", "The op's meaning as one formula (what the kernel computes).",
                       extension=True),
        "family": F("enum", "The family of ops whose generator builds this version's test cases valid by "
                    "construction: `window` (Conv, pools: kernel, strides, pads, dilations first), `indices` "
                    "(Gather, Scatter, TopK: indices in range), `shape` (Reshape, Pad, Slice, Resize: shape "
                    "tensors), `einsum`, `quantization`, `strings`, `rnn`, `normalization` "
                    "(per-channel scale and bias), `matmul` (contracted dims agree), `elementwise` (legacy "
                    "broadcast attribute, non-zero integer divisors), `signal` (DFT, STFT, windows), `loss` "
                    "(class labels in range), `attention`, `constant` (one value attribute matching the output "
                    "type), `detection` (NonMaxSuppression), `reduction` (a non-empty picked axis), `cast` (string "
                    "inputs hold numeric text), `sequence` (sequences and optionals: positions in range, "
                    "shapes ConcatFromSequence can join), `ml` (ai.onnx.ml linear models and preprocessing: "
                    "coefficients, classes and vocabularies sized to the input), `ml_tree` (tree ensembles: trees "
                    "valid by construction), `ml_map` (maps and sequences of maps: ZipMap, DictVectorizer, CastMap), "
                    "`training` (ai.onnx.preview.training optimisers), `control_flow` (If, Loop, Scan, SequenceMap: "
                    "generated bodies). Absent: the generic steps.",
                    enum=FAMILIES, extension=True),
        "rules": F("list:obj:Rule", "Labelled constraints (C1, C2, ...) cited by kernels, tests and docs.",
                   extension=True),
        "kernel": F("obj:Kernel", "How the reference kernel computes this version.", extension=True),
        "properties": F("list:obj:Property", "Invariants the generated property tests check.", extension=True),
        "lowerings": F("list:obj:Lowering", "Equivalent formulations via other ops, property-tested "
                       "against the kernel.", extension=True),
        "tolerances": F("map:obj:Tolerance", "Comparison tolerance per element type (e.g. `float16`).",
                        extension=True),
        "examples": F("list:obj:Example", "Executable examples: inputs, attributes and expected outputs.",
                      extension=True),
        "accuracy": F("enum", "How close a backend's float outputs must be to the reference's: `exact` "
                      "(bit-exact), `rounded` (one correctly rounded operation: 1 ulp), `elementary` (exp, tanh, "
                      "erf, sin ...: a few ulp), `composite` (a formula of several such steps: a few ulp plus a "
                      "floor at the operands' scale for cancellation), `accumulating` (reductions, MatMul, Conv, "
                      "Softmax, normalizations: grows with the reduction length and the summands' magnitude), "
                      "`approximate` (the ONNX text allows an approximation: `tolerance` says how much). "
                      "Absent: the op's default class (opkit/spec/accuracy.py).",
                      enum=ACCURACY_CLASSES, extension=True),
        "tolerance": F("obj:Approximation", "With `accuracy: approximate` only: how far the ONNX text lets "
                       "an implementation deviate, beyond the `composite` allowance.", extension=True),
    },
    "Attribute": {
        "type": F("enum", "Attribute type.", required=True, enum=ATTRIBUTE_TYPES),
        "doc": F("string", "Description."),
        "required": F("boolean", "The attribute must be given (then it has no default).", default=False),
        "default": F("any", "Default value (an int, float, string or list), used when the attribute is absent."),
        "values": F("list:any", "The values the attribute may take.", extension=True),
        "min": F("number", "Smallest allowed value (inclusive).", extension=True),
        "max": F("number", "Largest allowed value (inclusive).", extension=True),
        "element_type": F("string", "Tensor attributes: the type parameter (`T`) whose element type the "
                                    "tensor has; generated cases then draw it as a scalar of the bound type.",
                          extension=True),
    },
    "Parameter": {
        "name": F("string", "Formal parameter name.", required=True),
        "type": F("string", "A type parameter (`T`) or an ONNX type string (`tensor(int64)`).", required=True),
        "doc": F("string", "Description."),
        "option": F("enum", "single, optional or variadic.", enum=OPTIONS, default="single"),
        "homogeneous": F("boolean", "Variadic only: all values share one type.", default=True),
        "differentiable": F("boolean", "true, false, or absent for undefined differentiability."),
        "min_arity": F("integer", "Variadic only: the fewest values.", default=1),
        "rank": F("rank", "Allowed ranks: an integer, or `{min: 2}`, `{min: 2, max: 4}`.", extension=True),
    },
    "TypeConstraint": {
        "types": F("list:string", "Allowed ONNX type strings, in schema order.", required=True),
        "doc": F("string", "Description."),
    },
    "Rank": {
        "min": F("integer", "Smallest rank (inclusive).", default=0),
        "max": F("integer", "Largest rank (inclusive); absent for unbounded."),
    },
    "Rule": {
        "label": F("string", "Short label cited elsewhere, e.g. `C1`.", required=True),
        "holds": F("string", "Python expression over inputs (NumPy arrays) and attributes that must be true.",
                   required=True),
        "doc": F("string", "The rule in words."),
    },
    "Kernel": {
        "template": F("string", "Kernel family template name (see the kernels guide)."),
        "params": F("map:any", "Template parameters."),
        "python": F("string", "Python/NumPy compute core; inputs and attributes are in scope by name."),
        "same_as": F("integer", "Reuse the kernel of the version with this `since`."),
    },
    "Property": {
        "name": F("string", "Property name (becomes a test name).", required=True),
        "holds": F("string", "Python expression that must be true for all valid inputs.", required=True),
        "types": F("string", "Restrict to a class of element types: numeric, float, integer, signed."),
        "doc": F("string", "The property in words."),
    },
    "Lowering": {
        "name": F("string", "Lowering name.", required=True),
        "to": F("string", "Target op as `domain::Op-version`.", required=True),
        "python": F("string", "Python body computing the same result through the target op's kernel.",
                    required=True),
        "doc": F("string", "Why the lowering is equivalent; where it stops being."),
    },
    "Tolerance": {
        "rtol": F("number", "Relative tolerance.", default=0.0),
        "atol": F("number", "Absolute tolerance.", default=0.0),
    },
    "Approximation": {
        "ulps": F("number", "Allowed deviation in units in the last place of the output type.", default=0.0),
        "rtol": F("number", "Allowed deviation relative to max(|expected|, |actual|).", default=0.0),
        "atol": F("number", "Allowed absolute deviation.", default=0.0),
        "doc": F("string", "Where the ONNX text allows the approximation, and why this much.", required=True),
    },
    "Example": {
        "name": F("string", "Example name (a test name and a docs heading).", required=True),
        "doc": F("string", "What the example shows."),
        "source": F("string", "Where the example comes from, e.g. `onnx node test test_gather_0 (onnx 1.23.2)`; "
                              "`opkit import onnx-examples` refreshes the examples it wrote and keeps the others."),
        "attributes": F("map:any", "Attribute values; absent attributes take their defaults."),
        "inputs": F("map:tensor", "Input tensors by formal name; `null` leaves an optional input empty; a "
                                  "variadic input takes a list of tensors."),
        "outputs": F("map:tensor", "Expected output tensors by formal name (a list of tensors for a variadic "
                                   "output).", required=True),
        "rtol": F("number", "The relative precision the expected float outputs are given to, where it is coarser "
                            "than the op's accuracy class allows; a result passes within it too.", default=0.0),
        "atol": F("number", "The absolute precision the expected float outputs are given to (see `rtol`).",
                  default=0.0),
    },
    "Container": {
        "type": F("string", "The value's full ONNX type, e.g. `seq(tensor(float))` or `optional(tensor(int64))`.",
                  required=True),
        "sequence": F("list:any", "A sequence's elements: tensors (`{value: ...}`; the dtype follows from `type`)."),
        "optional": F("any", "An optional's element (a tensor, or a sequence with its own `type`); `null` is the "
                             "empty optional."),
        "map": F("any", "A map's entries: a mapping of keys to values, or a list of `[key, value]` pairs (which "
                        "keeps 64-bit keys and float32 values exact)."),
    },
    "Tensor": {
        "dtype": F("enum", "ONNX element type; may be omitted where the parameter's type fixes it.",
                   enum=ELEMENT_TYPES),
        "shape": F("list:integer", "Shape; needed only where the value cannot show it (zero-size dims)."),
        "value": F("any", "Nested lists of numbers, booleans or strings (a bare scalar for rank 0).",
                   required=True),
    },
}
