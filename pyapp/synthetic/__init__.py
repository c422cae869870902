"""Synthetic validation models: model adapters whose error structure is known by
construction. Their records (error sources composed as data) and step rule are in
``pyapp.records.synthetic_spec``, below the model records that carry them;
``language`` reads structure files (TOML or JSON) and the ``NAME:key=value`` shorthand of the
shipped structures (``structures/*.toml``) through one validator; ``adapter`` answers every
condition as a model would; ``simulate`` runs the page's protocol natively over many seeds;
``rerun`` re-executes a synthetic trace from the specification it records (every
completion compared: `reproduce` always does).
The validation of the instrument: ``validation`` (what a run measured, per seed, read from
its documents), ``closed_form`` and ``closed_chain`` (each trial's exact success probability
and cost from the structure's parameters alone, by enumerating the model's finite choices),
``targets`` (each seed's expected statistics from them), ``expectations`` (the committed
expectations file and the words stated before the numbers), ``checks`` (bands, verdicts,
power), ``report`` (docs/validation.md, generated whole;
its figures are drawn by ``pyapp.report.figures`` with the page's calibration plot).

Their output is labelled ``evidence: "synthetic"`` everywhere: it validates the instrument
and is never model evidence."""

from pyapp.synthetic.adapter import SyntheticAdapter, synthetic_provenance
from pyapp.synthetic.checks import Check, interval, power_at, result_checks, seeds_for_80, verdict
from pyapp.synthetic.closed_form import PRUNE
from pyapp.synthetic.expectations import (
    EXPECTATIONS_PATH,
    KIND,
    PILOT,
    SEED_LISTS,
    SKILL_OUTCOMES,
    list_protocol,
    plans,
    read_expectations,
    skill_expected,
    write_expectations,
)
from pyapp.synthetic.language import (
    KEYS,
    STRUCTURES,
    is_file_argument,
    parse_spec,
    read_spec_file,
    shipped,
    shipped_data,
    spec_from_data,
    structure_notes,
    synthetic_model_schema,
    written_name,
)
from pyapp.synthetic.report import across_seeds_lines, findings, render_markdown, report_skeleton
from pyapp.synthetic.rerun import synthetic_rerun
from pyapp.synthetic.simulate import (
    SeedRun,
    SimulationSummary,
    run_seed,
    run_seed_to_freeze,
    run_seeds,
    summarise_runs,
)
from pyapp.synthetic.targets import SeedTargets, seed_targets
from pyapp.synthetic.validation import (
    POOLED,
    StructureResult,
    pooled_skill,
    seed_differences,
    validate_structure,
)

__all__ = [
    "EXPECTATIONS_PATH",
    "KEYS",
    "KIND",
    "PILOT",
    "POOLED",
    "PRUNE",
    "SEED_LISTS",
    "SKILL_OUTCOMES",
    "STRUCTURES",
    "Check",
    "SeedRun",
    "SeedTargets",
    "SimulationSummary",
    "StructureResult",
    "SyntheticAdapter",
    "across_seeds_lines",
    "findings",
    "interval",
    "is_file_argument",
    "list_protocol",
    "parse_spec",
    "plans",
    "pooled_skill",
    "power_at",
    "read_expectations",
    "read_spec_file",
    "render_markdown",
    "report_skeleton",
    "result_checks",
    "run_seed",
    "run_seed_to_freeze",
    "run_seeds",
    "seed_differences",
    "seed_targets",
    "seeds_for_80",
    "shipped",
    "shipped_data",
    "skill_expected",
    "spec_from_data",
    "structure_notes",
    "summarise_runs",
    "synthetic_model_schema",
    "synthetic_provenance",
    "synthetic_rerun",
    "validate_structure",
    "verdict",
    "write_expectations",
    "written_name",
]
