"""The page's Study view (issues 34 and 41): a study folder's `study.json`, opened in the page.

`open_study` reads the document `python -m pyapp study` wrote (its only writer, `pyapp.study`)
and gives the page what it draws, the confirmatory layer first (study/2: the study receipt and
each hypothesis's verdict), then the answer: the study's plain-language answer and flags,
then per group of pooled cells each condition's verdicts (the answers' own: beats climatology
/ fails against climatology / cannot say, and why) and both predictors' reliability diagram
of the slice the answer comes from, drawn by `pyapp.report.plots` (the report's drawing).

The page's Python sits below the study layer (`tests/test_house.py`), so the document's own
records are read here with the one strict reader, `from_json`: each slice's figures as
`pyapp.predict.slices.SliceFigures` and each answer as `pyapp.predict.flags.Answer` — the
records `pyapp.study.record` is made of —, the containers around them (the groups and their
slices) walked by name. A document that is not a study.json is refused in one line.
"""

from __future__ import annotations

from typing import Any

from pyapp.errors import RecordError
from pyapp.predict import ALL_FAMILIES, Answer, SliceFigures
from pyapp.protocol import StudyConditionView, StudyGroupView, StudyOpened, VerdictRow
from pyapp.records import from_json
from pyapp.report import NOT_EVIDENCE_LABELS, RunInputError, calibration_series_svg

KIND = "composition-lab-study"
VERSIONS = ("study/1", "study/2")


def _field(document: dict[str, Any], name: str, kind: type, where: str) -> Any:
    value = document.get(name)
    if not isinstance(value, kind):
        raise RunInputError(f"{where}.{name} must be a {kind.__name__}: this is not a study.json")
    return value


def _texts(document: dict[str, Any], name: str, where: str) -> tuple[str, ...]:
    values = _field(document, name, list, where)
    if not all(isinstance(v, str) for v in values):
        raise RunInputError(f"{where}.{name} must be a list of texts")
    return tuple(values)


def _reliability(fig: SliceFigures, label: str | None) -> str:
    """Both predictors' reliability diagram of one slice (filled: product; hollow:
    state-aware)."""
    c = fig.condition
    series = [(f"{c} · product", c, fig.product.calibration)]
    if fig.state_aware is not None:
        series.append((f"{c} · state-aware", c, fig.state_aware.calibration))
    title = f"Reliability of both predictors — {c}"
    return calibration_series_svg(series, label, by_predictor=True, title=title)


def _condition(
    condition: str, answers: list[Answer], slices: list[SliceFigures], label: str | None
) -> StudyConditionView:
    said = {a.predictor: a for a in answers if a.condition == condition}
    product, aware = said.get("product"), said.get("state-aware")
    first = product or aware
    scope = first.scope if first is not None else None
    leads = [f for f in slices if f.condition == condition and f.family == ALL_FAMILIES]
    lead = next((f for f in leads if f.scope == scope), None)
    return StudyConditionView(
        verdict=VerdictRow(
            condition=condition,
            product=product.verdict if product else "cannot say",
            product_reason=product.reason if product else "no answer in the study",
            state_aware=aware.verdict if aware else None,
            state_aware_reason=aware.reason if aware else None,
        ),
        scope=scope,
        reliability_svg=None if lead is None else _reliability(lead, label),
    )


def _group(group: Any, i: int) -> StudyGroupView:
    where = f"$.groups[{i}]"
    if not isinstance(group, dict):
        raise RunInputError(f"{where} must be an object: this is not a study.json")
    try:
        answers = [
            from_json(Answer, a, f"{where}.answers") for a in _field(group, "answers", list, where)
        ]
        slices = [
            from_json(
                SliceFigures, s.get("figures") if isinstance(s, dict) else None, f"{where}.slices"
            )
            for s in _field(group, "slices", list, where)
        ]
    except RecordError as error:
        raise RunInputError(f"not a study.json this page reads: {error}") from None
    flags = tuple(
        w
        for s in _field(group, "slices", list, where)
        for w in _texts(s, "flags", f"{where}.slices")
    )
    evidence = _field(group, "evidence", str, where)
    label = NOT_EVIDENCE_LABELS.get(evidence)
    conditions = list(dict.fromkeys(a.condition for a in answers))
    return StudyGroupView(
        title=_field(group, "title", str, where),
        evidence=evidence,
        answers=tuple(a.text for a in answers),
        differences=_texts(group, "differences", where),
        flags=flags,
        conditions=tuple(_condition(c, answers, slices, label) for c in conditions),
    )


def _hypothesis(verdict: Any, i: int) -> str:
    """One hypothesis and its verdict in a line (study/2's confirmatory layer)."""
    if not isinstance(verdict, dict):
        raise RunInputError(f"$.hypotheses[{i}] must be an object: this is not a study.json")
    said = verdict.get("verdict") or "no verdict"
    why = f" ({verdict['reason']})" if verdict.get("reason") else ""
    p = verdict.get("p_corrected")
    tested = f"; p = {p:.3g} after correction" if isinstance(p, int | float) else ""
    return (
        f"{verdict.get('id', '?')} ({verdict.get('registration', '?')}): "
        f"{verdict.get('statement', '')} — {said}{why}{tested}"
    )


def open_study(document: Any) -> StudyOpened:
    """What the Study view draws of a study.json (`RunInputError` when it is not one)."""
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise RunInputError("this is not a study.json (its kind is not composition-lab-study)")
    if document.get("schema_version") not in VERSIONS:
        raise RunInputError(
            f"study.json of version {document.get('schema_version')!r}: this page reads "
            f"{', '.join(VERSIONS)}"
        )
    name = document.get("name")
    hypotheses = document.get("hypotheses") or []
    if not isinstance(hypotheses, list):
        raise RunInputError("$.hypotheses must be a list: this is not a study.json")
    receipt = document.get("receipt")
    return StudyOpened(
        receipt=receipt if isinstance(receipt, str) else None,
        hypotheses=tuple(_hypothesis(v, i) for i, v in enumerate(hypotheses)),
        name=name if isinstance(name, str) else None,
        answer=_texts(document, "answer", "$"),
        flags=_texts(document, "flags", "$"),
        cells_done=_field(document, "cells_done", int, "$"),
        cells_planned=_field(document, "cells_planned", int, "$"),
        groups=tuple(_group(g, i) for i, g in enumerate(_field(document, "groups", list, "$"))),
    )
