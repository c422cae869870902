"""What the three model builds share (scripts/build_fixture.py, build_standins.py and
train_subject.py): the ChatML chat template and its tokens, the build venv's bootstrap and
deterministic settings (one thread, fixed seeds), and the ONNX export for transformers.js
(optimum `text-generation-with-past`), its onnxruntime check (greedy decoding with past key
values fed step by step, as transformers.js does) and the q8 quantisation.

Standard library at import time: torch, transformers, optimum and onnxruntime are imported
by the functions that need them, inside the build venv only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
PAD = "<|endoftext|>"
SPECIAL_TOKENS = [PAD, IM_START, IM_END]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

DETERMINISTIC_ENV = {
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "RAYON_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "CUDA_VISIBLE_DEVICES": "",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}


def chatml(prompt: str) -> str:
    return f"{IM_START}user\n{prompt}{IM_END}\n{IM_START}assistant\n"


def requirements_digest(requirements: Path) -> str:
    """SHA-256 of a requirements file and of the files it includes with `-r`."""
    digest = hashlib.sha256(requirements.read_bytes())
    for line in requirements.read_text().splitlines():
        if line.startswith("-r "):
            digest.update((requirements.parent / line[3:].strip()).read_bytes())
    return digest.hexdigest()


def bootstrap(venv: Path, requirements: Path, script: Path) -> None:
    """Create/refresh `venv` from `requirements` and re-execute `script` inside it, with one
    thread and fixed seeds (DETERMINISTIC_ENV). Shared with scripts/build_standins.py."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"== creating {venv.relative_to(ROOT)}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    stamp = venv / f"{requirements.stem}.sha256"
    wanted = requirements_digest(requirements)
    if not stamp.exists() or stamp.read_text().strip() != wanted:
        print(f"== installing scripts/{requirements.name}", flush=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-r", str(requirements)], check=True
        )
        stamp.write_text(wanted + "\n")
    env = {**os.environ, **DETERMINISTIC_ENV}
    os.execve(str(python), [str(python), str(script.resolve()), *sys.argv[1:]], env)


def configure_torch() -> None:
    """One thread, deterministic algorithms, quiet transformers (shared with
    scripts/build_standins.py)."""
    import torch
    import transformers

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()


def export_onnx(model: Any, tok: Any, out: Path, pad_id: int, eos_id: int) -> None:
    """Empty `out`, then write the config, tokenizer files and the fp32 ONNX graph."""
    from optimum.exporters.onnx import onnx_export_from_model
    from transformers import GenerationConfig

    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_dir():
            shutil.rmtree(old)
        else:
            old.unlink()
    generation_config = GenerationConfig(
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        do_sample=False,
        max_new_tokens=256,
    )
    model.generation_config = generation_config
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = Path(tmp) / "hf"
        onnx_dir = Path(tmp) / "onnx"
        model.save_pretrained(hf_dir, safe_serialization=True)
        tok.save_pretrained(hf_dir)
        onnx_export_from_model(
            model,
            onnx_dir,
            task="text-generation-with-past",
            do_validation=False,
            device="cpu",
        )
        for name in ("config.json", "generation_config.json", "tokenizer.json"):
            shutil.copyfile(hf_dir / name, out / name)
        for name in ("tokenizer_config.json", "special_tokens_map.json"):
            data = json.loads((hf_dir / name).read_text())
            if name == "tokenizer_config.json":
                # transformers.js reads the template only from tokenizer_config.json
                data["chat_template"] = CHAT_TEMPLATE
            (out / name).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        (out / "onnx").mkdir()
        shutil.copyfile(onnx_dir / "model.onnx", out / "onnx" / "model.onnx")
        extra = sorted(p.name for p in onnx_dir.glob("*.onnx*") if p.name != "model.onnx")
        assert not extra, f"unexpected export files: {extra}"


class OrtCheck:
    """Greedy decoding with onnxruntime, feeding past key values step by step as
    transformers.js does, compared with every memorised reply."""

    def __init__(
        self, out: Path, examples: list[dict[str, Any]], tok: Any, config: Any, eos_id: int
    ) -> None:
        self.out = out
        self.examples = examples
        self.tok = tok
        self.config = config
        self.eos_id = eos_id

    def greedy(self, path: Path, prompt_ids: list[int], max_new: int) -> list[int]:
        import numpy as np
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        heads = self.config.num_key_value_heads
        past = {
            n: np.zeros((1, heads, 0, self.config.head_dim), dtype=np.float32)
            for n in names
            if n.startswith("past_key_values.")
        }
        outputs = [o.name for o in session.get_outputs()]
        ids = list(prompt_ids)
        new: list[int] = []
        step_ids = ids
        for _ in range(max_new):
            length = len(ids)
            feed = {
                "input_ids": np.array([step_ids], dtype=np.int64),
                "attention_mask": np.ones((1, length), dtype=np.int64),
                **past,
            }
            if "position_ids" in names:
                feed["position_ids"] = np.arange(
                    length - len(step_ids), length, dtype=np.int64
                ).reshape(1, -1)
            result = dict(zip(outputs, session.run(outputs, feed), strict=True))
            next_id = int(result["logits"][0, -1].argmax())
            past = {
                n: result[n.replace("past_key_values.", "present.")]
                for n in names
                if n.startswith("past_key_values.")
            }
            new.append(next_id)
            ids.append(next_id)
            step_ids = [next_id]
            if next_id == self.eos_id:
                break
        return new

    def run(self, path: Path) -> list[str]:
        """The replies the graph at `path` does not reproduce (empty: all reproduced)."""
        bad = []
        for example in self.examples:
            want = example["reply_ids"] + [self.eos_id]
            got = self.greedy(path, example["prompt_ids"], len(want) + 4)
            ok = got == want
            label = path.relative_to(self.out)
            print(f"   ort {label}  {example['name']:16} {'ok' if ok else 'MISMATCH'}", flush=True)
            if not ok:
                bad.append(f"{example['name']}: {self.tok.decode(got)!r}")
        return bad


def quantize(out: Path, check: OrtCheck) -> None:
    """q8 (dynamic int8 weights), kept only if it reproduces every reply too."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantized = out / "onnx" / "model_quantized.onnx"
    quantize_dynamic(out / "onnx" / "model.onnx", quantized, weight_type=QuantType.QUInt8)
    bad = check.run(quantized)
    if bad:
        print(f"== q8 dropped, it does not reproduce the replies: {bad}", flush=True)
        quantized.unlink()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
