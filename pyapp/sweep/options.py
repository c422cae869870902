"""The sweep's options: the command line, what --resume takes from run.json, and the model
chosen from the page's catalogue."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyapp.cli.common import UsageError, param_overrides
from pyapp.sweep.errors import SetupError


@dataclass(frozen=True)
class ModelChoice:
    """What the Models panel is asked to load."""

    key: str
    """Catalogue key (`fixture`, `smollm2-135m`, ...) or `other` for a free model id."""
    model_id: str
    """Model id as the hub spells it (`fixture/tiny-chat` for the fixture)."""
    revision: str
    """Revision the page loads."""
    fixture: bool
    """The bundled test fixture: the sweep is NOT model evidence."""
    download_mb: float | None
    """Approximate download for the chosen dtype, from the catalogue; None when unknown."""
    licence: str
    """Licence as the catalogue states it."""
    subject: bool = False
    """The bundled locally trained reference subject (`pyapp.conditions.subject`): its
    sweep is evidence about that subject, never about a pretrained LLM."""


@dataclass(frozen=True)
class Options:
    """A sweep's settings; recorded in run.json and taken from it on --resume."""

    model: str
    backend: str
    dtype: str | None
    revision: str | None
    seed: int
    params: dict[str, Any]
    conditions: list[str] | None
    model_host: str | None
    model_folder: str | None
    chromium_flags: list[str]
    page_params: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "backend": self.backend,
            "dtype": self.dtype,
            "revision": self.revision,
            "seed": self.seed,
            "params": self.params,
            "conditions": self.conditions,
            "model_host": self.model_host,
            "model_folder": self.model_folder,
            "chromium_flags": self.chromium_flags,
            "page_params": self.page_params,
        }


def parse_conditions(text: str | None) -> list[str] | None:
    from pyapp.conditions.run import ALL_CONDITIONS

    if text is None:
        return None
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in ALL_CONDITIONS]
    if unknown or not chosen:
        raise UsageError(
            f"--conditions: unknown {', '.join(unknown) or '(empty)'}; "
            f"choose from {','.join(ALL_CONDITIONS)}"
        )
    return chosen


def parse_page_params(items: list[str] | None) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--page-param expects KEY=VALUE, got {item!r}")
        result[key] = value
    if "fault" in result:
        bad = fault_errors(result["fault"])
        if bad:
            raise UsageError(f"--page-param fault: {bad[0]}")
    return result


FAULT_KINDS = ("worker_crash", "reload_fail", "hang", "bad_reply")
"""The page's fault-injection hooks (workers/faults.js, docs/sweep.md#fault-injection)."""


def fault_hooks(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def fault_errors(text: str) -> list[str]:
    """What is wrong with a `fault=KIND@N,...` value (the grammar workers/faults.js reads)."""
    errors = []
    for item in fault_hooks(text):
        kind, at, n = item.partition("@")
        if not at or kind not in FAULT_KINDS or not n.isdigit() or int(n) < 1:
            errors.append(f"{item!r}: expected KIND@N, KIND one of {', '.join(FAULT_KINDS)}")
    return errors


def options_from_args(args: argparse.Namespace) -> Options:
    from pyapp.tasks.taskset import DEFAULT_SEED

    if not args.model:
        raise UsageError("--model is required (e.g. --model fixture)")
    seed = DEFAULT_SEED if args.seed is None else args.seed
    return Options(
        model=args.model,
        backend=args.backend or "webgpu",
        dtype=args.dtype,
        revision=args.revision,
        seed=seed,
        params=param_overrides(args.param, seed),
        conditions=parse_conditions(args.conditions),
        model_host=args.model_host,
        model_folder=args.model_folder,
        chromium_flags=list(args.chromium_flag or []),
        page_params=parse_page_params(args.page_param),
    )


def options_for_resume(args: argparse.Namespace, recorded: dict[str, Any]) -> Options:
    """The recorded options; an explicit option that disagrees with them is refused."""
    given: dict[str, Any] = {
        "model": args.model,
        "backend": args.backend,
        "dtype": args.dtype,
        "revision": args.revision,
        "seed": args.seed,
        "params": None if args.param is None else param_overrides(args.param, args.seed or 0),
        "conditions": parse_conditions(args.conditions),
    }
    for key, value in given.items():
        if value is not None and value != recorded.get(key):
            raise UsageError(
                f"--resume: --{key.replace('_', '-')} {value!r} differs from the sweep's "
                f"recorded {recorded.get(key)!r} (omit it to continue the recorded sweep)"
            )
    return Options(
        model=recorded["model"],
        backend=recorded["backend"],
        dtype=recorded.get("dtype"),
        revision=recorded.get("revision"),
        seed=int(recorded["seed"]),
        params=dict(recorded.get("params") or {}),
        conditions=recorded.get("conditions"),
        model_host=args.model_host or recorded.get("model_host"),
        model_folder=args.model_folder or recorded.get("model_folder"),
        chromium_flags=list(args.chromium_flag or recorded.get("chromium_flags") or []),
        page_params=parse_page_params(args.page_param) or dict(recorded.get("page_params") or {}),
    )


def read_catalogue(site: Path) -> dict[str, Any]:
    try:
        catalogue: dict[str, Any] = json.loads((site / "models.json").read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise SetupError("no_catalogue", f"cannot read {site / 'models.json'}: {error}") from None
    return catalogue


def choose_model(options: Options, catalogue: dict[str, Any]) -> ModelChoice:
    """`fixture`, a catalogue key or model id, or any other hub model id."""
    wanted = options.model
    for entry in catalogue.get("models", []):
        if wanted not in (entry["key"], entry["model_id"]):
            continue
        fixture = entry.get("source") == "bundled-fixture"
        subject = entry.get("source") == "bundled-subject"
        if options.revision not in (None, entry["revision"]) and not (fixture or subject):
            break  # another revision of a catalogue model: load it as "other"
        dtypes = entry.get("dtypes", {}).get(options.backend) or [None]
        dtype = options.dtype or dtypes[0]
        return ModelChoice(
            key=entry["key"],
            model_id=entry["model_id"],
            revision=entry["revision"],
            fixture=fixture,
            download_mb=(entry.get("download_mb") or {}).get(dtype),
            licence=entry.get("licence", "unknown"),
            subject=subject,
        )
    if "/" not in wanted:
        keys = ", ".join(e["key"] for e in catalogue.get("models", []))
        raise UsageError(
            f"--model {wanted!r}: not in the catalogue ({keys}) and not an org/name id"
        )
    return ModelChoice(
        key="other",
        model_id=wanted,
        revision=options.revision or "main",
        fixture=False,
        download_mb=None,
        licence="see the model card",
    )
