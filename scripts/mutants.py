"""Mutation testing of the validation: does bench/validation.py catch one-line bugs?

Each mutant is one line of the code changed — the product, the state-aware predictor, the
Wilson interval, the Brier score, the skill scores' reference, the skill against
climatology, the degenerate flags, profile counting, chain verdicts, costs, the synthetic
structures — in a temporary copy of the code (the working tree is never edited). The
validation (`bench/validation.py`, a committed seed list) runs on the copy, and the mutant
is **killed** when a check is contradicted on it that is not contradicted on the unchanged
copy, or when the validation fails outright; the unit tests are not consulted. Metric
mutants (code that only re-derives numbers from trials) are judged on one shared run: the
unchanged copy's traces, re-derived by the mutated code (`--rederive`). Simulator mutants
run the protocol again. A mutant that can only act under some structures (a structure's own
effect) runs under those. A mutant of the extended chain routes (determinants and
derivatives, routed only under `chain-extended/1`) runs on its own seed list, `ci-extended`,
whose validation runs that protocol, and is judged against that list's unchanged run. An
equivalent mutant (no behaviour can tell it apart) is listed with its reason and not
counted.

Usage:
    .venv/bin/python scripts/mutants.py                  # every mutant, seeds `reduced`;
                                                         # writes docs/validation/mutants.json
    .venv/bin/python scripts/mutants.py --ci --seeds ci  # the named CI subset
    .venv/bin/python scripts/mutants.py --only wilson-z-1,brier-abs --no-write
    .venv/bin/python scripts/mutants.py --only route-operand-last-output --merge
                                                         # its row replaces the recorded one

Exit status 1 when the validation leaves a counted mutant alive.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("pyapp", "interpreter", "prompts")
"""What a mutant's copy holds besides bench/validation.py and the expectations file."""
CI_SHARED = (("independent",), ("design",))
"""The one shared fixed run the CI subset judges its metric mutants on."""
EVERY = (
    "independent",
    "size-dependent",
    "correlated",
    "cancelling",
    "depth",
    "carry",
    "encoding",
    "format",
    "program",
)


@dataclass(frozen=True)
class Mutant:
    """One line changed: `old` (found exactly once in `file`) becomes `new`."""

    name: str
    area: str
    file: str
    old: str
    new: str
    kind: str = "metric"
    """`metric`: judged on the shared run, re-derived; `simulator`: the protocol runs again."""
    structures: tuple[str, ...] = EVERY
    """The structures it runs under (a structure's own effect: that structure)."""
    presets: tuple[str, ...] = ("design", "calibration-60")
    ci: bool = False
    """In the CI subset (tests/test_mutants.py), where a metric mutant is judged on the
    shared run of `CI_SHARED` only, unless it names its own structures."""
    equivalent: str | None = None
    """Why no behaviour can tell it apart (then it is listed, not run, not counted)."""
    seeds: str | None = None
    """Its own committed seed list (one under another chain protocol: `ci-extended`), run
    and judged against that list's unchanged run; None: the run's `--seeds`."""

    @property
    def change(self) -> str:
        """The change on one line (a multi-line one joined with ` ↵ `)."""

        def flat(text: str) -> str:
            return " ↵ ".join(part.strip() for part in text.strip().splitlines())

        return f"`{flat(self.old)}` → `{flat(self.new)}`"


P = "pyapp/predict/"
S = "pyapp/synthetic/"
R = "pyapp/records/synthetic_spec.py"
MUTANTS: tuple[Mutant, ...] = (
    # the ten
    Mutant("product-first-two", "product", P + "forecast.py",
           "    for op in ops:\n        probability *=",
           "    for op in ops[:2]:\n        probability *=",
           ci=True),
    Mutant("product-mean", "product", P + "forecast.py",
           "        probability *= by_op[op].rate or 0.0",
           "        probability = math.fsum(by_op[o].rate or 0.0 for o in ops) / len(ops)"),
    Mutant("chain-all-steps-from-final", "chain verdicts", "pyapp/conditions/route.py",
           "all_steps_correct=completed and all(c.local_correct for c in calls),",
           "all_steps_correct=final is not None and final == task.answer,",
           kind="simulator", structures=("cancelling",), presets=("design",), ci=True),
    Mutant("profile-successes-plus-one", "profile counting", P + "profile.py",
           "successes = sum(1 for t in of_op if t.correct)",
           "successes = sum(1 for t in of_op if t.correct) + 1", ci=True),
    Mutant("state-aware-ignores-size", "state-aware", P + "state_aware.py",
           "a, b, r = (len(str(abs(v))) for v in (step.left, step.right, step.result))",
           "a, b, r = (3 for v in (step.left, step.right, step.result))",
           structures=("size-dependent",), presets=("calibration-60",), ci=True),
    Mutant("depth-disabled", "structures", R,
           "if self.depth is not None and position >= self.depth.from_step:",
           "if False and self.depth is not None and position >= self.depth.from_step:",
           kind="simulator", structures=("depth",), presets=("design",), ci=True),
    Mutant("wilson-z-1", "Wilson", P + "metrics.py",
           "successes: int, trials: int, z: float = Z_95, version: str = METRIC_VERSION",
           "successes: int, trials: int, z: float = 1.0, version: str = METRIC_VERSION",
           ci=True),
    Mutant("brier-abs", "Brier", P + "metrics.py",
           "return math.fsum(e * e for e in errors) / len(probabilities)",
           "return math.fsum(abs(e) for e in errors) / len(probabilities)", ci=True),
    Mutant("profile-drops-last-trial", "profile counting", P + "profile.py",
           "of_op = [t for t in mine if tasks[t.task_id].family == op]",
           "of_op = [t for t in mine if tasks[t.task_id].family == op][:-1]"),
    Mutant("cost-times-1.5", "cost", P + "forecast.py",
           "        return None if any(v is None for v in values) else math.fsum(values)",
           "        return None if any(v is None for v in values) else 1.5 * math.fsum(values)",
           ci=True),
    # more of the same kind
    Mutant("product-of-lower-bounds", "product", P + "forecast.py",
           "        probability *= by_op[op].rate or 0.0",
           "        probability *= by_op[op].wilson_low"),
    Mutant("wilson-old-bounds", "Wilson", P + "metrics.py",
           "    return (0.0 if successes == 0 else low), (1.0 if successes == trials else high)",
           "    return low, high", structures=("carry",), presets=("calibration-60",)),
    Mutant("wilson-narrow-centre", "Wilson", P + "metrics.py",
           "    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)",
           "    centre = p"),
    Mutant("brier-over-n-plus-one", "Brier", P + "metrics.py",
           "return math.fsum(e * e for e in errors) / len(probabilities)",
           "return math.fsum(e * e for e in errors) / (len(probabilities) + 1)"),
    Mutant("skill-reference-off-by-one", "skill", P + "skill.py",
           "    return None if total == 0 else sum(successes) / total",
           "    return None if total == 0 else sum(successes) / (total + 1)"),
    Mutant("skill-reference-counts-trials", "skill", P + "freeze.py",
           "return skill.pooled_rate([o.successes for o in profile.ops], "
           "[o.trials for o in profile.ops])",
           "return skill.pooled_rate([o.trials for o in profile.ops], "
           "[o.trials for o in profile.ops])", ci=True),
    Mutant("skill-climatology-mean-not-sum", "skill against climatology", P + "slices.py",
           "            return h * (k - h) / k if k else 0.0",
           "            return h * (k - h) / (k * k) if k else 0.0", ci=True),
    Mutant("flag-constant-misses-all-right", "degenerate flags", P + "flags.py",
           "    if fig.successes == fig.n:",
           "    if fig.successes == fig.n == 0:",
           structures=("encoding",), ci=True),
    Mutant("cost-error-sign", "cost", P + "metrics.py",
           "    diffs = [p - o for p, o in zip(predicted, observed, strict=True)]",
           "    diffs = [o - p for p, o in zip(predicted, observed, strict=True)]"),
    Mutant("chain-observed-final-as-all-steps", "chain verdicts", P + "predictor.py",
           "    all_steps = trial.chain.all_steps_correct if trial.chain is not None else None",
           "    all_steps = trial.chain.final_correct if trial.chain is not None else None",
           structures=("cancelling", "independent")),
    Mutant("correlation-ignored", "structures", S + "adapter.py",
           'shared = self._uniform("shared", 0) < self.spec.shared_latent',
           'shared = self._uniform("shared", 0) < 0.0',
           kind="simulator", structures=("correlated",), presets=("design",)),
    Mutant("cancellation-ignored", "structures", R,
           "        return self.cancellation.cancel if self.cancellation is not None else 0.0",
           "        return 0.0", kind="simulator", structures=("cancelling",),
           presets=("design",)),
    Mutant("carry-count-plus-one", "structures", R,
           "            factors.append((1.0 - self.carry.p_carry) ** count)",
           "            factors.append((1.0 - self.carry.p_carry) ** (count + 1))",
           kind="simulator", structures=("carry",), presets=("design",)),
    Mutant("size-slope-sign", "structures", R,
           "logit = math.log(p / (1 - p)) + self.size.slope * (larger - self.size.pivot_digits)",
           "logit = math.log(p / (1 - p)) - self.size.slope * (larger - self.size.pivot_digits)",
           kind="simulator", structures=("size-dependent",), presets=("design",)),
    Mutant("encoding-other-side", "structures", R,
           "if self.encoding is not None and encoding == self.encoding.affected:",
           "if self.encoding is not None and encoding != self.encoding.affected:",
           kind="simulator", structures=("encoding",), presets=("design",)),
    Mutant("depth-one-step-late", "structures", R,
           "if self.depth is not None and position >= self.depth.from_step:",
           "if self.depth is not None and position > self.depth.from_step:",
           kind="simulator", structures=("depth",), presets=("design",)),
    Mutant("program-deviation-ignored", "structures", S + "adapter.py",
           'deviates = self._uniform("deviate", index) < self.spec.deviation',
           'deviates = self._uniform("deviate", index) < 0.0',
           kind="simulator", structures=("program",), presets=("design",)),
    Mutant("cost-digits-ignored", "cost", S + "adapter.py",
           "        return self.spec.cost.step_ms + self.spec.cost.digit_ms * digits(value)",
           "        return self.spec.cost.step_ms",
           kind="simulator", structures=("independent",), presets=("design",)),
    Mutant("format-ignored-in-chains", "structures", S + "adapter.py",
           "        if self._unparseable(index):\n            return UNPARSEABLE",
           "        if False:\n            return UNPARSEABLE",
           kind="simulator", structures=("format",), presets=("design",)),
    # the extended chain routes (chain-extended/1: determinants and derivatives), each
    # invisible under the design's protocol, judged on the `ci-extended` list
    Mutant("route-operand-last-output", "extended routes", "pyapp/conditions/route.py",
           '    return registers[name] if kind == "register" else outputs[int(name)]',
           '    return registers[name] if kind == "register" else outputs[-1]',
           kind="simulator", structures=("independent",), presets=("design",),
           seeds="ci-extended", ci=True),
    Mutant("derivative-wrong-register", "extended routes", "pyapp/conditions/route.py",
           '            sources.append(f"register:{entry}")',
           """            sources.append(f"register:{'c2' if entry == 'two' else entry}")""",
           kind="simulator", structures=("independent",), presets=("design",),
           seeds="ci-extended", ci=True),
    Mutant("determinant-unrouted", "extended routes", "pyapp/records/terms.py",
           '    families=(*ROUTED_BY_DESIGN, "triangle_determinant", "cubic_derivative"),',
           '    families=(*ROUTED_BY_DESIGN, "cubic_derivative"),',
           kind="simulator", structures=("independent",), presets=("design",),
           seeds="ci-extended", ci=True),
    Mutant("derivative-unrouted", "extended routes", "pyapp/records/terms.py",
           '    families=(*ROUTED_BY_DESIGN, "triangle_determinant", "cubic_derivative"),',
           '    families=(*ROUTED_BY_DESIGN, "triangle_determinant"),',
           kind="simulator", structures=("independent",), presets=("design",),
           seeds="ci-extended", ci=True),
    # equivalent: listed with their reason, not run
    Mutant("format-draw-renamed", "structures", S + "adapter.py",
           "        if self._unparseable(0):\n            return UNPARSEABLE, cost\n"
           "        counter = [0]\n\n        def evaluate",
           "        if self._unparseable(7):\n            return UNPARSEABLE, cost\n"
           "        counter = [0]\n\n        def evaluate",
           kind="simulator", structures=("format",),
           equivalent="a whole-task reply's format draw keyed 7 instead of 0: another uniform "
           "of the same distribution, independent of every other draw of the trial; no "
           "statistic over trials can tell it apart"),
    Mutant("brier-squares-the-other-way", "Brier", P + "metrics.py",
           "    errors = [p - float(o) for p, o in zip(probabilities, outcomes, strict=True)]",
           "    errors = [float(o) - p for p, o in zip(probabilities, outcomes, strict=True)]",
           equivalent="(o − p)² = (p − o)²: the same Brier score for every input"),
    Mutant("skill-reference-mean-of-rates", "skill", P + "skill.py",
           "    return None if total == 0 else sum(successes) / total",
           "    return None if total == 0 else sum(s / t for s, t in zip(successes, trials, "
           "strict=True)) / len(trials)",
           equivalent="the mean of the ops' rates is the pooled rate when every op has as many "
           "trials as the others, as in every shipped preset"),
)  # fmt: skip


def copy_tree(into: Path) -> None:
    """The code, the bench and the expectations file, copied (the working tree untouched)."""
    for name in COPIED:
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__"))
    (into / "bench").mkdir()
    shutil.copy2(ROOT / "bench" / "validation.py", into / "bench" / "validation.py")
    (into / "docs" / "validation").mkdir(parents=True)
    shutil.copy2(
        ROOT / "docs" / "validation" / "expectations.json",
        into / "docs" / "validation" / "expectations.json",
    )


def apply(mutant: Mutant, into: Path) -> None:
    path = into / mutant.file
    text = path.read_text(encoding="utf-8")
    if text.count(mutant.old) != 1:
        raise SystemExit(f"{mutant.name}: the line to change occurs {text.count(mutant.old)} times")
    path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")


def validate(
    tree: Path, seeds: str, structures: tuple[str, ...], presets: tuple[str, ...], extra: list[str]
) -> tuple[int, list[dict[str, Any]], str]:
    """Run the validation in `tree`: (exit status, verdicts, the last line of stderr)."""
    out = tree / f"verdicts-{time.monotonic_ns()}.json"
    command = [
        sys.executable, str(tree / "bench" / "validation.py"), "--seeds", seeds, "--no-report",
        "--structures", ",".join(structures), "--presets", ",".join(presets), "--json", str(out),
        *extra,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
    verdicts = json.loads(out.read_text()) if out.exists() and done.returncode == 0 else []
    tail = (done.stderr.strip().splitlines() or [""])[-1]
    return done.returncode, verdicts, tail


def judge(
    mutant: Mutant,
    base: Path,
    seeds: str,
    baselines: dict[str, dict[tuple[str, str, str], str]],
    shared: Path,
) -> dict[str, Any]:
    """Run one mutant in its own copy (on its own seed list, if it names one) and say what
    killed it."""
    seeds = mutant.seeds or seeds
    row: dict[str, Any] = {
        "name": mutant.name,
        "area": mutant.area,
        "file": mutant.file,
        "change": mutant.change,
        "kind": mutant.kind,
        "structures": list(mutant.structures),
        "presets": list(mutant.presets),
        "seeds": seeds,
    }
    if mutant.equivalent:
        return {**row, "status": "equivalent", "reason": mutant.equivalent, "killed_by": []}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as folder:
        tree = Path(folder)
        copy_tree(tree)
        apply(mutant, tree)
        extra = ["--rederive", str(shared)] if mutant.kind == "metric" else []
        status, verdicts, tail = validate(tree, seeds, mutant.structures, mutant.presets, extra)
    row["seconds"] = round(time.perf_counter() - start, 1)
    if status != 0:
        return {**row, "status": "killed", "killed_by": [f"the validation fails: {tail}"]}
    baseline = baselines[seeds]
    killed_by = [
        f"{v['structure']} ({v['preset']}) {v['statistic']}"
        for v in verdicts
        if v["verdict"] == "contradicted"
        and baseline.get((v["structure"], v["preset"], v["statistic"])) != "contradicted"
    ]
    status = "killed" if killed_by else "alive"
    return {**row, "status": status, "killed_by": killed_by[:5], "checks_killing": len(killed_by)}


def merged(recorded: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The recorded run with the rows of `new` in place of (or beside) those of the same
    name, in `MUTANTS`' order; `runs` says which rows ran on which seed list."""
    rows = {r["name"]: r for r in recorded.get("mutants", [])}
    rows.update({r["name"]: r for r in new["mutants"]})
    order = {m.name: i for i, m in enumerate(MUTANTS)}
    names = sorted(rows, key=lambda n: order.get(n, len(order)))
    base = recorded.get("runs_base", recorded.get("runs", ""))
    lists = dict(recorded.get("runs_merged", {}))
    for seeds, line in new.get("baselines", {}).items():
        mine = [n for n in names if rows[n].get("seeds") == seeds]
        lists[seeds] = f"{line} (rows of {', '.join(mine)})"
    return {
        "command": recorded.get("command", new["command"]),
        "runs": "; ".join([base, *lists.values()]),
        "runs_base": base,
        "runs_merged": lists,
        "seconds": recorded.get("seconds", 0) + new["seconds"],
        "mutants": [rows[n] for n in names],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="reduced", help="a committed seed list")
    parser.add_argument("--ci", action="store_true", help="only the CI subset")
    parser.add_argument("--only", help="mutant names, comma-separated")
    parser.add_argument("--jobs", type=int, default=1, help="mutants in parallel")
    parser.add_argument("--no-write", action="store_true", help="leave mutants.json alone")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="write only the rows run (with --only): the others stay as recorded",
    )
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if (not args.ci or m.ci)]
    if args.ci:  # metric mutants of every structure: judged on the one shared run
        chosen = [
            replace(m, structures=CI_SHARED[0], presets=CI_SHARED[1])
            if m.kind == "metric" and m.structures == EVERY
            else m
            for m in chosen
        ]
    if args.only:
        names = {n.strip() for n in args.only.split(",")}
        chosen = [m for m in chosen if m.name in names]
    start = time.perf_counter()
    run = [m for m in chosen if not m.equivalent]
    lists = dict.fromkeys([args.seeds, *(m.seeds or args.seeds for m in run)])
    baselines: dict[str, dict[tuple[str, str, str], str]] = {}
    with tempfile.TemporaryDirectory(prefix="mutants-base-") as folder:
        base = Path(folder)
        copy_tree(base)
        shared = base / "shared-run.pickle"
        for seeds in lists:  # the unchanged run of each seed list a mutant runs on
            mine = [m for m in run if (m.seeds or args.seeds) == seeds]
            if not mine:
                continue
            structures = tuple(dict.fromkeys(s for m in mine for s in m.structures))
            presets = tuple(dict.fromkeys(p for m in mine for p in m.presets))
            extra = ["--save-runs", str(shared)] if seeds == args.seeds else []
            status, verdicts, tail = validate(base, seeds, structures, presets, extra)
            if status != 0:
                print(f"the unchanged validation fails ({seeds}): {tail}", file=sys.stderr)
                return 2
            baselines[seeds] = {
                (v["structure"], v["preset"], v["statistic"]): v["verdict"] for v in verdicts
            }
            contradicted = [k for k, v in baselines[seeds].items() if v == "contradicted"]
            print(
                f"baseline `{seeds}`: {len(verdicts)} checks, {len(contradicted)} contradicted "
                f"({time.perf_counter() - start:.0f} s)",
                file=sys.stderr,
            )
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda m: judge(m, base, args.seeds, baselines, shared), chosen))
    for row in rows:
        shown = "; ".join(row["killed_by"][:2]) or row.get("reason", "")
        print(f"{row['status'].upper():10} {row['name']:<32} {shown}")
    alive = [r for r in rows if r["status"] == "alive"]
    counted = [r for r in rows if r["status"] != "equivalent"]
    print(f"\n{len(counted) - len(alive)} of {len(counted)} mutants killed; {len(alive)} alive")
    if not args.no_write:
        contradicted = {
            seeds: sum(1 for v in found.values() if v == "contradicted")
            for seeds, found in baselines.items()
        }
        runs = "; ".join(
            f"seed list `{seeds}`, baseline contradicted: {n}" for seeds, n in contradicted.items()
        )
        record: dict[str, Any] = {
            "command": "python scripts/mutants.py" + (f" --seeds {args.seeds}"),
            "runs": runs,
            "seconds": round(time.perf_counter() - start),
            "mutants": rows,
        }
        path = ROOT / "docs" / "validation" / "mutants.json"
        if args.merge and path.exists():
            record["baselines"] = {
                seeds: f"seed list `{seeds}`, baseline contradicted: {n}"
                for seeds, n in contradicted.items()
            }
            record = merged(json.loads(path.read_text(encoding="utf-8")), record)
        path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 1 if alive else 0


if __name__ == "__main__":
    raise SystemExit(main())
