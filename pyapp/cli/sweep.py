"""`python -m pyapp sweep`: its options (docs/sweep.md) and the command, which hands them to
`pyapp.sweep.main` — the protocol run headless in the real page."""

from __future__ import annotations

import argparse

from pyapp.cli.arguments import PRESET_HELP, chain_protocol_option, sealed_option, seed
from pyapp.host import REPO_ROOT, input_file, input_folder, output_folder
from pyapp.sweep import main as sweep_main
from pyapp.tasks import DEFAULT_SEED


def cmd_sweep(args: argparse.Namespace) -> int:
    return sweep_main.main(args, ["python -m pyapp", *(args.argv or [])])


def sweep_options(p: argparse.ArgumentParser) -> None:
    """The options of `python -m pyapp sweep` (docs/sweep.md)."""
    p.add_argument("--model", help="fixture, a catalogue key or id, or any org/name hub id")
    p.add_argument(
        "--backend",
        choices=["webgpu", "wasm", "native"],
        help="model backend (webgpu); native: a local ONNX model under onnxruntime, no browser",
    )
    p.add_argument("--dtype", help="model dtype (default: the page's first choice)")
    p.add_argument("--revision", help="model revision (default: the catalogue's, or main)")
    p.add_argument("--seed", type=seed, help=f"task seed ({DEFAULT_SEED})")
    p.add_argument("--preset", metavar="NAME", help=PRESET_HELP)
    p.add_argument(
        "--param", action="append", metavar="KEY=VALUE", help="override a task parameter"
    )
    p.add_argument(
        "--conditions",
        metavar="C1,C2",
        help="comma-separated subset of supplied-program,model-only,model-program,"
        "controlled-chain (default: all)",
    )
    chain_protocol_option(p, default=None)
    sealed_option(p)
    p.add_argument(
        "--consent",
        action="store_true",
        help="consent to downloading and loading the model (without it nothing downloads)",
    )
    p.add_argument("--out", type=output_folder, required=True, help="output folder (runs/NAME/)")
    p.add_argument("--resume", action="store_true", help="continue the sweep in --out")
    p.add_argument("--model-host", help="hub-like server URL, or a folder laid out like the hub")
    p.add_argument(
        "--model-folder", type=input_folder, help="one model's files, served locally as the hub"
    )
    p.add_argument(
        "--chromium-flag",
        action="append",
        metavar="FLAG",
        help="extra Chromium flag, e.g. --chromium-flag=--enable-unsafe-webgpu (repeatable)",
    )
    p.add_argument("--site", type=input_folder, help=f"built site ({REPO_ROOT / 'build' / 'site'})")
    p.add_argument(
        "--timeout", type=float, help="stop (resumably) after this many seconds (no limit)"
    )
    p.add_argument(
        "--page-param",
        action="append",
        metavar="KEY=VALUE",
        help="extra query parameter for the page (test hooks, e.g. model_step_delay_ms=30,"
        " fault=worker_crash@3)",
    )
    p.add_argument(
        "--ledger",
        type=input_file,
        metavar="FILE",
        help="ledger of held-out tasks observed across sweeps (default: ledger.json beside"
        " the --out folder)",
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sweep",
        help="run measure -> freeze -> held-out -> score headless, in the real page",
        description="Serve the built site, start headless Chromium, load the model through the"
        " page's consent dialog and run the whole protocol in the page (or, --backend native,"
        " the same protocol in this process with onnxruntime); writes trace.json,"
        " predictions.json and run.json into --out (see docs/sweep.md).",
    )
    sweep_options(p)
    p.set_defaults(func=cmd_sweep)
