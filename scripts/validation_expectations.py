"""Write docs/validation/expectations.json: the validation's expectations, fixed before any run.

The one writer of that file. For every shipped structure and preset it computes each
seed's expected statistics from the structure's parameters alone
(`pyapp.synthetic.targets.seed_targets`, never a run) and averages them over each named seed
list (`pyapp.synthetic.expectations.SEED_LISTS`); then it runs a pilot on other seeds
(`PILOT`) to measure each statistic's between-seed spread, from which the power of each
check and whether it is descriptive follow. Each seed list is made under its chain protocol
(`LIST_PROTOCOLS`: `ci-extended` under `chain-extended/1`, whose chains also route
determinants and derivatives; every other list under `chain-design/1`), its pilot run under
the same protocol. Review the diff before committing it.

Usage:
    .venv/bin/python scripts/validation_expectations.py --jobs 2          # everything
    .venv/bin/python scripts/validation_expectations.py --structures depth # one, merged in
    .venv/bin/python scripts/validation_expectations.py --lists ci-extended  # the extended list

Everything it computes is synthetic: never model evidence.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import fmean, stdev
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyapp.records import (  # noqa: E402
    CHAIN_STEP,
    DEFAULT_CHAIN_PROTOCOL,
    SyntheticSpec,
    chain_protocol,
)
from pyapp.synthetic import (  # noqa: E402  # noqa: E402  # noqa: E402
    EXPECTATIONS_PATH,
    KIND,
    PILOT,
    PRUNE,
    SEED_LISTS,
    STRUCTURES,
    SeedTargets,
    list_protocol,
    seed_targets,
    shipped,
    validate_structure,
    write_expectations,
)
from pyapp.tasks import GENERATOR_VERSION, preset_params  # noqa: E402

PRESETS = ("design", "calibration-60")


Job = tuple[str, str, tuple[str, ...], bool, str]
"""(structure, preset, seed lists, whether to run the pilot, chain protocol name)."""
CACHE = ROOT / "build" / "validation-targets"
"""Per-seed targets already computed, keyed by the structure's and the target code's hashes
(a convenience: the file written is the same with or without it)."""


def _code_sha() -> str:
    names = ("closed_form.py", "closed_chain.py", "targets.py")
    code = b"".join((ROOT / "pyapp" / "synthetic" / n).read_bytes() for n in names)
    return hashlib.sha256(code).hexdigest()[:16]


def cached_targets(spec: SyntheticSpec, preset: str, seed: int, protocol: str) -> SeedTargets:
    """One seed's targets, chains under the chain protocol version `protocol`."""
    version = "" if protocol == DEFAULT_CHAIN_PROTOCOL.version else f"-{protocol.split('/')[0]}"
    name = f"{spec.structure}-{spec.sha256[:16]}-{_code_sha()}-{preset}{version}-{seed}.json"
    path = CACHE / name
    if path.exists():
        saved = json.loads(path.read_text(encoding="utf-8"))
        return SeedTargets(seed, saved["values"], saved["bounds"], saved["probe_rates"])
    found = seed_targets(spec, preset_params(preset, seed), protocol)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"values": found.values, "bounds": found.bounds, "probe_rates": found.probe_rates}
    path.write_text(json.dumps(record), encoding="utf-8")
    return found


def one(job: Job) -> tuple[str, str, dict[str, Any], dict[str, float] | None, float]:
    """One structure under one preset and chain protocol: expected values per seed list,
    pilot spreads."""
    structure, preset, names, pilot_too, protocol_name = job
    protocol = chain_protocol(protocol_name)
    start = time.perf_counter()
    spec = shipped(structure)
    last = max(SEED_LISTS[name][preset][1] for name in names)
    per_seed = [cached_targets(spec, preset, s, protocol.version) for s in range(1, last + 1)]
    expected: dict[str, Any] = {}
    for name in names:
        lists = SEED_LISTS[name]
        first, end = lists[preset]
        mine = [t for t in per_seed if first <= t.seed <= end]
        stats = sorted(set().union(*(t.values for t in mine)))
        expected[name] = {
            stat: [
                fmean([t.values[stat] for t in mine]),
                fmean([t.bounds.get(stat, 0.0) for t in mine]),
            ]
            for stat in stats
        }
    if not pilot_too:
        return structure, preset, expected, None, time.perf_counter() - start
    pilot_first, pilot_last = PILOT[preset]
    pilot = validate_structure(
        spec,
        preset,
        preset_params(preset),
        range(pilot_first, pilot_last + 1),
        time.perf_counter,
        protocol=protocol,
    )
    spreads = {
        stat: (stdev(values.values()) if len(values) > 1 else 0.0)
        for stat, values in pilot.observed.items()
    }
    return structure, preset, expected, spreads, time.perf_counter() - start


Result = tuple[str, str, dict[str, Any], dict[str, float] | None, float]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes")
    parser.add_argument("--structures", default=",".join(STRUCTURES), help="comma-separated")
    parser.add_argument("--out", default=str(EXPECTATIONS_PATH), help="the file to write")
    parser.add_argument("--lists", default=",".join(SEED_LISTS), help="seed lists to compute")
    parser.add_argument("--no-pilot", action="store_true", help="keep the committed spreads")
    args = parser.parse_args(argv)
    names = [s.strip() for s in args.structures.split(",") if s.strip()]
    out = Path(args.out)
    data: dict[str, Any] = {}
    if out.exists():  # merged: structures not named keep their committed values
        data = json.loads(out.read_text(encoding="utf-8"))
    data.update(
        kind=KIND,
        generated_by="python scripts/validation_expectations.py",
        generator_version=GENERATOR_VERSION,
        chain_protocol=CHAIN_STEP,
        closed_form_prune=PRUNE,
        seed_lists={k: {p: list(v) for p, v in lists.items()} for k, lists in SEED_LISTS.items()},
        pilot={p: list(v) for p, v in PILOT.items()},
        list_protocols={k: list_protocol(k).version for k in SEED_LISTS},
    )
    data.setdefault("structures", {})
    data.setdefault("expected", {})
    data.setdefault("pilot_sd", {})
    for name in list(data["expected"]):
        if name not in SEED_LISTS:
            del data["expected"][name]
    lists = tuple(n.strip() for n in args.lists.split(",") if n.strip())
    protocols = dict.fromkeys(list_protocol(n).name for n in lists)
    jobs: list[Job] = [
        (s, p, tuple(n for n in lists if list_protocol(n).name == name), not args.no_pilot, name)
        for name in protocols
        for s in names
        for p in PRESETS
    ]

    def done(job: Job, result: Result) -> None:
        structure, preset, expected, spreads, seconds = result
        version = chain_protocol(job[4]).version
        data["structures"][structure] = shipped(structure).sha256
        for name, values in expected.items():
            data["expected"].setdefault(name, {}).setdefault(structure, {})[preset] = values
        if spreads is not None:
            pilots = (
                data["pilot_sd"]
                if version == DEFAULT_CHAIN_PROTOCOL.version
                else data.setdefault("protocol_pilot_sd", {}).setdefault(version, {})
            )
            pilots.setdefault(structure, {})[preset] = {
                k: v for k, v in spreads.items() if math.isfinite(v)
            }
        write_expectations(out, data)  # after each: a stopped run keeps what it made
        print(
            f"{structure:<15} {preset:<15} {version:<17} {seconds:.0f} s",
            file=sys.stderr,
            flush=True,
        )

    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for job, result in zip(jobs, pool.map(one, jobs), strict=True):
                done(job, result)
    else:
        for job in jobs:
            done(job, one(job))
    write_expectations(out, data)
    print(f"wrote {out}: review the diff before committing it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
