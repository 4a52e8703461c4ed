"""Root causes, not case counts.

One runtime bug fails many cases: every type binding of an op, every version that shares the
kernel, every input that reaches the same code path. A team wants to see each bug once. A *cause*
groups a backend's failing cases of one op by what they have in common:

- the outcome (mismatch, refused, error, crash, timeout, unsupported);
- the class of the message: the backend's text with numbers, names, quoted strings and types
  abstracted away (``INVALID_ARGUMENT : Size of X.shape[axis:] must be at least N``), or for a
  mismatch what differed (shape, values, dtype, NaN positions) and in which output;
- the input feature the minimal failing case has: a zero-size tensor, a scalar, NaN or infinity in
  the difference, or none.

Op versions and type bindings are not part of the key: they are listed on the cause (a bug in the
int64 path shows as one cause with its types). Each cause keeps its smallest failing case (the
minimal example and its repro bundle) and whether any second opinion makes it doubtful.

Models the converter in front of a runtime could not translate (outcome ``unconverted``) are not
the runtime's failures and have no causes; ``converter_groups`` groups them the same way, per
converter and message class, for the page and the lines that show them apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .outcomes import FAILING, UNCONVERTED
from .record import CaseRecord
from .verdicts import needs_review, opinion_lines

_TENSOR_TYPE = re.compile(r"tensor\([a-z0-9_]+\)")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"(?<![A-Za-z_])-?\d+(\.\d+)?(e[-+]?\d+)?")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_SPACES = re.compile(r"\s+")
_SHAPE = re.compile(r"\[([0-9, ]*)\]")
SIGNATURE_LENGTH = 160
# how runtimes word a refusal of what they do not support (the last such sentence names the feature)
_REFUSAL_WORDS = re.compile(r"not (currently )?supported|does not support|unsupported|not implemented", re.I)


@dataclass(frozen=True)
class Cause:
    """One root cause: a backend's failures of one op that share outcome, message class and feature."""

    backend: str
    domain: str
    op: str
    outcome: str
    signature: str  # the message class
    feature: str  # zero-size, scalar, nan/inf, or "" (see ``input_feature``)
    versions: tuple[int, ...]
    types: tuple[str, ...]  # "T=float, T1=int64" per binding, sorted
    cases: int
    example: dict  # the smallest failing case: message, minimal_example, repro, version, types
    review: bool  # a second opinion sides with the runtime or fails too

    @property
    def qualified(self) -> str:
        return self.op if self.domain == "ai.onnx" else f"{self.domain}::{self.op}"

    def to_json(self) -> dict:
        return {"backend": self.backend, "domain": self.domain, "op": self.op, "outcome": self.outcome,
                "signature": self.signature, "feature": self.feature, "versions": list(self.versions),
                "types": list(self.types), "cases": self.cases, "example": dict(self.example),
                "review": self.review}

    def line(self) -> str:
        """One line for the terminal."""
        versions = ",".join(str(v) for v in self.versions)
        feature = f" [{self.feature}]" if self.feature else ""
        types = ", ".join(t or "-" for t in self.types[:4]) + (" ..." if len(self.types) > 4 else "")
        flag = "REVIEW " if self.review else ""
        said = readable_message(self.outcome, self.example.get("message") or "") or self.signature
        return (f"{flag}{self.outcome.upper():<11} {self.backend} {self.qualified}-{versions}{feature}: {said}"
                f" ({self.cases} case{'s' if self.cases != 1 else ''}: {types})")


_STATUS_PREFIX = re.compile(r"^\w+: \[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ")
READABLE_LENGTH = 160


def readable_message(outcome: str, message: str) -> str:
    """What a person reads of a cause: the smallest case's own message (not the grouping key with
    its N and '...'), its first line, the part after the runtime's status prefixes ("Status
    Message: ..."), and for a refusal the sentence saying what is refused; cut at a word boundary."""
    text = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    if outcome == "refused":
        text = refused_words(text)
    elif "Status Message: " in text:
        text = text.rsplit("Status Message: ", 1)[1]
    text = _STATUS_PREFIX.sub("", text).strip()
    return cut_at_word(text, READABLE_LENGTH)


def cut_at_word(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to about ``limit`` characters (" ..." marks the cut)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[:cut if cut > limit // 2 else limit].rstrip(" ,;:") + " ..."


def message_class(case: CaseRecord) -> str:
    """The message with what varies between instances of one bug abstracted away."""
    return classify_message(case.outcome, case.message, case.details)


def classify_message(outcome: str, message: str | None, details: dict | None) -> str:
    """``message_class`` of an outcome, message and details (also of a result not yet a record)."""
    details = details or {}
    message = message or ""
    if outcome == "mismatch":
        what = details.get("what")
        name = message.split(":", 1)[0] if ":" in message else "output"
        if what == "property":
            return message.split(" does not hold", 1)[0]
        if what in ("shape", "dtype", "missing"):
            return f"{name}: {what} differs"
        if "NaN position" in message:
            return f"{name}: NaN where a number is expected, or the reverse"
        return f"{name}: values differ"
    if outcome == "refused":  # what is refused, in the runtime's words: one cause per refused feature
        message = refused_words(message)
    text = _TENSOR_TYPE.sub("tensor(T)", message)
    if outcome != "refused":  # a refusal's quoted words name what it refuses (reduction 'mul')
        text = _QUOTED.sub("'...'", text)
    text = _BRACKETS.sub("[...]", text)
    text = _NUMBER.sub("N", text)
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= SIGNATURE_LENGTH else text[:SIGNATURE_LENGTH] + " ..."


def refused_words(message: str) -> str:
    """The sentence of a refusal that says what is refused ("BFloat16 data type is not supported
    with ScatterElements opset 18 when reduction is 'mul'"), without the runtime's prefixes (status,
    node name, source file and function); the whole message when no sentence says so."""
    found = None
    for found in _REFUSAL_WORDS.finditer(message):
        pass
    if found is None:
        return message
    start = max(message.rfind(sep, 0, found.start()) for sep in (": ", "] ", ". ", "\n"))
    start = 0 if start < 0 else start + 2
    end = message.find(". ", found.end())
    return message[start:end if end >= 0 else len(message)].strip().rstrip(".")


def input_feature(case: CaseRecord) -> str:
    """What about the minimal failing input stands out: a zero-size tensor, a scalar input, or
    NaN / infinity in the difference the backend made; for the robustness suite, what the hostile
    variant changed ("hostile B: integer extremes"). "" when nothing does."""
    minimal = case.minimal_example or ""
    message = case.message or ""
    if case.outcome == "refused":  # the refused feature is in the message class (``refused_words``)
        return ""
    change = (case.details or {}).get("change")
    if case.suite == "robustness" and change:  # what the hostile variant changed, e.g. "B: integer extremes"
        return "hostile " + _NUMBER.sub("N", change.split(" = ", 1)[0])
    for dims in _SHAPE.findall(minimal):
        if dims.strip() and any(d.strip() == "0" for d in dims.split(",")):
            return "zero-size"
    lowered = message.lower()
    if "nan" in lowered.replace("nan position", "nan"):
        return "nan"
    if "inf'" in lowered or "inf," in lowered or "inf " in lowered:
        return "inf"
    if re.search(r"=[a-z0-9_]+:", minimal):  # name=dtype:value is how a 0-D input is described
        return "scalar"
    return ""


def _types(case: CaseRecord) -> str:
    return binding_text(case.types)


def binding_text(types: dict, sep: str = ", ") -> str:
    """A type binding as people read it: "T=float, T1=int64"."""
    return sep.join(f"{k}={v[7:-1] if v.startswith('tensor(') else v}" for k, v in sorted(types.items()))


def _size(case: CaseRecord) -> tuple:
    """Smaller minimal examples first (fewer characters is a fair proxy for fewer, smaller inputs)."""
    return (case.repro is None, len(case.minimal_example or case.message or ""))


def causes(cases: list[CaseRecord], outcomes=FAILING) -> list[Cause]:
    """The causes of a report's failing cases (``outcomes``), most cases first."""
    groups: dict[tuple, list[CaseRecord]] = {}
    for case in cases:
        if case.outcome not in outcomes:
            continue
        key = (case.backend, case.domain, case.op, case.outcome, message_class(case), input_feature(case))
        groups.setdefault(key, []).append(case)
    out = []
    for (backend, domain, op, outcome, signature, feature), items in groups.items():
        smallest = min(items, key=_size)
        example = {k: getattr(smallest, k) for k in ("version", "types", "message", "minimal_example", "repro")
                   if getattr(smallest, k) is not None}
        if smallest.second_opinion:
            example["second_opinion"] = smallest.second_opinion
        said = (smallest.details or {}).get("runtime_output") or ""
        if said:
            example["runtime_output"] = said
        out.append(Cause(backend, domain, op, outcome, signature, feature,
                         tuple(sorted({c.version for c in items})), tuple(sorted({_types(c) for c in items})),
                         len(items), example, any(needs_review(c.second_opinion) for c in items)))
    return sorted(out, key=lambda c: (-c.cases, c.backend, c.domain, c.op, c.outcome, c.signature))


def runtime_output(case: dict) -> str:
    """What the runtime wrote as the case crashed or hung (a cause's example, or a report case's
    JSON form)."""
    return case.get("runtime_output") or (case.get("details") or {}).get("runtime_output") or ""


def runtime_output_lines(case: dict) -> list[str]:
    said = runtime_output(case)
    return [f"runtime wrote: {said if len(said) <= 200 else '... ' + said[-196:]}"] if said else []


def causes_text(found: list[Cause], limit: int = 40) -> str:
    lines = [c.line() + (f"\n            repro: {c.example['repro']}" if c.example.get("repro") else "")
             + "".join(f"\n            {line}" for line in runtime_output_lines(c.example) + opinion_lines(c.example))
             for c in found[:limit]]
    if len(found) > limit:
        lines.append(f"... and {len(found) - limit} more causes (see the JSON report's 'causes')")
    return "\n".join(lines)


@dataclass(frozen=True)
class ConverterGroup:
    """Unconverted cases of one backend that one converter failed on with the same message class."""

    backend: str
    converter: str  # "onnx2torch 1.5.15"
    signature: str  # the message class of the converter's words
    ops: tuple[str, ...]  # "Trilu-14", "com.microsoft::Trilu-1", sorted
    types: tuple[str, ...]  # "T=float" per binding, sorted
    cases: int
    example: str  # the converter's words of one case, readable

    def line(self) -> str:
        ops = ", ".join(self.ops[:6]) + (" ..." if len(self.ops) > 6 else "")
        return (f"UNCONVERTED {self.backend} by {self.converter}: {self.example} "
                f"({self.cases} case{'s' if self.cases != 1 else ''}: {ops})")


_CONVERSION = re.compile(r"^.*?\bConversionFailed: [^:]+?: ", re.S)


def converter_words(message: str) -> str:
    """What the converter said, without the property call's prefix and the converter's label."""
    return _CONVERSION.sub("", message or "", count=1).strip()


def converter_groups(cases: list[CaseRecord]) -> list[ConverterGroup]:
    """The unconverted cases grouped by backend, converter and message class, most cases first."""
    groups: dict[tuple, list[CaseRecord]] = {}
    for case in cases:
        if case.outcome != UNCONVERTED:
            continue
        converter = str((case.details or {}).get("converter") or "unknown converter")
        signature = classify_message(UNCONVERTED, converter_words(case.message), None)
        groups.setdefault((case.backend, converter, signature), []).append(case)
    out = []
    for (backend, converter, signature), items in groups.items():
        ops = sorted({(c.domain, c.op, c.version) for c in items})
        names = tuple((op if domain == "ai.onnx" else f"{domain}::{op}") + f"-{version}" for domain, op, version in ops)
        words = converter_words(min(items, key=_size).message).splitlines() or [""]
        example = cut_at_word(words[0], READABLE_LENGTH)
        out.append(ConverterGroup(backend, converter, signature, names, tuple(sorted({_types(c) for c in items})),
                                  len(items), example))
    return sorted(out, key=lambda g: (-g.cases, g.backend, g.converter, g.signature))


__all__ = ["Cause", "ConverterGroup", "causes", "causes_text", "classify_message", "converter_groups",
           "converter_words", "input_feature", "message_class", "runtime_output", "runtime_output_lines"]
