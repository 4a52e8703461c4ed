"""The spec field reference (``generated/docs/spec-fields.md``), rendered from the published JSON
Schema (``opkit.emit.json_schema.json_schema()``) so the docs, the schema and the loader agree.

Written by the ``docs_pages`` emitter.
"""

from __future__ import annotations

import json
from typing import Any

import jinja2

from . import header

_EXTENSION = " (opkit extension)"


def _label(name: str) -> str:
    return f"l-opkit-spec-{name.lower()}"


def _kind(schema: dict[str, Any]) -> str:
    """A JSON Schema fragment as a short readable kind, with links to object sections."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"{{ref}}`{name} <{_label(name)}>`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    if "oneOf" in schema:
        return " or ".join(_kind(s) for s in schema["oneOf"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    kind = schema.get("type")
    if kind == "array":
        items = _kind(schema.get("items", {}))
        if schema.get("minItems") is not None and schema.get("minItems") == schema.get("maxItems"):
            return f"list of {schema['minItems']} ({items})"
        return f"list of {items}"
    if kind == "object":
        value = _kind(schema.get("additionalProperties", {}))
        keys = "integer" if "propertyNames" in schema else "name"
        return f"map of {keys} -> {value}"
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind is None:
        return "any"
    if "minimum" in schema:
        return f"{kind} >= {schema['minimum']}"
    return kind


def _default(schema: dict[str, Any]) -> str:
    if "default" not in schema:
        return "-"
    return f"`{json.dumps(schema['default'])}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def objects(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object of the schema (the top-level spec first) with its fields."""
    out = []
    items = [("Spec", schema)] + list(schema.get("$defs", {}).items())
    for name, obj in items:
        required = set(obj.get("required", ()))
        fields = []
        for key, prop in obj.get("properties", {}).items():
            doc = prop.get("description", "")
            extension = doc.endswith(_EXTENSION)
            if extension:
                doc = doc[: -len(_EXTENSION)]
            fields.append({
                "name": key,
                "kind": _cell(_kind(prop)),
                "default": _default(prop),
                "required": "yes" if key in required else "no",
                "extension": "yes" if extension else "no",
                "flags": "".join(f"<br>*{flag}*" for flag, on in (("required", key in required),
                                                                  ("extension", extension)) if on),
                "doc": _cell(doc),
            })
        out.append({"name": name, "label": _label(name), "fields": fields})
    return out


def render_spec_fields(env: jinja2.Environment, schema: dict[str, Any] | None = None) -> str:
    from .json_schema import SCHEMA_PATH, json_schema

    schema = schema or json_schema()
    return env.get_template("page_spec_fields.md.j2").render(
        header=header(f"{SCHEMA_PATH} (opkit/spec/fields.py)", "<!--") + " -->",
        title=schema.get("title", "opkit operator spec"),
        schema_path=SCHEMA_PATH,
        objects=objects(schema),
    )
