"""Accuracy classes: how close two conforming implementations' float outputs must be, per op.

A mismatch charged to a runtime must be beyond what the spec allows. ONNX says almost nothing
about floating-point accuracy, so opkit states it per op as one of six classes, each an allowance
between *two* implementations (the reference kernel and the backend): each may sit on either side
of the exact result, so every allowance is twice what one implementation may err by. ``ulp`` is
the unit in the last place of the output element type at ``max(|expected|, |actual|)``
(``opkit.conformance.ulp``):

``exact``
    Bit-exact (``-0.0`` equals ``0.0``, any NaN equals any NaN): selection, data movement, sign
    manipulation, comparisons; the output is an input value or a constant.
``rounded``
    One correctly rounded IEEE operation per element (+ - * / sqrt, a conversion): each side is
    within half an ulp, so 1 ulp apart.
``elementary``
    One elementary function per element (exp, log, tanh, erf, sin, pow ...). IEEE 754 recommends
    but does not require correct rounding; libm-class and vectorised implementations stay within a
    few ulp (glibc's float functions under 1, SLEEF's u35 set 3.5, onnxruntime's MLAS tanh measured
    at 3.9 for float): 4 ulp each, 8 apart; plus 2 ulp of ``max(1, |x|)``, since argument reduction
    (sin near a multiple of pi) and asymptotes (sigmoid, exp of a large negative x) are absolute at
    the argument's scale.
``composite``
    A fixed formula of a few rounded or elementary steps (ONNX states it as a function body: Gelu,
    Elu, HardSwish ...). Evaluated step by step in the element type, cancellation between steps
    (``1 + erf(x)`` near -1, ``exp(x) - 1`` near 0) loses absolute accuracy at the scale of the
    operands, not of the result: 8 ulp of the result plus 2 ulp of ``max(1, |operands|)`` times the
    float attributes' magnitudes (measured: onnxruntime's float Gelu is 0.9 ulp of |x| off there,
    its Elu half an ulp of 1).
``accumulating``
    Reductions, contractions and normalisations (ReduceSum, MatMul, Conv, Softmax, LayerNorm ...):
    ONNX fixes no summation order, and any order of a sum of ``n`` terms errs by up to
    ``(n - 1) u * sum |t_i|`` (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
    section 4.2), so the allowance grows with the reduction length and the summands' magnitude, not
    the result's; ``opkit.conformance.allowance`` has the per-op models.
``approximate``
    The ONNX text allows an approximation: the ``composite`` allowance plus the spec's
    ``tolerance`` (ulps, rtol, atol), whose ``doc`` says where the text allows it.

A spec states the class with ``accuracy:`` on a version. Without it, ``DEFAULT_CLASSES`` below
decides, so every op gets a class without editing hundreds of specs; specs set it only where the
ONNX text says something the table cannot know (an approximation it allows).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import OpVersion
from ..core.onnx_types import ACCURACY_CLASSES, tensor_element

# One line per class, for messages and docs pages.
CLASS_SUMMARY: dict[str, str] = {
    "exact": "bit-exact",
    "rounded": "one correctly rounded operation: 1 ulp",
    "elementary": "an elementary function: 8 ulp plus 2 ulp of the argument's scale",
    "composite": "a formula of a few steps: 8 ulp plus 2 ulp of the operands' scale",
    "accumulating": "grows with the reduction length and the summands' magnitude",
    "approximate": "the composite allowance plus the spec's tolerance",
}
assert tuple(CLASS_SUMMARY) == ACCURACY_CLASSES

# ULPs of the result allowed between two implementations, per class (accumulating and approximate
# add their own terms on top; see opkit.conformance.allowance).
RESULT_ULPS: dict[str, float] = {
    "exact": 0.0, "rounded": 1.0, "elementary": 8.0, "composite": 8.0, "accumulating": 2.0, "approximate": 8.0,
}
# ULPs of the operand scale allowed for cancellation between the steps of a composite formula.
OPERAND_ULPS = 2.0


def _ops(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# The default class of each op, by what its output is (see the module doc for the allowances).
# Keys are op names (any ONNX or com.microsoft domain) or 'domain::Op' where a domain's op of the
# same name means something else.
_GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("exact", "the output is an input value or a constant, moved or selected bit for bit", _ops("""
        Abs Neg Relu Ceil Floor Round Sign Max Min Clip ThresholdedRelu Mod Identity Reshape Flatten Squeeze
        Unsqueeze Transpose Concat ConcatFromSequence Split SplitToSequence Slice Gather GatherElements GatherND
        Scatter TensorScatter Pad Tile Expand Compress Where TopK Unique ReverseSequence Trilu DepthToSpace
        SpaceToDepth EyeLike OneHot Constant ConstantOfShape CenterCropPad MaxPool GlobalMaxPool MaxRoiPool
        MaxUnpool ReduceMax ReduceMin Hardmax BitCast Optional OptionalGetElement SequenceAt SequenceConstruct
        SequenceEmpty SequenceErase SequenceInsert
        ArrayFeatureExtractor Binarizer ZipMap LabelEncoder FeatureVectorizer DictVectorizer OneHotEncoder Imputer
        DiagonalMatrix1 ExpandDims MaxpoolWithMask NhwcMaxPool RemovePadding RestorePadding TorchEmbedding
        IsAllFinite MurmurHash3 UnfoldTensor NGramRepeatBlock""")),
    # Random generators: no two implementations draw the same values, so no numeric allowance can
    # make a value comparison meaningful; the class says none is given.
    ("exact", "random values: no numeric allowance makes two generators agree",
     _ops("RandomNormal RandomNormalLike RandomUniform RandomUniformLike Bernoulli Multinomial")),
    # a control-flow op computes what its body computes: opkit's drawn bodies are a few rounded or
    # exact steps (Identity, Neg, Add, Cast, Constant)
    ("rounded", "what its body computes: opkit draws bodies of a few rounded or exact steps",
     _ops("If Loop Scan SequenceMap")),
    ("rounded", "one correctly rounded operation per element (+ - * /, sqrt, a conversion)", _ops("""
        Add Sub Mul Div Sqrt Reciprocal Cast CastLike CastMap LeakyRelu PRelu Shrink Dropout
        QuantizeLinear DequantizeLinear DynamicQuantizeLinear BitmaskDropout""")),
    ("elementary", "one elementary function per element", _ops("""
        Exp Log Tanh Erf Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Sigmoid Pow""")),
    ("composite", "a fixed formula of a few rounded or elementary steps (ONNX's function body)", _ops("""
        Gelu Elu Selu Celu Mish HardSigmoid HardSwish Swish Softplus Softsign SwiGLU BlackmanWindow HannWindow
        HammingWindow RotaryEmbedding Scaler Adagrad Adam Momentum
        BiasGelu FastGelu QuickGelu BiasAdd BiasDropout ComplexMul ComplexMulConj GemmaRotaryEmbedding
        MRotaryEmbedding BiasSplitGelu""")),
    ("accumulating", "a sum of many terms (reduction, contraction or normalisation)", _ops("""
        ReduceSum ReduceMean ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp ReduceProd MatMul Gemm
        Conv ConvTranspose DeformConv Einsum CumSum CumProd Sum Mean Softmax LogSoftmax LayerNormalization
        BatchNormalization InstanceNormalization GroupNormalization MeanVarianceNormalization RMSNormalization
        LpNormalization LRN AveragePool GlobalAveragePool LpPool GlobalLpPool Attention LinearAttention
        CausalConvWithState RNN LSTM GRU DFT STFT MelWeightMatrix Det NegativeLogLikelihoodLoss
        SoftmaxCrossEntropyLoss Col2Im GridSample Resize Upsample RoiAlign AffineGrid Range ScatterElements
        ScatterND TfIdfVectorizer QLinearMatMul QLinearConv MatMulInteger ConvInteger FlexAttention
        LinearClassifier LinearRegressor SVMClassifier SVMRegressor TreeEnsemble TreeEnsembleClassifier
        TreeEnsembleRegressor Normalizer Gradient MatMulIntegerToFloat DynamicQuantizeMatMul QGemm Inverse CDist
        FusedMatMul TransposeMatMul FusedGemm FusedConv SkipLayerNormalization SkipSimplifiedLayerNormalization
        EmbedLayerNormalization BiasSoftmax MatMulNBits MatMulBnb4 MultiHeadAttention GroupQueryAttention
        QAttention""")),
)

DEFAULT_CLASSES: dict[str, tuple[str, str]] = {op: (cls, why) for cls, why, ops in _GROUPS for op in ops}
assert len(DEFAULT_CLASSES) == sum(len(ops) for _, _, ops in _GROUPS), "an op is in two groups"

# Domains whose ops the bare names above mean; an op of another domain (a user's own) is looked up
# as 'domain::Op' only, so a custom 'Add' gets no class by accident.
KNOWN_DOMAINS = ("ai.onnx", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training", "com.microsoft", "directml")

UNCLASSIFIED_WHY = ("no class in the spec or opkit's table: the widest class, so no runtime is charged "
                    "for an allowance nobody worked out")
EXACT_OUTPUTS_WHY = "no output can hold a float: compared exactly"


@dataclass(frozen=True)
class Accuracy:
    """The class an op version's outputs are compared with, and where it came from."""

    name: str  # an ACCURACY_CLASSES name
    source: str  # "spec" (the version's accuracy:), "default" (the table), "outputs" or "unclassified"
    why: str  # one line

    @property
    def summary(self) -> str:
        return CLASS_SUMMARY[self.name]


def _float_outputs(version: OpVersion) -> bool:
    """Whether some output can hold a float or complex value (None-typed outputs count as float)."""
    constraints = {t.name: t.types for t in version.type_constraints}
    for param in version.outputs:
        for type_str in constraints.get(param.type, (param.type,)):
            elem = tensor_element(type_str) or type_str
            if elem.startswith(("float", "double", "bfloat16", "complex")) or "(" in elem:
                return True
    return False


def accuracy_of(domain: str, op: str, version: OpVersion) -> Accuracy:
    """The version's accuracy class: its spec's ``accuracy:``, else the default table, else exact
    for ops without float outputs, else the widest class."""
    if version.accuracy:
        return Accuracy(version.accuracy, "spec", "stated by the spec")
    found = DEFAULT_CLASSES.get(f"{domain}::{op}")
    if found is None and domain in KNOWN_DOMAINS:
        found = DEFAULT_CLASSES.get(op)
    if found is not None:
        return Accuracy(found[0], "default", found[1])
    if not _float_outputs(version):
        return Accuracy("exact", "outputs", EXACT_OUTPUTS_WHY)
    return Accuracy("accumulating", "unclassified", UNCLASSIFIED_WHY)
