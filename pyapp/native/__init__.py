"""Local ONNX models run natively, as the page runs them (`python -m pyapp sweep --backend
native`; docs/sweep.md), one concern per module:

folder    a model's files in the onnx-community layout, found, read and checked
          (`read_model`, `ModelFiles`, `NativeModelError`)
template  the model's chat template rendered as transformers.js renders it (verified
          templates only: `VERIFIED`)
text      token ids from the rendered text and text from generated ids, as the page's
          tokenizer makes them
adapter   the `ModelAdapter`: onnxruntime, greedy, the page's caps, deadlines and finish
          reasons (`load_native`, `NativeAdapter`)

onnxruntime, numpy, tokenizers and Jinja2 (the `native` extra, pinned in
requirements-dev.txt) are imported inside the functions that use them: the page's Pyodide
build never needs them.
"""

from pyapp.native.adapter import (
    NativeAdapter,
    NativeIdentity,
    Source,
    check_model,
    load_native,
    native_model_provenance,
)
from pyapp.native.folder import ModelFiles, NativeModelError, find, logits_settings, read_model
from pyapp.native.template import VERIFIED, ChatTemplate, template_text
from pyapp.native.text import TokenizerText

__all__ = [
    "VERIFIED",
    "ChatTemplate",
    "ModelFiles",
    "NativeAdapter",
    "NativeIdentity",
    "NativeModelError",
    "Source",
    "TokenizerText",
    "check_model",
    "find",
    "load_native",
    "logits_settings",
    "native_model_provenance",
    "read_model",
    "template_text",
]
