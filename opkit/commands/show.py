"""``opkit show OP``: a spec in the terminal; finding an op by name for ``opkit diff`` too.

Only the spec files named ``<OP>.yaml`` are loaded, so both commands answer at once. An unknown op
exits 2 with a did-you-mean hint; a name found in several domains picks ``ai.onnx`` first (then the
domains by name) and says which others exist.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from typing import Any

from ..core.exit_codes import ExitCode
from ..spec.model import Attribute, FormalParameter, OpSpec, OpVersion
from ..core.onnx_types import DEFAULT_DOMAIN, INFINITE_ARITY, suggest

WIDTH = 100


def _usage_error(message: str) -> Exception:
    from ..core.errors import UsageError

    return UsageError(message)


def visible_spec_files() -> list[str]:
    """Every spec the project sees: its own, then opkit's built-in ones."""
    from ..spec import catalog

    return [entry.path for entry in catalog.entries()]


# ---------------------------------------------------------------------------------------------
# finding an op


def _domain_order(domain: str) -> tuple[int, str]:
    return (0 if domain == DEFAULT_DOMAIN else 1, domain)


def find_spec(files: list[str], op: str, domain: str | None) -> OpSpec:
    """Load the spec of ``op`` (in ``domain``, or the first domain holding it) from ``files``;
    UsageError if none. ``op`` may be qualified, ``domain::Op``."""
    from ..spec.load import load_spec_file

    if "::" in op and domain is None:
        domain, op = op.split("::", 1)
    by_name: dict[str, list[tuple[str, str]]] = {}
    for path in files:
        name = os.path.splitext(os.path.basename(path))[0]
        by_name.setdefault(name, []).append((os.path.basename(os.path.dirname(path)), path))
    candidates = by_name.get(op)
    if candidates is None:
        folded = [n for n in by_name if n.lower() == op.lower()]
        if len(folded) == 1:
            op, candidates = folded[0], by_name[folded[0]]
    if candidates is None:
        raise _usage_error(f"no op named {op!r} in this project or opkit's built-in specs"
                           + _did_you_mean(op, sorted(by_name)))
    domains = sorted((d for d, _ in candidates), key=_domain_order)
    if domain is not None:
        if domain not in domains:
            raise _usage_error(f"op {op!r} is not in domain {domain!r}; it is in {', '.join(domains)}"
                               + suggest(domain, domains))
        chosen = domain
    else:
        chosen = domains[0]
        if len(domains) > 1:
            others = ", ".join(d for d in domains if d != chosen)
            print(f"opkit: {op} is also in {others}; showing {chosen} (use --domain)", file=sys.stderr)
    path = next(p for d, p in candidates if d == chosen)
    spec, diags = load_spec_file(path)
    if diags or spec is None:
        for diag in diags:
            print(diag)
        raise SpecProblem(f"{path} does not load ({len(diags)} error(s)); run `opkit validate`")
    return spec


def _did_you_mean(word: str, names: list[str]) -> str:
    """Up to three close op names (compared case-insensitively), best first."""
    import difflib

    lowered = {n.lower(): n for n in names}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=3, cutoff=0.6)
    return f" (hint: did you mean {', '.join(repr(lowered[c]) for c in close)}?)" if close else ""


class SpecProblem(Exception):
    """The op's spec file does not load: exit 1 (a problem found), not 2 (a usage error)."""


def resolve_version(spec: OpSpec, number: int) -> OpVersion:
    """The version with since == number, else the version in force at opset ``number``."""
    version = spec.version(number) or spec.version_at(number)
    if version is None:
        raise _usage_error(f"{spec.name} has no version at opset {number}; versions: {_since_list(spec)}")
    if version.since != number:
        print(f"opkit: {spec.name} at opset {number} is version {version.since}", file=sys.stderr)
    return version


def _since_list(spec: OpSpec) -> str:
    return ", ".join(str(v.since) for v in spec.versions)


# ---------------------------------------------------------------------------------------------
# text rendering (pure helpers)


def _indent(text: str, prefix: str = "    ") -> list[str]:
    text = textwrap.dedent(text.strip("\n"))
    return [(prefix + line).rstrip() for line in text.splitlines()]


def _member_doc(doc: str) -> list[str]:
    """An attribute/parameter doc under its entry: one-line docs wrapped, others kept as written."""
    text = doc.strip("\n")
    if not text:
        return []
    if "\n" in text:
        return _indent(text, "      ")
    return textwrap.wrap(text, width=WIDTH, initial_indent="      ", subsequent_indent="      ",
                         break_long_words=False, break_on_hyphens=False)


def _wrap(head: str, items: list[str], indent: int) -> list[str]:
    return textwrap.wrap(head + ", ".join(items), width=WIDTH, subsequent_indent=" " * indent,
                         break_long_words=False, break_on_hyphens=False)


def _value(value: Any) -> str:
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def attribute_line(a: Attribute) -> str:
    parts = [a.type]
    if a.required:
        parts.append("required")
    elif a.has_default:
        parts.append(f"default {_value(a.default)}")
    else:
        parts.append("optional, no default")
    if a.domain is not None:
        parts.append(f"values: {a.domain.describe()}")
    return f"  {a.name} : " + ", ".join(parts)


def parameter_line(p: FormalParameter) -> str:
    tags = [p.option] if p.option != "single" else []
    if p.option == "variadic":
        tags.append("homogeneous" if p.homogeneous else "heterogeneous")
        if p.min_arity != 1:
            tags.append(f"min {p.min_arity}")
    tags.append({True: "differentiable", False: "non-differentiable"}.get(p.differentiable,
                                                                             "differentiability undefined"))
    if p.rank is not None:
        tags.append(p.rank.describe())
    return f"  {p.name} : {p.type}  ({', '.join(tags)})"


def _arity(low: int, high: int) -> str:
    if low == high:
        return ""
    return f" ({low} to {'unbounded' if high == INFINITE_ARITY else high})"


def _display_path(path: str) -> str:
    """Relative to the current folder when the file is below it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


def render_text(spec: OpSpec, version: OpVersion) -> str:
    """A spec version for the terminal."""
    status = [version.support_level]
    if version.deprecated:
        status.append("deprecated")
    lines = [
        f"{spec.name}  ({spec.domain}, version {version.since})",
        f"  support level: {', '.join(status)}",
    ]
    if spec.source:
        lines.append("  source: " + ", ".join(f"{k} {v}" for k, v in spec.source))
    functions = [b.opset for b in version.function]
    if functions or version.context_dependent_function:
        where = [f"opset {', '.join(map(str, functions))}"] if functions else []
        if version.context_dependent_function:
            where.append("context dependent at opset " + ", ".join(map(str, version.context_dependent_function)))
        lines.append("  function: " + "; ".join(where))
    if spec.path:
        lines.append(f"  file: {_display_path(spec.path)}")
    if spec.doc.strip():
        lines += ["", "note:", *_indent(spec.doc)]
    if version.changes.strip():
        lines += ["", "changes:", *_indent(version.changes)]
    if version.doc.strip():
        lines += ["", "doc:", *_indent(version.doc)]
    if version.attributes:
        lines += ["", "attributes:"]
        for a in version.attributes:
            lines.append(attribute_line(a))
            lines += _member_doc(a.doc)
    for title, params, low, high in (("inputs", version.inputs, version.min_input, version.max_input),
                                     ("outputs", version.outputs, version.min_output, version.max_output)):
        lines += ["", f"{title}{_arity(low, high)}:" if params else f"{title}: none"]
        for p in params:
            lines.append(parameter_line(p))
            lines += _member_doc(p.doc)
    if version.type_constraints:
        lines += ["", "type constraints:"]
        for tc in version.type_constraints:
            lines += _wrap(f"  {tc.name} : ", list(tc.types), len(tc.name) + 5)
            lines += _member_doc(tc.doc)
    if version.semantics.strip():
        lines += ["", "semantics:", *_indent(version.semantics)]
    if version.rules:
        lines += ["", "rules:"] + [f"  {r.label}: {r.holds}" + (f"  -- {r.doc}" if r.doc else "")
                                   for r in version.rules]
    extras = []
    if version.kernel is not None:
        k = version.kernel
        extras.append("kernel: " + (f"template {k.template}" if k.template else f"same as version {k.same_as}"
                                    if k.same_as is not None else "python"))
    lines += [""] + extras
    if version.examples:
        lines += ["", f"examples ({len(version.examples)}; values: --format yaml):"]
        lines += [_shorten(f"  {example_line(ex)}") for ex in version.examples]
    if version.properties:
        lines += ["", f"properties ({len(version.properties)}):"]
        lines += [_shorten(f"  {p.name}: {' '.join(p.holds.split())}") for p in version.properties]
    if version.lowerings:
        lines += ["", f"lowerings ({len(version.lowerings)}):"] + [f"  {lw.name} -> {lw.to}" for lw in version.lowerings]
    others = [str(v.since) for v in spec.versions if v.since != version.since]
    lines.append("other versions: " + (", ".join(others) if others else "none"))
    return "\n".join(lines) + "\n"


def _shorten(line: str) -> str:
    return line if len(line) <= WIDTH else line[:WIDTH - 4] + " ..."


def _value_text(value) -> str:
    """An example value as its type and shape: ``float[2, 3]``, ``int64[]`` (a scalar), ``seq(2)``."""
    if value is None:
        return "(absent)"
    if isinstance(value, tuple):  # a variadic parameter's arguments
        return ", ".join(_value_text(v) for v in value)
    if hasattr(value, "dtype"):
        return f"{value.dtype}[{', '.join(map(str, value.shape))}]"
    items = getattr(value, "items", ())
    return f"{getattr(value, 'type', 'value')} of {len(items)}"


def example_line(ex) -> str:
    """One example on one line: its name, attributes, inputs -> outputs (types and shapes)."""
    attrs = ", ".join(f"{k}={_value(v)}" for k, v in ex.attributes)
    ins = ", ".join(f"{name} {_value_text(v)}" for name, v in ex.inputs)
    outs = ", ".join(f"{name} {_value_text(v)}" for name, v in ex.outputs)
    return f"{ex.name}: " + (f"{attrs}; " if attrs else "") + f"{ins} -> {outs}"


def version_data(spec: OpSpec, version: OpVersion) -> dict[str, Any]:
    """The spec restricted to one version, as plain data (the YAML a spec file would hold)."""
    from dataclasses import replace

    from ..spec.dump import spec_to_data

    return spec_to_data(replace(spec, versions=(version,)))


# ---------------------------------------------------------------------------------------------
# commands


def cmd_show(args: argparse.Namespace) -> int:
    try:
        spec = find_spec(visible_spec_files(), args.op, args.domain)
    except SpecProblem as exc:
        print(f"opkit: {exc}", file=sys.stderr)
        return ExitCode.PROBLEMS
    version = resolve_version(spec, args.version) if args.version is not None else spec.latest
    if args.format == "text":
        sys.stdout.write(render_text(spec, version))
    elif args.format == "json":
        print(json.dumps(version_data(spec, version), indent=2, ensure_ascii=False))
    else:
        from dataclasses import replace

        from ..spec.dump import dump_spec

        sys.stdout.write(dump_spec(replace(spec, versions=(version,))))
    return ExitCode.OK


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("show", help="print an operator spec (one version) in the terminal",
                              description="Print one version of an operator spec: doc, attributes, inputs, "
                                          "outputs, type constraints and opkit's extensions. Exit 2 for an "
                                          "unknown op (with a did-you-mean hint).")
    p.add_argument("op", metavar="OP", help="operator name, e.g. Trilu")
    p.add_argument("--domain", metavar="D", help="domain, e.g. ai.onnx.ml (default: ai.onnx, else the "
                                                  "first domain holding the op)")
    p.add_argument("--version", type=int, metavar="N",
                   help="the version introduced at opset N, or the one in force at opset N (default: newest)")
    p.add_argument("--format", choices=("text", "yaml", "json"), default="text", help="output format")
    p.set_defaults(func=cmd_show)
