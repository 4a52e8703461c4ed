"""Family ``control_flow``: If, Loop (and later Scan, SequenceMap) with drawn bodies.

A body is 1-3 cheap nodes (Constant, Cast, Identity, Neg, Add) written as ONNX text, typed to what
the op asks of it, so every drawn case is valid by construction:

- If: both branches take no inputs and give the same number of outputs of the bound type; the
  values come from Constant nodes (integer literals; cast from float for the types ONNX's text
  cannot write a literal of). Before If-11 both branches give the same shapes, from 11 on a
  branch's shapes are drawn on their own.
- Loop: body ``(int64 i, bool cond, carried...) => (bool cond, carried..., scan outputs...)``;
  carried values keep their shape (Identity, Neg, Add to itself), scan outputs copy a carried value.
  The trip count M and the condition are never both absent (the loop would not end), and the loop
  runs at least once when it has scan outputs (the text does not say what an empty one's shape is).
"""

from __future__ import annotations

from hypothesis import strategies as st

from ...core.dtypes import onnx_code
from ..case import ABSENT, NotGeneratable
from ..context import Context, Draft, dims, finite_values, int_tensor, values

# element types onnx.parser writes literals of as the values they read (float16's are bit patterns)
_LITERAL = {"float", "double", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
            "string"}
_FLOATS = {"float", "double"}


def _elem(ctx: Context, param: str, constants: bool = True) -> tuple[str, str]:
    """The element type bound to ``param`` and its container: '', 'seq', 'optional' or 'optional_seq'
    (``constants``: the body must make constants of it)."""
    bound = ctx.binding.get(param, param)
    wrap = ""
    for prefix, name in (("optional(seq(", "optional_seq"), ("seq(", "seq"), ("optional(", "optional")):
        if bound.startswith(prefix):
            wrap, bound = name, bound[len(prefix):-(prefix.count("(")) or None]
            break
    elem = bound[len("tensor("):-1]
    # Constant-1 makes float types only (Constant-9 any), Cast-9 casts from float to any but complex
    if constants and (elem.startswith("complex") or (ctx.since < 9 and elem not in _FLOATS)):
        raise NotGeneratable(f"{ctx.op}-{ctx.since}: no body can make a {elem} constant at this opset")
    return elem, wrap


# integer types narrower than the drawn literals [-9, 9] (Cast's D1: integral values in range)
_RANGE = {"int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}


def _ty(elem: str, shape) -> str:
    return elem + (f"[{','.join(str(d) for d in shape)}]" if shape else "")


def _literal(elem: str, items: list[int]) -> str:
    if elem == "bool":
        return ", ".join("1" if v % 2 else "0" for v in items)
    if elem == "string":
        return ", ".join(f'"s{v}"' for v in items)
    if elem.startswith("uint"):
        items = [abs(v) for v in items]
    return ", ".join(str(v) for v in items)


def _constant(draw, elem: str, shape, out: str, tag: str) -> list[str]:
    """Nodes making ``out``, a constant of ``elem`` and ``shape``."""
    n = 1
    for d in shape:
        n *= d
    lo, hi = _RANGE.get(elem, (-9, 9))
    items = [draw(st.integers(lo, hi)) for _ in range(n)]
    if elem in _LITERAL:
        return [f"{out} = Constant <value = {_ty(elem, shape)} {{{_literal(elem, items)}}}> ()"]
    src = f"{tag}_f"
    return [f"{src} = Constant <value = {_ty('float', shape)} {{{_literal('float', items)}}}> ()",
            f"{out} = Cast <to = {onnx_code(elem)}> ({src})"]


def _unary(draw, elem: str, x: str, out: str) -> str:
    ops = ["Identity"] + (["Neg", "Add"] if elem in _FLOATS else [])
    op = draw(st.sampled_from(ops))
    return f"{out} = {op} ({x}, {x})" if op == "Add" else f"{out} = {op} ({x})"


def _wrapped(ty: str, wrap: str) -> str:
    return {"": ty, "seq": f"seq({ty})", "optional": f"optional({ty})", "optional_seq": f"optional(seq({ty}))"}[wrap]


def _branch(draw, name: str, elem: str, wrap: str, shapes: list) -> str:
    nodes, outs = [], []
    for k, shape in enumerate(shapes):
        last = f"o{k}" if not wrap else f"t{k}"
        if draw(st.booleans()):
            nodes += _constant(draw, elem, shape, f"c{k}", f"c{k}")
            nodes.append(_unary(draw, elem, f"c{k}", last))
        else:
            nodes += _constant(draw, elem, shape, last, f"c{k}")
        if wrap in ("seq", "optional_seq"):  # a sequence of one or two tensors of this shape
            items = [last] * draw(st.integers(1, 2))
            seq = f"o{k}" if wrap == "seq" else f"s{k}"
            nodes.append(f"{seq} = SequenceConstruct ({', '.join(items)})")
            last = seq
        if wrap in ("optional", "optional_seq"):
            nodes.append(f"o{k} = Optional ({last})")
        outs.append(f"{_wrapped(_ty(elem, shape), wrap)} o{k}")
    return f"{name} () => ({', '.join(outs)}) {{ {' '.join(nodes)} }}"


def _if(draw, ctx: Context) -> Draft:
    elem, wrap = _elem(ctx, "V")
    n = draw(st.integers(1, 2))
    shapes = [tuple(dims(draw, draw(st.integers(0, 2)), 1, 3)) for _ in range(n)]
    other = shapes if ctx.since < 11 or draw(st.booleans()) else \
        [tuple(dims(draw, draw(st.integers(0, 2)), 1, 3)) for _ in range(n)]
    attrs = {"then_branch": _branch(draw, "then_body", elem, wrap, shapes),
             "else_branch": _branch(draw, "else_body", elem, wrap, other)}
    return Draft(attrs, {"cond": int_tensor("bool", [draw(st.integers(0, 1))]).reshape(())}, n_outputs=n)


def _step(draw, elem: str, x: str, out: str, since: int) -> str:
    """A node keeping ``x``'s shape and type: Identity for any type, Neg and Add for floats
    (Neg-1 and Add-1 take floats only), Neg for signed integers from opset 6."""
    ops = ["Identity"]
    if elem in _FLOATS:
        ops += ["Neg", "Add"]
    elif elem in ("int8", "int16", "int32", "int64") and since >= 6:
        ops.append("Neg")
    op = draw(st.sampled_from(ops))
    return f"{out} = {op} ({x}, {x})" if op == "Add" else f"{out} = {op} ({x})"


def _loop(draw, ctx: Context) -> Draft:
    elem, wrap = _elem(ctx, "V", constants=False)
    if wrap:  # the body's text cannot declare a sequence of tensors of any shape
        raise NotGeneratable(f"Loop-{ctx.since}: bodies are drawn for tensor types only")
    try:
        _elem(ctx, "V")
        lo = 1 if ctx.since < 11 else 0
    except NotGeneratable:  # no constants of this type: every output comes from a carried value
        lo = 1
    n_carried = draw(st.integers(lo, 2))
    n_scan = draw(st.integers(0 if n_carried else 1, 2))
    shapes = [tuple(dims(draw, draw(st.integers(0, 2)), 1, 3)) for _ in range(n_carried)]
    carried = [values(draw, elem, shape) for shape in shapes]
    m_given = ctx.since < 9 or draw(st.booleans())  # before Less-9 no body can end the loop itself
    # without carried values an absent cond would be the node's last input, which a model drops
    # (onnx's Loop inference then fails on a node of one input): give cond then
    cond_given = not m_given or not n_carried or draw(st.booleans())
    # at least one trip when the loop has scan outputs: the text gives no shape to an empty one
    trips = draw(st.integers(1 if n_scan else 0, 3))
    cond0 = bool(n_scan) or draw(st.integers(0, 3)) > 0
    ins = ["int64 i", "bool c"] + [f"{_ty(elem, sh)} v{k}" for k, sh in enumerate(shapes)]
    nodes, outs = [], ["bool c_out"]
    if cond_given and not m_given or (cond_given and draw(st.booleans()) and ctx.since >= 9):
        # the body ends the loop: keep going while i + 1 < limit (Less-9 compares int64)
        limit = draw(st.integers(1, 3))
        nodes += [f"lim = Constant <value = int64 {{{limit}}}> ()", "one = Constant <value = int64 {1}> ()",
                  "next = Add (i, one)", "c_out = Less (next, lim)"]
    else:
        nodes.append("c_out = Identity (c)")
    for k, shape in enumerate(shapes):
        nodes.append(_step(draw, elem, f"v{k}", f"w{k}", ctx.since))
        outs.append(f"{_ty(elem, shape)} w{k}")
    for j in range(n_scan):
        if shapes:
            k = draw(st.integers(0, n_carried - 1))
            nodes.append(f"s{j} = Identity (w{k})")
            outs.append(f"{_ty(elem, shapes[k])} s{j}")
        else:  # no carried value: collect a constant
            shape = tuple(dims(draw, draw(st.integers(0, 2)), 1, 3))
            nodes += _constant(draw, elem, shape, f"s{j}", f"k{j}")
            outs.append(f"{_ty(elem, shape)} s{j}")
    body = f"body ({', '.join(ins)}) => ({', '.join(outs)}) {{ {' '.join(nodes)} }}"
    inputs = {"M": int_tensor("int64", [trips]).reshape(()) if m_given else None,
              "cond": int_tensor("bool", [int(cond0)]).reshape(()) if cond_given else None,
              "v_initial": carried}
    return Draft({"body": body}, inputs, n_outputs=n_carried + n_scan)


def _scan(draw, ctx: Context) -> Draft:
    """States and scan inputs of one element type; the body steps each state on its own and
    collects copies (or negations) of new states and of slices; Scan-8 adds a batch axis 0 and
    a sequence axis 1, and sequence_lens only without scan outputs (their padding is undefined)."""
    elem, wrap = _elem(ctx, "V", constants=False)
    if wrap:
        raise NotGeneratable(f"Scan-{ctx.since}: scans run over tensors only")
    batched = ctx.since == 8
    batch = draw(st.integers(1, 2)) if batched else None
    n_state, n_in = draw(st.integers(0, 2)), draw(st.integers(1, 2))
    n_out = draw(st.integers(0 if n_state else 1, 2))
    length = draw(st.integers(1, 3))
    shape = lambda: tuple(dims(draw, draw(st.integers(0, 2)), 1, 3))  # noqa: E731
    state_shapes = [shape() for _ in range(n_state)]
    slice_shapes = [shape() for _ in range(n_in)]
    inputs, axes = [], []
    for sh in state_shapes:
        inputs.append(values(draw, elem, ((batch,) if batched else ()) + sh))
    for sh in slice_shapes:
        if batched:
            full, a = (batch, length) + sh, 1
        else:
            a = draw(st.integers(0, len(sh)))
            full = sh[:a] + (length,) + sh[a:]
        axes.append(a if not draw(st.booleans()) else a - len(full))
        inputs.append(values(draw, elem, full))
    ins = [f"{_ty(elem, sh)} st{k}" for k, sh in enumerate(state_shapes)] + \
        [f"{_ty(elem, sh)} x{k}" for k, sh in enumerate(slice_shapes)]
    nodes = [_step(draw, elem, f"st{k}", f"nst{k}", ctx.since) for k in range(n_state)]
    outs = [f"{_ty(elem, sh)} nst{k}" for k, sh in enumerate(state_shapes)]
    sources = [(f"nst{k}", sh) for k, sh in enumerate(state_shapes)] + [(f"x{k}", sh) for k, sh in enumerate(slice_shapes)]
    out_ranks = []
    for j in range(n_out):
        src, sh = sources[draw(st.integers(0, len(sources) - 1))]
        nodes.append(_step(draw, elem, src, f"so{j}", ctx.since))
        outs.append(f"{_ty(elem, sh)} so{j}")
        out_ranks.append(len(sh) + 1)
    body = f"body ({', '.join(ins)}) => ({', '.join(outs)}) {{ {' '.join(nodes)} }}"
    attrs = {"body": body, "num_scan_inputs": n_in}
    flags = lambda n: [draw(st.integers(0, 1)) for _ in range(n)] if draw(st.booleans()) else ABSENT  # noqa: E731
    if batched:
        attrs["directions"] = flags(n_in)
        lens = None
        if not n_out and draw(st.booleans()):
            lens = int_tensor("int64", [draw(st.integers(0, length)) for _ in range(batch)])
        return Draft(attrs, {"sequence_lens": lens, "initial_state_and_scan_inputs": inputs}, n_outputs=n_state + n_out)
    attrs["scan_input_axes"] = axes if any(axes) or draw(st.booleans()) else ABSENT
    attrs["scan_input_directions"] = flags(n_in)
    attrs["scan_output_directions"] = flags(n_out) if n_out else ABSENT
    if n_out and draw(st.booleans()):
        attrs["scan_output_axes"] = [draw(st.integers(-r, r - 1)) for r in out_ranks]
    else:
        attrs["scan_output_axes"] = ABSENT
    return Draft(attrs, {"initial_state_and_scan_inputs": inputs}, n_outputs=n_state + n_out)


def _sequence_map(draw, ctx: Context) -> Draft:
    """A sequence of 0-3 tensors of one shape; 0-2 additional inputs, each a tensor (passed whole)
    or a sequence as long as input_sequence; the body's outputs step the element, or copy an
    additional sequence's element where its type is the sequence's."""
    elem, _ = _elem(ctx, "S", constants=False)
    other, other_wrap = _elem(ctx, "V", constants=False)
    n = draw(st.integers(0, 3))
    shape = tuple(dims(draw, draw(st.integers(0, 2)), 1, 3))
    sequence = [values(draw, elem, shape) for _ in range(n)]
    extra, ins = [], [f"{_ty(elem, shape)} x"]
    for j in range(draw(st.integers(0, 2))):
        sh = tuple(dims(draw, draw(st.integers(0, 2)), 1, 3))
        extra.append([values(draw, other, sh) for _ in range(n)] if other_wrap == "seq" else values(draw, other, sh))
        ins.append(f"{_ty(other, sh)} a{j}")
    nodes, outs = [], []
    for k in range(draw(st.integers(1, 2))):
        copyable = [j for j in range(len(extra)) if other == elem and other_wrap == "seq"]
        if copyable and draw(st.booleans()):
            j = draw(st.sampled_from(copyable))
            nodes.append(f"y{k} = Identity (a{j})")
            outs.append(f"{ins[1 + j].split()[0]} y{k}")
        else:
            nodes.append(_step(draw, elem, "x", f"y{k}", ctx.since))
            outs.append(f"{_ty(elem, shape)} y{k}")
    body = f"body ({', '.join(ins)}) => ({', '.join(outs)}) {{ {' '.join(nodes)} }}"
    return Draft({"body": body}, {"input_sequence": sequence, "additional_inputs": extra}, n_outputs=len(outs))


def draw(draw, ctx: Context) -> Draft:
    if ctx.op == "If":
        return _if(draw, ctx)
    if ctx.op == "Loop":
        return _loop(draw, ctx)
    if ctx.op == "Scan":
        return _scan(draw, ctx)
    if ctx.op == "SequenceMap":
        return _sequence_map(draw, ctx)
    raise NotGeneratable(f"the control_flow hook draws no {ctx.op} bodies yet")
