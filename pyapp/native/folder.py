"""A local model's files in the onnx-community layout, found and read once, checked before
anything loads: `config.json`, `generation_config.json` (optional), `tokenizer.json`,
`tokenizer_config.json` and `onnx/<file of the dtype>` (with `onnx/<file>_data` when the
weights are stored beside the graph).

A model may lie in several folders searched in order, as the local hub serves it
(`pyapp.host.serve`): a stand-in's own folder, then its npm tokenizer package's. Every JSON
file is read by the one bounded reader (`pyapp.records.documents`); the ONNX files are
checked to be regular files within their size limit before onnxruntime opens them by path.

What the page's model worker takes from the generation config is taken here too: the EOS
ids (the generation config's, else config.json's) and every setting that would add a logits
processor to transformers.js's greedy decoding (`site/model_worker/greedy.js`). The native
loop applies none of them, so a model that asks for one is refused (`NativeModelError`),
never decoded differently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interpreter import LabError
from pyapp.errors import InputError
from pyapp.records import open_regular, read_document, read_text

ONNX_FILES = {
    "fp32": "model.onnx",
    "fp16": "model_fp16.onnx",
    "q8": "model_quantized.onnx",
    "int8": "model_int8.onnx",
    "uint8": "model_uint8.onnx",
    "q4": "model_q4.onnx",
    "q4f16": "model_q4f16.onnx",
    "bnb4": "model_bnb4.onnx",
}
"""transformers.js's ONNX file for each dtype (the onnx-community layout)."""
MAX_JSON_BYTES = 64 * 1024 * 1024
"""A model's JSON files (a tokenizer.json of a 150k vocabulary is ~11 MB)."""
MAX_ONNX_BYTES = 8 * 1024 * 1024 * 1024
"""A graph or its external weights."""
LOGITS_SETTINGS: dict[str, Callable[[Any], bool]] = {
    "repetition_penalty": lambda v: v is not None and v != 1.0,
    "no_repeat_ngram_size": lambda v: v is not None and v > 0,
    "bad_words_ids": lambda v: v is not None,
    "min_length": lambda v: v is not None and v > 0,
    "min_new_tokens": lambda v: v is not None and v > 0,
    "forced_bos_token_id": lambda v: v is not None,
    "forced_eos_token_id": lambda v: v is not None,
    "suppress_tokens": lambda v: v is not None,
    "begin_suppress_tokens": lambda v: v is not None,
    "guidance_scale": lambda v: v is not None and v > 1,
}
"""Generation-config settings that make transformers.js add a logits processor to greedy
decoding, each with its test as `_get_logits_processor` writes it."""


class NativeModelError(LabError):
    """A model the native backend cannot run as the page would (`code`: `no_model_files`,
    `bad_model_file`, `unverified_template`, `logits_processor`, `native_unavailable`,
    `load_failed`); the sweep refuses it before anything runs (exit 2)."""


@dataclass(frozen=True)
class ModelFiles:
    """A model's files, read and checked."""

    folders: tuple[Path, ...]
    """Where its files were looked for, in order."""
    onnx: Path
    """The graph of the dtype."""
    dtype: str
    """The dtype (`ONNX_FILES`' key)."""
    config: dict[str, Any]
    """config.json."""
    config_sha256: str
    """SHA-256 of config.json's bytes (the fixture and subject digests say what it is)."""
    eos_ids: frozenset[int]
    """The ids that end a generation: generation_config.json's `eos_token_id`, else
    config.json's (as the model worker's `eosIds`)."""
    tokenizer_json: str
    """tokenizer.json's text."""
    tokenizer_config: dict[str, Any]
    """tokenizer_config.json."""


def find(folders: tuple[Path, ...], name: str) -> Path | None:
    """The first folder's `name`, or None."""
    for folder in folders:
        if (folder / name).is_file():
            return folder / name
    return None


def _json(folders: tuple[Path, ...], name: str, required: bool = True) -> dict[str, Any]:
    path = find(folders, name)
    if path is None:
        if not required:
            return {}
        where = ", ".join(str(f) for f in folders)
        raise NativeModelError("no_model_files", f"no {name} in {where}")
    try:
        value = read_document(path, MAX_JSON_BYTES)
    except InputError as error:
        raise NativeModelError("bad_model_file", f"{path}: {error.message}") from None
    if not isinstance(value, dict):
        raise NativeModelError("bad_model_file", f"{path}: not a JSON object")
    return value


def _ids(value: Any) -> frozenset[int]:
    values = value if isinstance(value, list) else [value]
    return frozenset(int(v) for v in values if isinstance(v, int) and not isinstance(v, bool))


def _check_onnx(path: Path) -> None:
    """A regular file within the size limit (and its external weights, when present)."""
    for file in (path, path.with_name(path.name + "_data")):
        if file == path or file.exists():
            try:
                open_regular(file, MAX_ONNX_BYTES).close()
            except InputError as error:
                raise NativeModelError("bad_model_file", f"{file}: {error.message}") from None


def settings(config: dict[str, Any], generation: dict[str, Any]) -> dict[str, Any]:
    """The generation settings transformers.js uses (`_prepare_generation_config`): config.json,
    its `decoder` / `generator` / `text_config` sections, then generation_config.json."""
    merged = dict(config)
    for key in ("decoder", "generator", "text_config"):
        if isinstance(config.get(key), dict):
            merged.update(config[key])
    merged.update(generation)
    return merged


def logits_settings(generation: dict[str, Any]) -> list[str]:
    """`name=value` of each setting that would add a logits processor (none: [])."""
    found = []
    for name, adds in LOGITS_SETTINGS.items():
        value = generation.get(name)
        try:
            added = adds(value)
        except TypeError:  # a value of another type than transformers.js expects: refused
            added = True
        if added:
            found.append(f"{name}={value!r}")
    return found


def read_model(folders: tuple[Path, ...], dtype: str) -> ModelFiles:
    """The model's files for `dtype`, or a `NativeModelError` naming what is missing or
    refused."""
    if dtype not in ONNX_FILES:
        raise NativeModelError("bad_model_file", f"dtype {dtype!r}: one of {', '.join(ONNX_FILES)}")
    config = _json(folders, "config.json")
    config_path = find(folders, "config.json")
    assert config_path is not None
    generation = settings(config, _json(folders, "generation_config.json", required=False))
    processors = logits_settings(generation)
    if processors:
        raise NativeModelError(
            "logits_processor",
            f"the generation config asks for {', '.join(processors)}: the native backend "
            "decodes greedily with no logits processor; run this model in the page",
        )
    onnx = find(folders, f"onnx/{ONNX_FILES[dtype]}")
    if onnx is None:
        where = ", ".join(str(f) for f in folders)
        raise NativeModelError(
            "no_model_files", f"no onnx/{ONNX_FILES[dtype]} (dtype {dtype}) in {where}"
        )
    _check_onnx(onnx)
    tokenizer = find(folders, "tokenizer.json")
    if tokenizer is None:
        raise NativeModelError("no_model_files", f"no tokenizer.json in {folders[0]}")
    try:
        tokenizer_json = read_text(tokenizer, MAX_JSON_BYTES)
        with open_regular(config_path, MAX_JSON_BYTES) as handle:
            config_sha256 = hashlib.sha256(handle.read()).hexdigest()
    except (InputError, OSError) as error:
        raise NativeModelError("bad_model_file", f"{tokenizer}: {error}") from None
    return ModelFiles(
        folders=folders,
        onnx=onnx,
        dtype=dtype,
        config=config,
        config_sha256=config_sha256,
        eos_ids=_ids(generation.get("eos_token_id")),
        tokenizer_json=tokenizer_json,
        tokenizer_config=_json(folders, "tokenizer_config.json"),
    )
