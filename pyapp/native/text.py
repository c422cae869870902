"""Text to token ids and back, as the page's tokenizer does.

Encoding is the `tokenizers` library's, on the model's own tokenizer.json, with no special
tokens added (the worker's `tokenizer(templated, {add_special_tokens: false})`);
tests/test_native_template.py compares the ids with transformers.js's for every verified
model. Decoding follows @huggingface/tokenizers' `decode(ids, {skip_special_tokens: true})`
step by step for a ByteLevel decoder (every catalogue model's, the fixture's and the
subject's): special tokens left out, each run of ordinary tokens mapped back to bytes and
decoded as UTF-8 with U+FFFD for invalid bytes, added tokens kept as their text, then the
tokenization spaces cleaned up when the tokenizer config says so (its default: yes). A
tokenizer with another decoder is refused (`unverified_template`).

`byte_ceiling` is the worker's bound on the bytes one token can add
(site/model_worker/output_bytes.js): the output-bytes cap needs an exact decode only once the
bound passes it.
"""

from __future__ import annotations

import json
from typing import Any

from pyapp.native.folder import NativeModelError

_CLEANUPS = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)
"""@huggingface/tokenizers' `clean_up_tokenization`, in its order."""


def clean_up_tokenization(text: str) -> str:
    for old, new in _CLEANUPS:
        text = text.replace(old, new)
    return text


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, reversed: character → byte."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


BYTE_DECODER = _byte_decoder()


def tokenizer_data(tokenizer_json: str) -> dict[str, Any]:
    """tokenizer.json, refused (`unverified_template`) unless its decoder is ByteLevel."""
    data = json.loads(tokenizer_json)
    decoder = (data.get("decoder") or {}).get("type") if isinstance(data, dict) else None
    if decoder != "ByteLevel":
        raise NativeModelError(
            "unverified_template",
            f"the tokenizer's decoder is {decoder!r}: the native backend decodes ByteLevel"
            " tokenizers only, as the page does",
        )
    return dict(data)


class TokenizerText:
    """The model's tokenizer: `encode` a rendered prompt, `decode` generated ids."""

    def __init__(self, tokenizer_json: str, tokenizer_config: dict[str, Any]) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise NativeModelError(
                "native_unavailable",
                "the native backend needs tokenizers: pip install -e .[native]",
            ) from None
        data = tokenizer_data(tokenizer_json)
        self._tokenizer = Tokenizer.from_str(tokenizer_json)
        vocab: dict[str, int] = dict((data.get("model") or {}).get("vocab") or {})
        added = [t for t in data.get("added_tokens") or [] if isinstance(t, dict)]
        self.vocab: dict[int, str] = {i: token for token, i in vocab.items()}
        for token in added:
            self.vocab[int(token["id"])] = str(token["content"])
        self.added = {str(t["content"]) for t in added}
        self.special = {str(t["content"]) for t in added if t.get("special")}
        self.special |= set(tokenizer_config.get("additional_special_tokens") or [])
        unknown = (data.get("model") or {}).get("unk_token")
        self.unknown = unknown if isinstance(unknown, str) else None
        cleanup = tokenizer_config.get("clean_up_tokenization_spaces")
        self.cleanup = True if cleanup is None else bool(cleanup)
        self._ceilings: dict[int, int] = {}

    def encode(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        """`decode(ids, {skip_special_tokens: true})` as @huggingface/tokenizers does it."""
        tokens = [self.vocab.get(i, self.unknown) for i in ids]
        kept = [t for t in tokens if t is not None and t not in self.special]
        chunks: list[str] = []
        run: list[str] = []
        for token in kept:
            if token in self.added:
                if run:
                    chunks.append(_bytes_text("".join(run)))
                    run = []
                chunks.append(token)
            else:
                run.append(token)
        if run:
            chunks.append(_bytes_text("".join(run)))
        text = "".join(chunks)
        return clean_up_tokenization(text) if self.cleanup else text

    def byte_ceiling(self, token_id: int) -> int:
        """At most this many UTF-8 bytes of decoded text come from the token (4 per code
        point of its vocabulary string)."""
        ceiling = self._ceilings.get(token_id)
        if ceiling is None:
            ceiling = self._ceilings[token_id] = 4 * len(self.vocab.get(token_id, ""))
        return ceiling


def _bytes_text(run: str) -> str:
    """A run of byte-level characters back to text (TextDecoder with `fatal: false`; a
    character outside the alphabet is byte 0, as a Uint8Array makes of it)."""
    data = bytes(BYTE_DECODER.get(c, 0) for c in run)
    return data.decode("utf-8", errors="replace")
