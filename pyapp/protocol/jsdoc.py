"""JSDoc typedefs from the JSON Schemas the records generate, so that the page's JavaScript is
type-checked against Python's records (`tsc --noEmit`, tsconfig.json): a field renamed in
Python renames it in the schema, here, and the page's code that still reads the old name
fails the check.

`typedefs(defs)` writes one `@typedef` per schema definition: a record (an object with
properties) as `@typedef {object}` with one `@property` per field (its description kept, an
optional field in brackets), anything else as one type expression. The keywords are those
the records' schemas use (`type`, `properties`, `required`, `additionalProperties`, `items`,
`prefixItems`, `enum`, `const`, `anyOf`, `oneOf`, `allOf` of one `$ref`, `$ref`); any other
raises, so a schema the types cannot say is never written loosely. A value the schema leaves
open is `unknown`, never `any`.

The files written (`python -m pyapp schema`, drift-checked like the schemas):
`site/lab_types.js` (the page ⇄ Python channel and the documents the page reads: the trial,
the trace and its header, predictions, the freeze receipt) and `site/common/model_types.js`
(the model channel).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from interpreter import LabError
from pyapp.protocol.envelope import Channel
from pyapp.protocol.generate import merge_defs, reply_name

KNOWN = frozenset(
    [
        "type",
        "description",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "enum",
        "const",
    ]
)
"""The schema keywords the types understand; `minItems` / `maxItems` only beside
`prefixItems` (a tuple)."""
SCALARS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean",
           "null": "null", "array": "unknown[]", "object": "Record<string, unknown>"}  # fmt: skip
IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


class SchemaTypeError(LabError, ValueError):
    """A schema keyword or shape the JSDoc types cannot say (a generator bug guard)."""

    def __init__(self, message: str) -> None:
        super().__init__("schema_type", message)


def _ref(target: str) -> str:
    if not target.startswith("#/$defs/"):
        raise SchemaTypeError(f"only local $refs: {target}")
    return target.removeprefix("#/$defs/")


def _key(name: str) -> str:
    return name if IDENTIFIER.match(name) else json.dumps(name)


def _union(types: list[str]) -> str:
    unique = list(dict.fromkeys(types))
    if len(unique) == 1:
        return unique[0]
    return "(" + " | ".join(unique) + ")"


def _object(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """An object type literal: its properties (optional unless required) and, when it allows
    more keys, an index signature."""
    required = set(schema.get("required", ()))
    parts = [
        f"{_key(name)}{'' if name in required else '?'}: {type_of(sub, defs)}"
        for name, sub in schema.get("properties", {}).items()
    ]
    more = schema.get("additionalProperties", False if parts else {})
    if more is not False:
        value = "unknown" if more in (True, {}) else type_of(more, defs)
        if not parts:
            return f"Record<string, {value}>"
        parts.append(f"[key: string]: {value}")
    return "{ " + ", ".join(parts) + " }"


def _resolved(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """An `allOf: [{$ref}]` with overrides, as one object schema: the referenced record's
    keywords, its properties overridden by the schema's own."""
    (base,) = schema["allOf"]
    target = dict(defs[_ref(base["$ref"])])
    if "allOf" in target:
        target = _resolved(target, defs)
    merged = {**target, "properties": {**target.get("properties", {})}}
    merged["properties"].update(schema.get("properties", {}))
    merged["required"] = [*target.get("required", ()), *schema.get("required", ())]
    return merged


def _with_variants(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """An object whose `oneOf` branches each add property constraints (the reply envelope:
    `ok: true` with a result, `ok: false` with an error): a union, one object per branch."""
    variants = []
    for branch in schema["oneOf"]:
        if set(branch) - {"properties", "required"}:
            raise SchemaTypeError(f"a oneOf branch beside properties: {sorted(branch)}")
        one = {k: v for k, v in schema.items() if k != "oneOf"}
        one["properties"] = {**one.get("properties", {}), **branch.get("properties", {})}
        one["required"] = [*one.get("required", ()), *branch.get("required", ())]
        variants.append(_object(one, defs))
    return _union(variants)


def type_of(schema: Mapping[str, Any] | bool, defs: Mapping[str, Any]) -> str:
    """The TypeScript type (as JSDoc writes it) of one schema."""
    if schema is True:
        return "unknown"
    if schema is False:
        return "never"
    unknown = set(schema) - KNOWN
    if unknown:
        raise SchemaTypeError(f"schema keywords the types cannot say: {sorted(unknown)}")
    if "allOf" in schema:
        return type_of(_resolved(schema, defs), defs)
    if "$ref" in schema:
        return _ref(schema["$ref"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if "enum" in schema:
        return _union([json.dumps(v, ensure_ascii=False) for v in schema["enum"]])
    if "properties" in schema and "oneOf" in schema:
        return _with_variants(schema, defs)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _union([type_of(s, defs) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([type_of({**schema, "type": k}, defs) for k in kind])
    if kind == "array" and "prefixItems" in schema:
        if schema.get("items", False) is not False or schema.get("minItems") != len(
            schema["prefixItems"]
        ):
            raise SchemaTypeError("only fixed tuples (prefixItems, no items, minItems = length)")
        return "[" + ", ".join(type_of(s, defs) for s in schema["prefixItems"]) + "]"
    if kind == "array" and "items" in schema:
        item = type_of(schema["items"], defs)
        return f"{item}[]" if re.fullmatch(r"[\w.$]+", item) else f"Array<{item}>"
    if kind == "object" or "properties" in schema:
        return _object(schema, defs)
    if kind is None:
        return "unknown"
    return SCALARS[kind]


def _comment(text: str) -> str:
    """A description as one JSDoc line: no comment end, no tag start (an `@` after a space)."""
    return re.sub(r"(^|\s)@", r"\1at ", " ".join(text.split()).replace("*/", "* /"))


def typedef(name: str, schema: Mapping[str, Any], defs: Mapping[str, Any]) -> list[str]:
    """One definition's `@typedef` block."""
    lines = ["/**"]
    if schema.get("description"):
        lines.append(f" * {_comment(schema['description'])}")
    plain = schema.get("type") == "object" and not ({"oneOf", "anyOf", "allOf"} & set(schema))
    if plain and schema.get("additionalProperties", False) is False:
        lines.append(f" * @typedef {{object}} {name}")
        required = set(schema.get("required", ()))
        for field, sub in schema.get("properties", {}).items():
            key = field if field in required else f"[{field}]"
            about = _comment(sub.get("description", "")) if isinstance(sub, dict) else ""
            lines.append(f" * @property {{{type_of(sub, defs)}}} {key} {about}".rstrip())
    else:
        lines.append(f" * @typedef {{{type_of(schema, defs)}}} {name}")
    lines.append(" */")
    return lines


def typedefs(defs: Mapping[str, Any], extra: Mapping[str, str] | None = None) -> str:
    """Every definition's typedef, then `extra` (name → a type expression over them)."""
    lines: list[str] = []
    for name, schema in defs.items():
        lines += typedef(name, schema, defs)
    for name, expression in (extra or {}).items():
        if name in defs:
            raise SchemaTypeError(f"{name} is a schema definition already")
        lines += ["/**", f" * @typedef {{{expression}}} {name}", " */"]
    return "\n".join(lines) + "\n"


def types_module(
    header: str, defs: Mapping[str, Any], extra: Mapping[str, str] | None = None
) -> str:
    """A generated module of typedefs only (`export {}`: it has no value; JavaScript imports
    its types with `@import`)."""
    head = [f"// {line}".rstrip() for line in header.strip().splitlines()]
    return "\n".join([*head, "", typedefs(defs, extra), "export {};", ""]).replace("\n\n\n", "\n\n")


def channel_maps(channel: Channel) -> dict[str, str]:
    """`Results` (each request type → its result record), `Requests` (→ its request record)
    and `Replies` (→ its reply) of a channel, so that a typed `request(type, fields)` returns
    the result of that type."""
    results = {kind: record.__name__ for kind, record in channel.results.items()}
    requests = {r.TYPE: r.__name__ for r in channel.requests}  # type: ignore[attr-defined]
    replies = {kind: reply_name(kind) for kind in channel.results}
    return {
        name: "{ " + ", ".join(f"{_key(k)}: {v}" for k, v in table.items()) + " }"
        for name, table in (("Results", results), ("Requests", requests), ("Replies", replies))
    }


def merged_defs(*schemas: Mapping[str, Any]) -> dict[str, Any]:
    """The definitions of several schemas, each name once (two different records of one name
    raise: they would clash in one module)."""
    out: dict[str, Any] = {}
    for schema in schemas:
        merge_defs(out, schema["$defs"])
    return dict(sorted(out.items()))
