"""The headless sweep (`python -m pyapp sweep`), one concern per module:

main       the command: set-up, one session in the browser, the end-of-run report
options    the command line, what --resume takes from run.json, the model chosen
chromium   Chromium's flags (shared with tests and benches), finding it, allowed hosts
driver     one sweep in one headless page, through panel
files      trials.jsonl as trials arrive, trace.json / predictions.json at checkpoints
runfile    run.json
progress   the progress bar / lines on stderr
signals    Ctrl-C and SIGTERM
checks     schemas and exact re-derivation at the end
errors     SweepError, SetupError, Paused, Interrupted
native     the same sweep without Chromium: the page swapped for this process
           (`--backend native`, a local ONNX model from pyapp.native)
panel      how every driver talks to the page: window.lab.send only (page_state,
           model_choose, the consent's click; the relay driver.js), shared with tests,
           benches and screenshots
"""

from pyapp.sweep.chromium import CHROMIUM_ARGS, allowed_hosts, find_chromium, host_allowed
from pyapp.sweep.driver import Driver
from pyapp.sweep.errors import Interrupted, Paused, SetupError, SweepError
from pyapp.sweep.files import (
    PREDICTIONS,
    RECEIPT,
    TRACE,
    TRIALS,
    FilesError,
    TrialsFile,
    read_sweep,
    stored_texts,
    write_checkpoint,
    write_receipt,
)
from pyapp.sweep.main import begin_session
from pyapp.sweep.native import bundled_folder, choose_native, model_files, standin_tokenizer
from pyapp.sweep.options import (
    ModelChoice,
    Options,
    choose_model,
    options_for_resume,
    options_from_args,
    parse_page_params,
    read_catalogue,
    recorded_options_of,
)
from pyapp.sweep.panel import (
    SEND,
    consent,
    install_relay,
    load_from_catalogue,
    page_state,
    relayed,
    send,
    stored,
    stored_document,
    use_synthetic,
    wait_booted,
    wait_catalogue,
    wait_models,
    wait_page,
)
from pyapp.sweep.progress import Progress
from pyapp.sweep.runfile import RunFile, RunRecord, run_schema, typed
from pyapp.sweep.signals import StopFlag, handling_stops

__all__ = [
    "CHROMIUM_ARGS",
    "PREDICTIONS",
    "RECEIPT",
    "SEND",
    "TRACE",
    "TRIALS",
    "Driver",
    "FilesError",
    "Interrupted",
    "ModelChoice",
    "Options",
    "Paused",
    "Progress",
    "RunFile",
    "RunRecord",
    "SetupError",
    "StopFlag",
    "SweepError",
    "TrialsFile",
    "allowed_hosts",
    "begin_session",
    "bundled_folder",
    "choose_model",
    "choose_native",
    "consent",
    "find_chromium",
    "handling_stops",
    "host_allowed",
    "install_relay",
    "load_from_catalogue",
    "model_files",
    "options_for_resume",
    "options_from_args",
    "page_state",
    "parse_page_params",
    "read_catalogue",
    "read_sweep",
    "recorded_options_of",
    "relayed",
    "run_schema",
    "send",
    "standin_tokenizer",
    "stored",
    "stored_document",
    "stored_texts",
    "typed",
    "use_synthetic",
    "wait_booted",
    "wait_catalogue",
    "wait_models",
    "wait_page",
    "write_checkpoint",
    "write_receipt",
]
