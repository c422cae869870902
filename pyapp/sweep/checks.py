"""The end-of-sweep checks: both documents against exports/, and re-derived exactly by the one
re-derivation every reader uses (`pyapp.audit.verdict.audit`: the same mismatches as
`reproduce` and the page's Open a trace, and whether every held-out task was observed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyapp.audit import audit
from pyapp.host import EXPORTS
from pyapp.records import read_document


def validate(document: Any, schema_name: str) -> list[str] | None:
    """Schema errors (first ten) of a document; None when jsonschema is not installed."""
    try:
        import jsonschema  # the `test` extra: without it the schema check is skipped
    except ImportError:
        return None
    schema = read_document(EXPORTS / schema_name)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(document), key=str)
    return [f"{list(e.absolute_path)}: {e.message}" for e in errors[:10]]


def check_files(out: Path) -> dict[str, Any]:
    """Validate trace.json and predictions.json against exports/ and re-derive both."""

    trace = read_document(out / "trace.json")
    predictions = read_document(out / "predictions.json")
    checks: dict[str, Any] = {}
    trace_errors = validate(trace, "trace.schema.json")
    if trace_errors is None:
        checks["schema"] = "skipped: jsonschema is not installed (pip install jsonschema)"
    else:
        prediction_errors = validate(predictions, "predictions.schema.json") or []
        checks["schema"] = {"trace.json": trace_errors, "predictions.json": prediction_errors}
    result = audit(trace, predictions_json=predictions)
    rerun = result.rerun.mismatches if result.rerun is not None else ()
    mismatches = [str(m) for m in result.trace_mismatches + rerun]
    prediction_mismatches = [str(m) for m in result.predictions_mismatches or ()]
    if result.predictions_other_run is not None:
        prediction_mismatches.append(result.predictions_other_run)
    if result.derive_error is not None:
        prediction_mismatches.append(f"the predictions cannot be derived: {result.derive_error}")
    checks["reproduce"] = {"trace.json": mismatches, "predictions.json": prediction_mismatches}
    checks["exact"] = not mismatches and not prediction_mismatches
    checks["incomplete"] = list(result.incomplete)
    schema_ok = isinstance(checks["schema"], str) or not any(checks["schema"].values())
    checks["ok"] = schema_ok and checks["exact"] and not result.incomplete
    return checks


def report_checks(checks: dict[str, Any], trace: dict[str, Any]) -> None:
    schema = checks["schema"]
    if isinstance(schema, str):
        print(f"schema: {schema}")
    else:
        for name, errors in schema.items():
            kind = "trace" if name == "trace.json" else "predictions"
            if errors:
                print(f"schema: {name} INVALID against exports/{kind}.schema.json:")
                for error in errors:
                    print(f"  {error}")
            else:
                print(f"schema: {name} valid against exports/{kind}.schema.json")
    for name, mismatches in checks["reproduce"].items():
        if mismatches:
            print(f"reproduce: {name}: {len(mismatches)} mismatch(es)")
            for mismatch in mismatches[:20]:
                print(f"  MISMATCH {mismatch}")
        elif name == "trace.json":
            print(
                f"reproduce: ok: {len(trace.get('tasks', []))} tasks and "
                f"{len(trace.get('trials', []))} trials re-derived exactly"
            )
        else:
            print("reproduce: ok: every number in predictions.json re-derived exactly")
    for line in checks.get("incomplete") or ():
        print(f"reproduce: INCOMPLETE: {line}")


def report_scores(predictions: dict[str, Any]) -> None:
    for result in predictions.get("conditions", []):
        frozen = result["frozen"]
        scores = result["scores"]

        def fmt(value: Any) -> str:
            return "—" if value is None else f"{value:.3f}"

        print(
            f"  {frozen['profile']['condition']:<17} profile {frozen['sha256'][:12]}  "
            f"held-out n={scores['n']}  Brier(final, proxy) {fmt(scores['brier_final_proxy'])}  "
            f"Brier(all steps) {fmt(scores['brier_all_steps'])}"
        )
