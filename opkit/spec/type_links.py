"""Type parameters that ONNX ties together without saying so: a sequence and its tensors, an
optional and its element.

SequenceAt types its input ``S`` (``seq(tensor(float))`` ...) and its output ``T``
(``tensor(float)`` ...) with two parameters, but ONNX's inference requires ``T`` to be the tensor
type ``S`` holds; Optional's output ``O`` is ``optional(V)`` of its input's type; OptionalGetElement's
``V`` is its input ``O`` without the ``optional(...)``. Drawn independently, almost every binding
of such parameters is one ONNX rejects (OptionalGetElement-18 went untested that way). A link
says: parameter ``derived`` is ``transform(source)``. It is found from the type lists alone: the
transform maps every type of ``source`` into ``derived``'s list and covers it exactly, and one of
the two parameters is a sequence or optional type (two tensor parameters are never linked: their
lists being equal does not make them equal).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import OpVersion


def _wrap(kind: str):
    return lambda t: f"{kind}({t})"


def _unwrap(kind: str, keep_plain: bool = False):
    prefix = f"{kind}("

    def apply(t: str) -> str | None:
        if t.startswith(prefix) and t.endswith(")"):
            return t[len(prefix):-1]
        return t if keep_plain else None
    return apply


# name -> type string -> type string (None: the transform does not apply to that type)
TRANSFORMS = {
    "seq": _wrap("seq"),  # SequenceConstruct's S = seq(T)
    "element": _unwrap("seq"),  # SequenceAt's T = what S holds
    "optional": _wrap("optional"),  # Optional's O = optional(V)
    "unwrap": _unwrap("optional", keep_plain=True),  # OptionalGetElement-18's V = O, unwrapped if optional
}


@dataclass(frozen=True)
class TypeLink:
    derived: str
    source: str
    transform: str  # a key of TRANSFORMS

    def apply(self, type_str: str) -> str | None:
        return TRANSFORMS[self.transform](type_str)


def _is_container(t: str) -> bool:
    return t.startswith(("seq(", "optional("))


def _maps_exactly(transform, source: list[str], derived: list[str]) -> bool:
    images = [transform(t) for t in source]
    return None not in images and set(images) == set(derived)


def find_links(version: OpVersion, pools: dict[str, list[str]]) -> tuple[TypeLink, ...]:
    """The links among the type parameters in ``pools`` (parameter -> the types opkit can draw).
    A parameter is derived at most once and never from a derived one; when both directions work
    (S = seq(T) and T = element(S)), the parameter that only outputs use is the derived one."""
    output_only = {p.type for p in version.outputs} - {p.type for p in version.inputs}
    candidates = []
    for source, src_types in pools.items():
        for derived, dst_types in pools.items():
            if source == derived or not (any(map(_is_container, src_types)) or any(map(_is_container, dst_types))):
                continue
            for name, transform in TRANSFORMS.items():
                if _maps_exactly(transform, src_types, dst_types):
                    candidates.append(TypeLink(derived, source, name))
                    break
    candidates.sort(key=lambda link: link.derived not in output_only)  # derive output-only parameters first
    links: list[TypeLink] = []
    derived_names: set[str] = set()
    for link in candidates:
        if link.derived in derived_names or link.source in derived_names or \
                any(done.source == link.derived for done in links):
            continue
        links.append(link)
        derived_names.add(link.derived)
    return tuple(links)


__all__ = ["TRANSFORMS", "TypeLink", "find_links"]
