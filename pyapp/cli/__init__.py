"""The command line (``python -m pyapp``): its commands and the parser (``main``), the
argument types, option groups and output-file check they share (``arguments``), ``schema``
(every generated file), ``sweep`` (the sweep's options, handed to ``pyapp.sweep``),
``simulate`` (synthetic models over many seeds, natively) and ``study`` (a matrix folder's
answer, handed to ``pyapp.study``). What it shares with the sweep (paths, atomic writes,
the static server) is in ``pyapp.host``, below both."""

from pyapp.cli.main import parser, read_trace_document, valid_trace
from pyapp.cli.schema import model_channel_files, schemas

__all__ = [
    "model_channel_files",
    "parser",
    "read_trace_document",
    "schemas",
    "valid_trace",
]
