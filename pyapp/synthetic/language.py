"""The structure language: synthetic models as data (TOML or JSON), and their shorthand.

A structure file holds the record `SyntheticSpec` (`pyapp.records.synthetic_spec`) as data:

```toml
structure = "depth"
note = "perfect on every primitive and chain; whole tasks fail from the 3rd step on"
[rates]
p_add = 0.0
p_sub = 0.0
p_mul = 0.0
[depth]
from_step = 3
p_deep = 0.5
```

A section left out is off; `rates` and `cost` default to the values in `spec.py`. The JSON
Schema `exports/synthetic-model.schema.json` is generated from the records. The shipped
structures live in `pyapp/synthetic/structures/NAME.toml` and are named by their shorthand
`NAME` or `NAME:key=value,...`, where each key (`p_add`, `slope`, `rho`, ... or
`section.key`) overrides one value of a section the file has; a key of a section the file
does not have would change nothing, and is refused, naming it. Files and shorthands go
through one validator: `from_json` for types and unknown keys, then the records' own checks
of range, finiteness and meaning.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from functools import cache
from pathlib import Path
from typing import Any, get_type_hints

from pyapp.errors import InputError, RecordError
from pyapp.records import (
    JSON,
    SECTIONS,
    SpecError,
    SyntheticSpec,
    from_json,
    json_schema,
    loads_document,
    read_text,
)

STRUCTURES_DIR = Path(__file__).resolve().parent / "structures"
STRUCTURES: tuple[str, ...] = (
    "independent",
    "size-dependent",
    "correlated",
    "cancelling",
    "depth",
    "carry",
    "encoding",
    "format",
    "program",
)
"""The shipped structures, in the order the page and the validation list them."""
MAX_FILE_BYTES = 64 * 1024
"""A structure file is a few hundred bytes; anything larger is refused unread."""


def _section_keys() -> dict[str, tuple[str, type]]:
    """Flat shorthand key → (section, its type), e.g. `slope` → (`size`, float)."""
    hints = get_type_hints(SyntheticSpec)
    keys: dict[str, tuple[str, type]] = {"seed": ("", int)}
    for section in SECTIONS:
        record = next(a for a in getattr(hints[section], "__args__", (hints[section],)))
        record_hints = get_type_hints(record)
        for f in dataclasses.fields(record):
            kind = record_hints[f.name]
            keys[f.name] = (section, kind if kind in (int, float) else str)
    return keys


KEYS = _section_keys()
"""Every shorthand key (each field name is unique across the sections)."""
_NAMED = {
    *(f"{section}.{key}" for key, (section, _) in KEYS.items() if section),
    *(f.name for f in dataclasses.fields(SyntheticSpec)),
}


def _record_error(error: RecordError) -> SpecError:
    named = error.message.split(":", 1)[0]
    if named in _NAMED:  # a record's own check already names its key
        return SpecError(error.message)
    where = (error.path or "$").removeprefix("$").lstrip(".") or "structure file"
    return SpecError(f"{where}: {error.message}")


def spec_from_data(data: JSON) -> SyntheticSpec:
    """A structure document (decoded TOML or JSON) → a validated spec (`SpecError`)."""
    try:
        spec: SyntheticSpec = from_json(SyntheticSpec, data)
    except SpecError:
        raise
    except RecordError as error:
        raise _record_error(error) from None
    return spec


def decode(text: str, where: str) -> JSON:
    """The text of a `.toml` or `.json` structure file, decoded (`SpecError`)."""
    if where.endswith(".json"):
        try:
            return loads_document(text, where)
        except InputError as error:
            raise SpecError(error.message) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"not TOML: {error}") from None


@cache
def shipped_data(name: str) -> dict[str, Any]:
    """The decoded file of a shipped structure."""
    path = STRUCTURES_DIR / f"{name}.toml"
    data = decode(path.read_text(encoding="utf-8"), str(path))
    if not isinstance(data, dict) or data.get("structure") != name:
        raise SpecError(f"{path}: structure must be {name!r}")
    return data


def shipped(name: str) -> SyntheticSpec:
    """A shipped structure (`SpecError` naming the known ones)."""
    if name not in STRUCTURES:
        raise SpecError(f"unknown synthetic structure {name!r}; known: {', '.join(STRUCTURES)}")
    return spec_from_data(shipped_data(name))


def _value(key: str, kind: type, raw: str) -> object:
    if kind is str:
        return raw
    try:
        return int(raw) if kind is int else float(raw)
    except ValueError:
        kind_name = "an integer" if kind is int else "a number"
        raise SpecError(f"{key}: {raw!r} is not {kind_name}") from None


def parse_spec(text: str) -> SyntheticSpec:
    """`NAME` or `NAME:key=value,...` → a spec (one-line `SpecError` naming the key)."""
    name, _, rest = text.strip().partition(":")
    if name not in STRUCTURES:
        raise SpecError(f"unknown synthetic structure {name!r}; known: {', '.join(STRUCTURES)}")
    data = json.loads(json.dumps(shipped_data(name)))  # a deep copy
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, raw = item.partition("=")
        key = key.strip()
        flat = key.split(".", 1)[1] if "." in key else key
        if not sep or flat not in KEYS or ("." in key and key.split(".")[0] != KEYS[flat][0]):
            raise SpecError(f"{key}: not a synthetic parameter (KEY=VALUE, KEY one of {_known()})")
        section, kind = KEYS[flat]
        if section and section not in data:
            raise SpecError(
                f"{flat}: {name} has no {section} section, so {flat} would have no effect"
            )
        (data[section] if section else data)[flat] = _value(flat, kind, raw.strip())
    return spec_from_data(data)


def _known() -> str:
    return ", ".join(KEYS)


def read_spec_file(path: str | Path) -> SyntheticSpec:
    """A structure file → a spec; a bad file is an `InputError` naming it and the key."""
    where = str(path)
    text = read_text(path, MAX_FILE_BYTES)
    try:
        return spec_from_data(decode(text, where))
    except SpecError as error:
        raise InputError("bad_synthetic_spec", str(error), path=where) from None


def is_file_argument(text: str) -> bool:
    """Whether `--model TEXT` names a file (a path, or a `.toml` / `.json` name)."""
    return "/" in text or text.endswith((".toml", ".json"))


def written_name(spec: SyntheticSpec) -> str:
    """The spec as written: its shipped name, the shorthand that gives it, or, for a
    structure no shorthand can write, `NAME@` and the first 12 hex digits of its SHA-256."""
    if spec.structure not in STRUCTURES:
        return f"{spec.structure}@{spec.sha256[:12]}"
    base = shipped(spec.structure)
    if base == spec:
        return spec.structure
    if base.sources != spec.sources or base.note != spec.note:
        return f"{spec.structure}@{spec.sha256[:12]}"
    mine, theirs = spec.as_data(), base.as_data()
    changed = []
    for key, (section, _) in KEYS.items():
        a = (mine.get(section, {}) if section else mine).get(key)
        b = (theirs.get(section, {}) if section else theirs).get(key)
        if a != b:
            changed.append(f"{key}={a}")
    return spec.structure + ":" + ",".join(changed)


def structure_notes() -> dict[str, str]:
    """Each shipped structure in one line (the page's catalogue group)."""
    return {name: shipped(name).note for name in STRUCTURES}


def synthetic_model_schema() -> dict[str, JSON]:
    """The JSON Schema of a structure file (`exports/synthetic-model.schema.json`)."""
    return json_schema(
        SyntheticSpec,
        schema_id="https://composition-lab.invalid/exports/synthetic-model.schema.json",
        title="Composition Lab synthetic model (structure file, TOML or JSON)",
    )
