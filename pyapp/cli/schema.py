"""`python -m pyapp schema [--check]`: every generated file, (re)written from the records
that define it — the JSON Schemas in `exports/` (`schemas`, the ledger's included), the
page's protocol constants (`site/lab_protocol.js`: message names, sync names, URL
parameters, the `window.lab` members), the JSDoc types of the page's messages and documents
(`site/lab_types.js`; the model channel's `site/common/model_types.js`), the fault grammar
(`site/faults_grammar.js`), the model channel's files (`model_channel_files`), the
condition checkboxes of `site/index.html` and the generated blocks of `docs/hosting.md`,
`docs/models.md`, `docs/page.md` and `docs/sweep.md` (`blocks`). With `--check` it only
reports drift (exit 1)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pyapp.experiment import ledger_schema
from pyapp.host import EXPORTS, REPO_ROOT, write_atomically
from pyapp.matrix import plan_schema, state_schema
from pyapp.matrix import receipt_schema as study_receipt_schema
from pyapp.predict import predictions_schema
from pyapp.protocol import js_module, markdown_tables, messages_schema, page, types_module
from pyapp.protocol import model_exports as model_message_exports
from pyapp.records import faults, trace_schema
from pyapp.study import study_schema
from pyapp.sweep import run_schema
from pyapp.synthetic import synthetic_model_schema
from pyapp.verify import receipt_schema


def schemas() -> dict[str, dict[str, Any]]:
    return {
        "trace.schema.json": trace_schema(),
        "predictions.schema.json": predictions_schema(),
        "receipt.schema.json": receipt_schema(),
        "messages.schema.json": messages_schema(),
        "sweep-run.schema.json": run_schema(),
        "synthetic-model.schema.json": synthetic_model_schema(),
        "matrix-plan.schema.json": plan_schema(),
        "matrix-state.schema.json": state_schema(),
        "ledger.schema.json": ledger_schema(),
        "study.schema.json": study_schema(),
        "study-receipt.schema.json": study_receipt_schema(),
    }


def generated() -> dict[Path, str]:
    """Every generated file: the schemas in exports/, the page's protocol constants and the
    fault grammar (site/faults_grammar.js)."""

    files = {
        EXPORTS / name: json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
        for name, schema in schemas().items()
    }
    files[REPO_ROOT / "site" / "lab_protocol.js"] = js_module()
    files[REPO_ROOT / "site" / "lab_types.js"] = types_module()
    files[REPO_ROOT / "site" / "faults_grammar.js"] = faults.js_module()
    hosting = REPO_ROOT / "docs" / "hosting.md"
    files[hosting] = with_generated_block(hosting.read_text(encoding="utf-8"))
    files.update(model_channel_files())
    files.update(blocks())
    return files


def blocks() -> dict[Path, str]:
    """The files with a generated block among hand-written text: docs/page.md's tables of
    the page's shared names, docs/sweep.md's fault hooks and site/index.html's condition
    checkboxes and chain-protocol choices."""
    out: dict[Path, str] = {}
    index = REPO_ROOT / "site" / "index.html"
    for path, marker, text, pad in (
        (REPO_ROOT / "docs" / "page.md", "page-names", page.markdown_tables(), "\n"),
        (REPO_ROOT / "docs" / "sweep.md", "fault-hooks", faults.markdown_table(), "\n"),
        (index, "conditions", page.condition_checkboxes(), ""),
        (index, "chain-protocols", page.chain_protocol_options(), ""),
    ):
        current = out.get(path) or path.read_text(encoding="utf-8")
        out[path] = with_generated_block(current, text, marker, pad)
    return out


def model_channel_files() -> dict[Path, str]:
    """The generated files of the model-worker channel (pyapp/protocol/model_messages.py)."""

    models = REPO_ROOT / "docs" / "models.md"
    tables = model_message_exports.markdown_tables()
    return {
        EXPORTS / "model-messages.schema.json": json.dumps(
            model_message_exports.messages_schema(), indent=2, ensure_ascii=False
        )
        + "\n",
        REPO_ROOT / "site" / "common" / "model_protocol.js": model_message_exports.js_module(),
        REPO_ROOT / "site" / "common" / "model_types.js": model_message_exports.types_module(),
        models: with_generated_block(models.read_text(encoding="utf-8"), tables, "model-messages"),
    }


def with_generated_block(
    text: str, tables: str | None = None, marker: str = "messages", pad: str = "\n"
) -> str:
    """A file's text with its generated block (between the `marker` comments, by default the
    page ⇄ Python message tables of docs/hosting.md) brought up to date; `pad` around it."""

    start = text.index(f"<!-- {marker}:begin")
    head_end = text.index("\n", start) + 1
    end = text.index(f"<!-- {marker}:end -->")
    end = text.rindex("\n", 0, end) + 1
    return text[:head_end] + pad + (tables or markdown_tables()) + pad + text[end:]


def cmd_schema(args: argparse.Namespace) -> int:
    drifted = []
    for path, text in generated().items():
        name = path.name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            drifted.append(name)
        else:
            write_atomically(path, text)
            print(f"wrote {path}")
    if drifted:
        print(f"schema drift: {', '.join(drifted)} (run: python -m pyapp schema)")
        return 1
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("schema", help="generate exports/*.schema.json from the records")
    p.add_argument("--check", action="store_true", help="only report drift (exit 1)")
    p.set_defaults(func=cmd_schema)
