"""The sweep's options: the command line, what --resume takes from run.json, and the model
chosen from the page's catalogue."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyapp.conditions import ALL_CONDITIONS, chain_capacity_problem
from pyapp.errors import InputError, UsageError
from pyapp.host import param_overrides
from pyapp.protocol import URL_PARAM_NAMES, URL_PARAMS
from pyapp.records import (
    CHAIN_PROTOCOL_NAMES,
    DEFAULT_CHAIN_PROTOCOL,
    chain_protocol,
    fault_errors,
    read_document,
    split_hooks,
    task_params,
)
from pyapp.sweep.errors import SetupError
from pyapp.tasks import DEFAULT_SEED, SEED_LIMIT

BACKENDS = ("webgpu", "wasm", "native")
"""The sweep's backends: the page's two, and native (`pyapp.sweep.native`)."""


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
    """The bundled locally trained reference subject (`pyapp.records.subject`): its
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
    chain_protocol: str = DEFAULT_CHAIN_PROTOCOL.name
    """The controlled chain's protocol (`design` or `extended`); absent from run.json files
    written before it existed, where it reads as `design`."""
    sealed: bool = False
    """`--sealed`: held-out tasks drawn after the freeze from the seed the freezes seal
    (`pyapp.predict.sealing`); run.json records it only when true (absent: unsealed)."""
    study_seal: str | None = None
    """`--study-seal FILE` (absolute): a sealed sweep whose held-out draw uses the study's
    seal in FILE, stopping at its freeze until FILE exists; run.json records it only when
    given."""

    def to_json(self) -> dict[str, Any]:
        return (
            {
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
                "chain_protocol": self.chain_protocol,
            }
            | ({"sealed": True} if self.sealed else {})
            | ({"study_seal": self.study_seal} if self.study_seal else {})
        )


def parse_conditions(text: str | None) -> list[str] | None:
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
    unknown = sorted(set(result) - URL_PARAM_NAMES)
    if unknown:
        known = ", ".join(p.name for p in URL_PARAMS)
        raise UsageError(f"--page-param: the page reads no {', '.join(unknown)} (it reads {known})")
    if "fault" in result:
        bad = fault_errors(result["fault"])
        if bad:
            raise UsageError(f"--page-param fault: {bad[0]}")
    return result


def fault_hooks(text: str) -> list[str]:
    """The hooks of a `fault=` value as recorded (pyapp/records/faults.py)."""
    return split_hooks(text)


def options_from_args(args: argparse.Namespace) -> Options:
    if not args.model:
        raise UsageError("--model is required (e.g. --model fixture)")
    seed = DEFAULT_SEED if args.seed is None else args.seed
    params = sweep_params(args, seed)
    protocol = args.chain_protocol or DEFAULT_CHAIN_PROTOCOL.name
    check_chain_capacity(params, parse_conditions(args.conditions), seed, protocol)
    return Options(
        model=args.model,
        backend=args.backend or "webgpu",
        dtype=args.dtype,
        revision=args.revision,
        seed=seed,
        params=params,
        conditions=parse_conditions(args.conditions),
        model_host=args.model_host,
        model_folder=args.model_folder,
        chromium_flags=list(args.chromium_flag or []),
        page_params=parse_page_params(args.page_param),
        chain_protocol=protocol,
        sealed=bool(getattr(args, "sealed", False) or getattr(args, "study_seal", None)),
        study_seal=_seal_path(getattr(args, "study_seal", None)),
    )


def _seal_path(text: str | None) -> str | None:
    """`--study-seal FILE` as an absolute path (the file need not exist yet)."""
    if text is None:
        return None
    if "\x00" in text or not text.strip():
        raise UsageError("--study-seal: a file path, please")
    return str(Path(text).resolve())


def sweep_params(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    """The task-parameter overrides `--preset NAME` and `--param KEY=VALUE` ask for: the
    preset's first, then each `--param` over it (`pyapp.host.files.param_overrides`, as
    `tasks` and `simulate` take them). run.json records the merged overrides, never the
    preset's name: the rung a run is comes back from its parameters
    (`pyapp.tasks.taskset.preset_of`)."""
    return param_overrides(args.param, seed, getattr(args, "preset", None))


def check_chain_capacity(
    params: dict[str, Any],
    conditions: list[str] | None,
    seed: int,
    protocol: str = DEFAULT_CHAIN_PROTOCOL.name,
) -> None:
    """Refuse (exit 2, naming the parameter) task parameters whose chain routes cannot fit
    the chain protocol's route limits when the controlled chain is among the conditions
    (all by default)."""
    if conditions is not None and "controlled-chain" not in conditions:
        return
    problem = chain_capacity_problem(task_params(seed, params), chain_protocol(protocol))
    if problem is not None:
        raise UsageError(f"--param {problem.message}")


def options_for_resume(args: argparse.Namespace, recorded: Any, where: str) -> Options:
    """The recorded options (checked: `recorded_options_of`); an explicit option that
    disagrees with them is refused."""
    recorded_options = recorded_options_of(recorded, where)
    stored = recorded_options.to_json()
    given: dict[str, Any] = {
        "model": args.model,
        "backend": args.backend,
        "dtype": args.dtype,
        "revision": args.revision,
        "seed": args.seed,
        "params": None
        if args.param is None and getattr(args, "preset", None) is None
        else sweep_params(args, args.seed or 0),
        "conditions": parse_conditions(args.conditions),
        "chain_protocol": args.chain_protocol,
        "sealed": True if getattr(args, "sealed", False) else None,
        "study_seal": _seal_path(getattr(args, "study_seal", None)),
    }
    for key, value in given.items():
        if value is not None and value != stored.get(key):
            raise UsageError(
                f"--resume: --{key.replace('_', '-')} {value!r} differs from the sweep's "
                f"recorded {stored.get(key)!r} (omit it to continue the recorded sweep)"
            )
    return Options(
        model=recorded_options.model,
        backend=recorded_options.backend,
        dtype=recorded_options.dtype,
        revision=recorded_options.revision,
        seed=recorded_options.seed,
        params=recorded_options.params,
        conditions=recorded_options.conditions,
        model_host=args.model_host or recorded_options.model_host,
        model_folder=args.model_folder or recorded_options.model_folder,
        chromium_flags=list(args.chromium_flag or recorded_options.chromium_flags),
        page_params=parse_page_params(args.page_param) or recorded_options.page_params,
        chain_protocol=recorded_options.chain_protocol,
        sealed=recorded_options.sealed,
        study_seal=recorded_options.study_seal,
    )


def bad_recorded(where: str, name: str, problem: str) -> InputError:
    """run.json's recorded option `name` cannot be used (exit 1: bad data)."""
    return InputError("bad_run_file", f"options.{name} {problem}", path=where)


def _text(recorded: dict[str, Any], name: str, where: str, optional: bool = True) -> str | None:
    value = recorded.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > 4096 or "\x00" in value:
        raise bad_recorded(where, name, f"must be a non-empty string, not {str(value)[:40]!r}")
    return value


def _texts(value: Any, name: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad_recorded(where, name, "must be a list of strings")
    return list(value)


def recorded_options_of(recorded: Any, where: str) -> Options:
    """The options run.json recorded, each checked as the command line checks it: the
    seed, the task parameters, the conditions and the fault hooks (`bad_run_file`)."""

    if not isinstance(recorded, dict):
        raise InputError("bad_run_file", "options is not an object", path=where)
    model, backend = _text(recorded, "model", where, False), recorded.get("backend")
    if backend not in BACKENDS:
        raise bad_recorded(
            where, "backend", f"must be webgpu, wasm or native, not {str(backend)[:20]!r}"
        )
    seed = recorded.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < SEED_LIMIT:
        raise bad_recorded(
            where, "seed", f"must be an integer 0 <= seed < 2**64, not {str(seed)[:30]!r}"
        )
    params = recorded.get("params") or {}
    if not isinstance(params, dict):
        raise bad_recorded(where, "params", "must be an object of task parameters")
    items = [f"{key}={json.dumps(value)}" for key, value in params.items()]
    try:
        checked = param_overrides(items, seed)
    except UsageError as error:
        raise bad_recorded(where, "params", f"refused: {error.message}") from None
    conditions = recorded.get("conditions")
    try:
        chosen = (
            None
            if conditions is None
            else parse_conditions(",".join(_texts(conditions, "conditions", where)))
        )
    except UsageError as error:
        raise bad_recorded(where, "conditions", error.message) from None
    page_params = recorded.get("page_params") or {}
    if not isinstance(page_params, dict) or not all(
        isinstance(v, str) for v in page_params.values()
    ):
        raise bad_recorded(where, "page_params", "must be an object of strings")
    if set(page_params) - URL_PARAM_NAMES:
        unknown = ", ".join(sorted(set(page_params) - URL_PARAM_NAMES))
        raise bad_recorded(where, "page_params", f"names no parameter of the page: {unknown}")
    bad = fault_errors(page_params.get("fault", ""))
    if bad:
        raise bad_recorded(where, "page_params.fault", bad[0])
    protocol = recorded.get("chain_protocol", DEFAULT_CHAIN_PROTOCOL.name)
    if protocol not in CHAIN_PROTOCOL_NAMES:
        raise bad_recorded(
            where,
            "chain_protocol",
            f"must be {' or '.join(CHAIN_PROTOCOL_NAMES)}, not {str(protocol)[:20]!r}",
        )
    sealed = recorded.get("sealed", False)
    if not isinstance(sealed, bool):
        raise bad_recorded(where, "sealed", f"must be true or false, not {str(sealed)[:20]!r}")
    study_seal = recorded.get("study_seal")
    if study_seal is not None and (not isinstance(study_seal, str) or not sealed):
        raise bad_recorded(where, "study_seal", "must be a file path, in a sealed sweep")
    assert model is not None
    return Options(
        model=model,
        backend=backend,
        dtype=_text(recorded, "dtype", where),
        revision=_text(recorded, "revision", where),
        seed=seed,
        params=checked,
        conditions=chosen,
        model_host=_text(recorded, "model_host", where),
        model_folder=_text(recorded, "model_folder", where),
        chromium_flags=_texts(recorded.get("chromium_flags") or [], "chromium_flags", where),
        page_params=dict(page_params),
        chain_protocol=protocol,
        sealed=sealed,
        study_seal=study_seal,
    )


def read_catalogue(site: Path) -> dict[str, Any]:
    try:
        catalogue = read_document(site / "models.json")
    except InputError as error:
        raise SetupError("no_catalogue", str(error)) from None
    if not isinstance(catalogue, dict) or not isinstance(catalogue.get("models"), list):
        raise SetupError("no_catalogue", f"{site / 'models.json'}: not a model catalogue")
    if not all(isinstance(entry, dict) for entry in catalogue["models"]):
        raise SetupError("no_catalogue", f"{site / 'models.json'}: an entry is not an object")
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
