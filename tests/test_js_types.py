"""The page's JavaScript is typed and checked (issue 40): `tsc --noEmit -p .` (tsconfig.json:
strict, checkJs) passes over every file of the site; the JSDoc typedefs `python -m pyapp schema`
writes (`pyapp/protocol/jsdoc.py`: site/lab_types.js, site/common/model_types.js) say what the
JSON Schemas say, for every message and for the documents the page reads, so a field renamed in
Python fails the check; a schema the types cannot say is refused, never written loosely; and
every way out of the check (`any`, a cast through `unknown`) is counted here with its reason."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pyapp.cli import schema as generated_files
from pyapp.protocol import exports, jsdoc, model_exports

ROOT = Path(__file__).resolve().parents[1]


def test_each_schema_keyword_becomes_its_type() -> None:
    defs: dict[str, Any] = {"Caps": {"type": "object", "properties": {}}}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"type": "string"}, "string"),
        ({"type": "integer"}, "number"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "(number | null)"),
        ({"enum": ["a", "b"]}, '("a" | "b")'),
        ({"const": True}, "true"),
        ({"$ref": "#/$defs/Caps"}, "Caps"),
        ({"type": "array", "items": {"$ref": "#/$defs/Caps"}}, "Caps[]"),
        ({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
         "Array<(string | null)>"),
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
          "minItems": 2, "maxItems": 2}, "[string, number]"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "Record<string, number>"),
        ({"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "required": ["a"],
          "additionalProperties": False}, "{ a: string, b?: unknown }"),
        ({"description": "anything"}, "unknown"),
    ]  # fmt: skip
    for schema, expected in cases:
        assert jsdoc.type_of(schema, defs) == expected, schema


def test_a_reply_is_a_union_narrowed_by_ok_with_its_result_record() -> None:
    defs = exports.messages_schema()["$defs"]
    reply = jsdoc.type_of(defs["HelloReply"], defs)
    assert reply.startswith('({ type: "hello", id: unknown, ok: true, result: Versions')
    assert (
        '| { type: "hello", id: unknown, ok: false, result?: Versions, error: (Error | null)'
        in (reply)
    )


def test_what_the_types_cannot_say_is_refused() -> None:
    for schema in (
        {"type": "string", "pattern": "^a$"},
        {"$ref": "other.json#/x"},
        {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "string"}},
    ):
        with pytest.raises(jsdoc.SchemaTypeError):
            jsdoc.type_of(schema, {})


def test_a_description_cannot_end_the_comment_or_start_a_tag() -> None:
    lines = jsdoc.typedef(
        "X",
        {
            "type": "object",
            "description": "ends */ here @param x",
            "properties": {"a": {"type": "string", "description": "see @b and a@c"}},
            "required": ["a"],
            "additionalProperties": False,
        },
        {},
    )
    text = "\n".join(lines)
    assert text.count("*/") == 1 and "@param" not in text
    assert " * @property {string} a see at b and a@c" in lines


def typedef_names(text: str) -> set[str]:
    return set(re.findall(r"@typedef \{.*\} (\w+)$", text, flags=re.M))


def test_the_page_has_a_type_for_every_message_and_every_document_it_reads() -> None:
    lab = typedef_names((ROOT / "site" / "lab_types.js").read_text(encoding="utf-8"))
    schema = exports.messages_schema()["$defs"]
    assert set(schema) <= lab
    assert {"Trial", "Trace", "TraceHeader", "PredictionsDocument", "Receipt"} <= lab
    model = typedef_names((ROOT / "site" / "common" / "model_types.js").read_text("utf-8"))
    assert (
        set(model_exports.messages_schema()["$defs"]) | {"Results", "Requests", "Replies"} == model
    )
    assert exports.types_module() == (ROOT / "site" / "lab_types.js").read_text(encoding="utf-8")


# ---- the type check itself (tsconfig.json: strict, checkJs) -------------------------------------

TSC = ROOT / "node_modules" / ".bin" / "tsc"


def generated_js() -> set[Path]:
    return {path for path in generated_files.generated() if path.suffix == ".js"}


def hand_written_js() -> list[Path]:
    """Every JavaScript file the type check covers (tsconfig.json's `include`: the site whole,
    the page's driver scripts) that a person writes."""
    include = json.loads((ROOT / "tsconfig.json").read_text(encoding="utf-8"))["include"]
    found = {p for pattern in include for p in ROOT.glob(pattern) if p.suffix in {".js", ".mjs"}}
    return sorted(found - generated_js())


def run_tsc(project: Path) -> subprocess.CompletedProcess[str]:
    if not TSC.exists():
        pytest.skip("TypeScript is not installed: npm ci --ignore-scripts")
    return subprocess.run(
        [str(TSC), "--noEmit", "-p", ".", "--pretty", "false"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_page_type_checks() -> None:
    """`tsc --noEmit -p .` (what `scripts/lab test` runs): strict, every file of the site."""
    done = run_tsc(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_hand_written_file_asks_for_the_check() -> None:
    files = hand_written_js()
    for name in ("site/app.js", "site/model_worker/model_worker.js", "pyapp/sweep/driver.js"):
        assert ROOT / name in files, name
    unchecked = [
        str(p.relative_to(ROOT))
        for p in files
        if not p.read_text("utf-8").startswith("// @ts-check\n")
    ]
    assert unchecked == []
    config = json.loads((ROOT / "tsconfig.json").read_text(encoding="utf-8"))["compilerOptions"]
    assert config["strict"] is True and config["checkJs"] is True and config["noEmit"] is True


UNCHECKED: dict[str, str] = {
    "tests/*.mjs": "Node scripts that run the page's modules with stand-ins for the browser's"
    " globals (Worker, location, a fake clock): the stand-ins are the test, not page code",
    "bench/in_pyodide.mjs": "a Node script that runs Python under Pyodide for a bench figure",
    "tests/browser/greedy_parity_worker.js": "a diagnostic worker assembled flat into a test's"
    " own folder (./greedy.js beside it): it imports what exists only there",
    "bench/wasm_loops_worker.js": "the same, for bench/wasm_loops.py",
}
"""The hand-written JavaScript the type check leaves out, and why: none of it is shipped."""
SKIP = {"node_modules", "build", "runs", "__pycache__"}


def test_every_javascript_file_is_checked_or_named_as_unchecked() -> None:
    checked = set(hand_written_js()) | generated_js()
    left_out = {p for pattern in UNCHECKED for p in ROOT.glob(pattern)}
    every = set()
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if d not in SKIP and not d.startswith(".")]
        every |= {Path(folder) / n for n in names if n.endswith((".js", ".mjs"))}
    assert every - checked - left_out == set()
    assert all(any(ROOT.glob(pattern)) for pattern in UNCHECKED)
    assert not checked & left_out


def typed_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: str, field: str) -> Path:
    """A copy of the checked tree whose generated types come from records in which `record`'s
    `field` was renamed (as a rename in Python renames it in the schemas)."""
    merged = jsdoc.merged_defs

    def renamed(*schemas: Any) -> dict[str, Any]:
        defs = merged(*schemas)
        if record in defs:
            entry = copy.deepcopy(defs[record])
            entry["properties"][f"{field}_renamed"] = entry["properties"].pop(field)
            entry["required"] = [f"{field}_renamed" if n == field else n for n in entry["required"]]
            defs[record] = entry
        return defs

    monkeypatch.setattr(jsdoc, "merged_defs", renamed)
    for name in ("site", "types"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copyfile(ROOT / "tsconfig.json", tmp_path / "tsconfig.json")
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules")
    (tmp_path / "site" / "lab_types.js").write_text(exports.types_module(), encoding="utf-8")
    (tmp_path / "site" / "common" / "model_types.js").write_text(
        model_exports.types_module(), encoding="utf-8"
    )
    return tmp_path


@pytest.mark.parametrize(
    ("record", "field", "reader"),
    [
        ("Trial", "outcome", "site/results_table.js"),  # a trace record the page draws
        ("Receipt", "fingerprint", "site/receipt_view.js"),  # the freeze receipt
        ("ModelLoad", "error_code", "site/model_client.js"),  # the model channel's
    ],
)
def test_a_field_renamed_in_python_fails_the_type_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: str, field: str, reader: str
) -> None:
    done = run_tsc(typed_copy(tmp_path, monkeypatch, record, field))
    assert done.returncode != 0
    assert re.search(
        rf"^{re.escape(reader)}\(\d+,\d+\): error TS\d+: .*'{field}'", done.stdout, re.M
    ), done.stdout


# ---- every way out of the type check, counted and justified ----------------------------------

ESCAPES: dict[tuple[str, str], str] = {
    (
        "site/model_worker/model_worker.js",
        "tokenizer = /** @type {Tokenizer} */ (/** @type {unknown} */ (await AutoTokenizer",
    ): "transformers.js declares its tokenizer's methods loosely (`any`); the worker uses the"
    " pinned version's surface, written down once (`Tokenizer`) and checked by test_greedy.py",
    (
        "site/model_worker/model_worker.js",
        "model = /** @type {CausalModel} */ (/** @type {unknown} */ (loadedModel));",
    ): "the greedy loop drives transformers.js internals the package declares private or"
    " `any` (greedy.js `CausalModel`); test_greedy.py checks them against model.generate",
}
"""Each place the checker is told a type it cannot see (a cast through `unknown`), and why. An
`any`, `@ts-ignore`, `@ts-expect-error` or `@ts-nocheck` in a hand-written file would be listed
here with its reason; there is none."""
ANY = re.compile(r"\{[^{}\n]*\bany\b[^{}\n]*\}|@ts-(?:ignore|expect-error|nocheck)")
THROUGH_UNKNOWN = re.compile(r"^.*@type \{[^}]*\} \*/ \(/\*\* @type \{unknown\} \*/ \(.*$", re.M)


def escapes() -> dict[tuple[str, str], str]:
    found = {}
    for path in [*hand_written_js(), *ROOT.joinpath("types").rglob("*.d.ts")]:
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ROOT))
        for match in [*ANY.finditer(text), *THROUGH_UNKNOWN.finditer(text)]:
            line = text[text.rfind("\n", 0, match.start()) + 1 : text.find("\n", match.end())]
            found[(name, line.strip())] = match.group(0)
    return found


def test_every_escape_from_the_type_check_is_counted_and_justified() -> None:
    found = escapes()
    listed = {key: reason for key, reason in ESCAPES.items()}
    unlisted = [key for key in found if not any(key[0] == f and s in key[1] for f, s in listed)]
    stale = [key for key in listed if not any(key[0] == f and key[1] in line for f, line in found)]
    assert unlisted == [], "an escape from the type check needs its reason in ESCAPES"
    assert stale == [], "ESCAPES lists an escape that is gone"
    assert not [k for k, text in found.items() if re.search(r"\bany\b|@ts-", text)], (
        "no `any` and no @ts- directive in hand-written code"
    )


def test_the_loose_values_of_the_libraries_are_typed_where_they_enter() -> None:
    """JSON.parse, Response.json and a message's data are `any` in the DOM's declarations: each
    is cast to the record it is (or to `unknown`, then checked) where the page reads it."""
    loose = re.compile(r"JSON\.parse\(|\.json\(\)|\(\{ data \}\)")
    cast = re.compile(
        r"\*/ \((?:await )?[\w.]*(?:JSON\.parse\(|\.json\(\))"
        r"|MessageEvent<unknown>\} \*/ \{ data \}"
    )
    bare = []
    for path in hand_written_js():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if loose.search(line) and not cast.search(line):
                bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert bare == []
