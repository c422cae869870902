"""Python's per-trial path made cheaper (issue 22 §3, bench/trial_python.py) without changing
a byte: `to_json` and `canonical` keep a leaf field without a call, and a sweep binds the
same provenance object once (`Sweep.bind`, `Sweep.run_under`). Each optimisation is checked
against what it replaces: the straightforward implementations below (the code before it),
over generated values and over whole synthetic sweeps; a sweep's trials (their JSON lines
and chain hashes) at a fixed seed and a fixed clock hash to the digest the code before gave.
No timing is asserted (the bench prints the figures)."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from asyncrun import run
from hypothesis import given, settings
from hypothesis import strategies as st

from pyapp.errors import PhaseError
from pyapp.experiment import Sweep, freeze, phases, run_phase
from pyapp.records import (
    VIRTUAL_CLOCK,
    chain,
    clock,
    current_load_id,
    identity_sha256,
    to_json,
    trace,
    trial,
)
from pyapp.synthetic import SyntheticAdapter, parse_spec
from pyapp.tasks import TaskParams

# ---- the straightforward implementations (the code before the fast paths) ----------------


def reference_to_json(value: object) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: reference_to_json(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, (list, tuple)):
        return [reference_to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): reference_to_json(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(type(value).__name__)


def reference_canonical(value: object) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if kind is float:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            optional = f.metadata.get("optional_on_read") and f.default is not dataclasses.MISSING
            if optional and item == f.default:
                continue
            out[f.name] = reference_canonical(item)
        return out
    if isinstance(value, (list, tuple)):
        return [reference_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): reference_canonical(v) for k, v in value.items()}
    return reference_to_json(value)


def reference_text(value: object) -> str:
    canonical = reference_canonical(value)
    return json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# ---- generated values -------------------------------------------------------------------


class Level(enum.IntEnum):
    LOW = 1


class Tag(enum.StrEnum):
    A = "a"


@dataclass(frozen=True)
class Record:
    """A record with a field added later (left out of the canonical form at its default)."""

    value: Any
    items: tuple[Any, ...]
    later: Any = field(default=None, metadata={"optional_on_read": True})


leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.sampled_from([0.0, -0.0, 2.0, 1e300, -3.5, Level.LOW, Tag.A])
    | st.text(max_size=8)
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=4)
        | st.builds(Record, inner, st.lists(inner, max_size=3).map(tuple), inner | st.none())
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_to_json_and_the_canonical_text_are_those_of_the_straightforward_walk(value) -> None:
    assert json.dumps(to_json(value)) == json.dumps(reference_to_json(value))
    assert chain.canonical_text(value) == reference_text(value)


def test_an_integral_float_field_is_hashed_as_an_integer_and_a_default_left_out() -> None:
    record = Record(value=2.0, items=(3.0, True, 1, Level.LOW), later=None)
    assert chain.canonical_text(record) == '{"items":[3,true,1,1],"value":2}'
    assert (
        json.dumps(to_json(record)) == '{"value": 2.0, "items": [3.0, true, 1, 1], "later": null}'
    )
    assert chain.canonical_text(Record(0.5, (), later=-0.0)) == (
        '{"items":[],"later":0,"value":0.5}'
    )


# ---- whole sweeps -----------------------------------------------------------------------

FIXED = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


class FixedClock(datetime):
    """`datetime` whose `now` is always FIXED: a sweep's timestamps without the wall clock."""

    @classmethod
    def now(cls, tz: Any = None) -> FixedClock:  # type: ignore[override]
        return cls.fromtimestamp(FIXED.timestamp(), tz)


def synthetic_sweep(structure: str, seed: int) -> Sweep:
    """measure → freeze → held-out with a synthetic model on its virtual clock, as `simulate`."""
    adapter = SyntheticAdapter(parse_spec(structure), seed)
    sweep = Sweep(
        params=TaskParams(seed=seed),
        conditions=("supplied-program", "model-only", "model-program", "controlled-chain"),
        model=adapter.provenance,
        run_id=f"test-{seed}",
        clock=VIRTUAL_CLOCK,
    )

    async def both() -> None:
        with clock.using(adapter.clock.now_ns):
            await run_phase(sweep, "measure", adapter, before_trial=adapter.begin_trial)
            freeze(sweep)
            await run_phase(sweep, "heldout", adapter, before_trial=adapter.begin_trial)

    run(both())
    return sweep


@pytest.mark.parametrize(("structure", "seed"), [("size-dependent", 1729), ("correlated", 7)])
def test_every_record_of_a_sweep_reads_as_the_straightforward_walk_reads_it(
    structure, seed
) -> None:
    sweep = synthetic_sweep(structure, seed)
    records = [*sweep.trials, *sweep.freezes, *sweep.interruptions, *sweep.model.loads]
    assert len(sweep.trials) > 50
    for record in [*records, sweep.trace()]:
        assert to_json(record) == reference_to_json(record)
        assert json.dumps(to_json(record)) == json.dumps(reference_to_json(record))
        assert chain.canonical_text(record) == reference_text(record)
    assert chain.chain_mismatches(sweep.trace(), required=True) == ([], None)


# trace/4: each frozen profile records its run's terms (the chain protocol), so the held-out
# trials' `prev_sha256` (the freeze's hash) moved; every trial's own fields are the bytes the
# code before the fast paths gave (checked field by field when the digest was renewed).
TRIALS_DIGEST = "7845fcebad2fc251e23ba36012a64f4cd259d6a331204753f794d514571df123"


def test_a_sweeps_trials_at_a_fixed_seed_and_clock_are_the_bytes_they_were(monkeypatch) -> None:
    """The trials' JSON lines and chain hashes of a synthetic sweep (seed 1729, every
    timestamp fixed) hash to the digest the code before the fast paths gave."""
    for module in (phases, trial, trace):
        monkeypatch.setattr(module, "datetime", FixedClock)
    first = synthetic_sweep("size-dependent", 1729)
    lines = [json.dumps(to_json(t), ensure_ascii=False) for t in first.trials]
    hashes = [chain.sha256_of(t) for t in first.trials]
    digest = hashlib.sha256("\n".join(lines + hashes).encode("utf-8")).hexdigest()
    assert first.created_at == "2026-12-02T12:00:00+00:00"
    assert digest == TRIALS_DIGEST


# ---- binding the model once -------------------------------------------------------------


def test_binding_the_same_provenance_again_takes_nothing_new_and_compares_nothing(
    monkeypatch,
) -> None:
    adapter = SyntheticAdapter(parse_spec("size-dependent"), 1729)
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=adapter.provenance)
    sweep.bind(adapter.provenance)
    bound, ran_under = sweep.model, sweep.run_under()
    assert ran_under == (current_load_id(bound), identity_sha256(bound))
    compared: list[object] = []
    monkeypatch.setattr(phases, "identity_difference", lambda *a: compared.append(a) or [])
    monkeypatch.setattr(phases, "identity_sha256", lambda m: compared.append(m) or "")
    for _ in range(3):
        sweep.bind(adapter.provenance)
        assert sweep.run_under() == ran_under
    assert compared == [] and sweep.model is bound


def test_a_new_provenance_or_a_model_changed_elsewhere_is_bound_again() -> None:
    """What binding once must not hide: a reload's new load record, another model refused."""
    adapter = SyntheticAdapter(parse_spec("size-dependent"), 1729)
    sweep = Sweep(params=TaskParams(), conditions=("model-only",), model=adapter.provenance)
    sweep.bind(adapter.provenance)
    first = sweep.run_under()
    load = dataclasses.replace(
        sweep.model.loads[-1], load_id=2, sequence=None, prev_sha256=None, setup_ms=9.0
    )
    reloaded = dataclasses.replace(adapter.provenance, loads=(*adapter.provenance.loads, load))
    sweep.bind(reloaded)
    assert len(sweep.model.loads) == len(adapter.provenance.loads) + 1
    assert sweep.run_under() == (2, first[1]) != first
    other = dataclasses.replace(reloaded, model_id="another/model")
    with pytest.raises(PhaseError) as refused:
        sweep.bind(other)
    assert refused.value.code == "model_changed"
    sweep.model = dataclasses.replace(sweep.model, loads=sweep.model.loads[:1])
    sweep.bind(reloaded)  # the model changed since: bound again, the load taken again
    assert [load.load_id for load in sweep.model.loads] == [1, 2]
    assert sweep.run_under()[0] == 2
