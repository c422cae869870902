"""`python -m pyapp simulate`: the protocol, natively, over many seeds, with a synthetic model.

    python -m pyapp simulate --model size-dependent --seeds 1..200 --out runs/sim
    python -m pyapp simulate --model correlated:rho=0.9 --seeds 1..50 --preset calibration-60 \\
        --out runs/sim-corr
    python -m pyapp simulate --model my-structure.toml --seeds 1..20 --out runs/mine
    python -m pyapp simulate --model size-dependent --seeds 1..20 --chain-protocol extended \
        --out runs/sim-extended
    python -m pyapp simulate --model size-dependent --seeds 1..20 --sealed --out runs/sim-sealed

`--model` is a shipped structure's shorthand (`NAME` or `NAME:key=value,...`) or a structure
file (TOML or JSON, `pyapp.synthetic.language`; schema `exports/synthetic-model.schema.json`).
A bad shorthand or a missing file is bad usage (exit 2); a file whose content is refused is
bad data (exit 1); either way one line names the file or the key.

Writes `DIR/seed-N/trace.json` and `DIR/seed-N/predictions.json` per seed (compact JSON,
each re-derivable by `python -m pyapp reproduce`; `--summary-only` skips them) and
`DIR/summary.json` across seeds, and prints the summary and the trials per second.
Everything it writes is labelled `synthetic`: never model evidence. `--sealed` runs every
seed sealed: its held-out tasks are drawn after the freeze from the seed the freezes seal
(`pyapp.predict.sealing`, generator `tasks/2`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pyapp.cli.arguments import PRESET_HELP, chain_protocol_option, sealed_option
from pyapp.conditions import MODEL_CONDITIONS, chain_capacity_problem
from pyapp.errors import InputError, PhaseError, UsageError
from pyapp.host import (
    check_output_folder,
    output_folder,
    read_seal,
    task_params_of,
    write_atomically,
)
from pyapp.matrix import CELL_ENTRIES, claim_folder
from pyapp.predict import heldout_draw_seed
from pyapp.records import (
    ChainProtocol,
    Condition,
    SpecError,
    SyntheticSpec,
    chain_protocol,
    document_text,
)
from pyapp.synthetic import (
    SeedRun,
    SimulationSummary,
    is_file_argument,
    parse_spec,
    read_spec_file,
    run_seed,
    run_seed_to_freeze,
    run_seeds,
    summarise_runs,
)
from pyapp.tasks import TaskParams

MAX_SEEDS = 100_000


def parse_seeds(text: str) -> range:
    """`A..B` (inclusive) or a single seed `A`."""
    first, sep, last = text.partition("..")
    try:
        low = int(first)
        high = int(last) if sep else low
    except ValueError:
        raise UsageError(f"--seeds expects A..B (integers), got {text!r}") from None
    if low < 0 or high < low or high - low + 1 > MAX_SEEDS:
        raise UsageError(f"--seeds {text!r}: need 0 <= A <= B and at most {MAX_SEEDS} seeds")
    return range(low, high + 1)


def parse_conditions(text: str | None) -> tuple[Condition, ...]:
    if text is None:
        return MODEL_CONDITIONS
    allowed = ("supplied-program", *MODEL_CONDITIONS)
    chosen = tuple(c.strip() for c in text.split(",") if c.strip())
    bad = [c for c in chosen if c not in allowed]
    if bad or not chosen:
        raise UsageError(f"--conditions: choose from {', '.join(allowed)} (got {text!r})")
    return chosen  # type: ignore[return-value]


def print_summary(summary: SimulationSummary) -> None:
    print(f"synthetic model {summary.model} (NOT model evidence): {len(summary.seeds)} seeds")
    for condition in summary.conditions:
        for name, s in condition.predictors.items():
            print(
                f"  {condition.condition:<17} {name:<12}"
                f" Brier final {_fmt(s.mean_brier_final_proxy)}"
                f"  all-steps {_fmt(s.mean_brier_all_steps)}"
                f"  cost error {_fmt(s.mean_cost_error_ms, 1)} ms"
                f"  (|error| {_fmt(s.mean_cost_absolute_error_ms, 1)} ms)"
            )


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def model_of(text: str) -> SyntheticSpec:
    """`--model`: a structure file, or a shipped structure's shorthand."""
    if is_file_argument(text):
        if not Path(text).is_file():
            raise UsageError(f"--model {text!r}: no such structure file")
        return read_spec_file(text)  # bad content: InputError, exit 1
    try:
        return parse_spec(text)
    except SpecError as error:
        raise UsageError(f"--model: {error}") from None


def cmd_simulate(args: argparse.Namespace) -> int:
    spec = model_of(args.model)
    seeds = parse_seeds(args.seeds)
    if args.study_seal is not None and len(seeds) != 1:
        raise UsageError("--study-seal: one seed only (the seal is of one task seed)")
    conditions = parse_conditions(args.conditions)
    args.seed = seeds[0]
    params = task_params_of(args)
    protocol = chain_protocol(args.chain_protocol)
    problem = chain_capacity_problem(params, protocol) if "controlled-chain" in conditions else None
    if problem is not None:
        raise UsageError(problem.message)
    out = check_output_folder(args.out, "--out")
    # a matrix's or a sweep's folder is refused before any work: nothing of theirs is replaced
    # (a matrix cell's folder is this run's: the cell's lock and log are the matrix's)
    own = frozenset({"summary.json", *CELL_ENTRIES, *(f"seed-{seed}" for seed in seeds)})
    claim_folder(out, "summary.json", "simulation", own, "a matrix or sweep")
    done = [0]
    start = time.perf_counter()

    def on_seed(run: SeedRun) -> None:
        if not args.summary_only:
            folder = out / f"seed-{run.seed}"
            write_files(
                folder,
                {
                    "trace.json": document_text(run.trace, "trace", compact=True),
                    "predictions.json": document_text(run.predictions, "predictions", compact=True),
                },
            )
        done[0] += 1
        if done[0] % 10 == 0 or done[0] == len(seeds):
            rate = done[0] / max(time.perf_counter() - start, 1e-9)
            print(f"\r{done[0]}/{len(seeds)} seeds ({rate:.1f} seeds/s)", end="", file=sys.stderr)

    if args.study_seal is not None:
        return simulate_under_study_seal(args, spec, params, conditions, protocol, out, on_seed)
    runs = run_seeds(spec, params, seeds, conditions, on_seed, protocol, sealed=args.sealed)
    elapsed = time.perf_counter() - start
    print(file=sys.stderr)
    summary = summarise_runs(spec, runs)
    write_files(out, {"summary.json": document_text(summary, "simulation-summary")})
    print_summary(summary)
    print(
        f"{summary.trials} trials in {elapsed:.1f} s: {summary.trials / elapsed:.0f} trials/s "
        f"-> {out}"
    )
    return 0


def simulate_under_study_seal(
    args: argparse.Namespace,
    spec: SyntheticSpec,
    params: TaskParams,
    conditions: tuple[Condition, ...],
    protocol: ChainProtocol,
    out: Path,
    on_seed: Callable[[SeedRun], None],
) -> int:
    """`--study-seal FILE` (one seed): while FILE does not exist, measure and freeze, write
    the frozen trace and stop (exit 3: `matrix` makes the seal from every run of the seed);
    once it exists, the whole run again (the synthetic model is deterministic: the same
    profiles), its held-out tasks drawn from the study's seal."""
    seal = read_seal(Path(args.study_seal), params.seed)
    if seal is None:
        trace = run_seed_to_freeze(spec, params, conditions, protocol)
        write_files(out / f"seed-{params.seed}", {"trace.json": document_text(trace, "trace")})
        print(
            f"stopped at the freeze: every profile of seed {params.seed} is frozen (own seal "
            f"{heldout_draw_seed(trace)[:16]}…); run again once the study's seal "
            f"{args.study_seal} exists",
            file=sys.stderr,
        )
        return 3
    try:
        run = run_seed(spec, params, conditions, protocol, True, seal)
    except PhaseError as error:
        raise InputError(error.code, error.message, path=str(args.study_seal)) from None
    on_seed(run)
    print(file=sys.stderr)
    summary = summarise_runs(spec, [run])
    write_files(out, {"summary.json": document_text(summary, "simulation-summary")})
    print_summary(summary)
    print(f"{summary.trials} trials under the study seal {args.study_seal} -> {out}")
    return 0


def write_files(folder: Path, texts: dict[str, str]) -> None:
    """Write `texts` into `folder` atomically; a failure (a file in the way, permissions, a
    full disk) is one line naming the file (`unwritable_file`, exit 1)."""
    for name, text in texts.items():
        try:
            write_atomically(folder / name, text)
        except OSError as error:
            raise InputError(
                "unwritable_file",
                f"cannot write: {error.strerror or error}",
                path=str(folder / name),
            ) from None


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "simulate",
        help="run the protocol natively over many seeds with a synthetic model (validation)",
        description="Measure -> freeze -> held-out -> score, natively, with a synthetic model "
        "of known error structure (a shipped one or a structure file, docs/validation.md); "
        "synthetic output is never model evidence (see docs/validation.md).",
    )
    p.add_argument(
        "--model",
        required=True,
        help="NAME, NAME:key=value,... or a structure FILE (.toml/.json; pyapp.synthetic.language)",
    )
    p.add_argument("--seeds", required=True, help="task seeds A..B (inclusive)")
    p.add_argument(
        "--param", action="append", metavar="KEY=VALUE", help="override a task parameter"
    )
    p.add_argument("--preset", metavar="NAME", help=PRESET_HELP)
    p.add_argument("--conditions", metavar="C1,C2", help="default: the three model conditions")
    chain_protocol_option(p)
    sealed_option(p)
    p.add_argument("--out", type=output_folder, required=True, help="output folder")
    p.add_argument(
        "--summary-only", action="store_true", help="write summary.json only, no per-seed files"
    )
    p.set_defaults(func=cmd_simulate)
