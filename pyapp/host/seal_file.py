"""The study-level seal's file (`study-seal/1`): what `matrix` writes once every run of one
task seed in a study is frozen (`DIR/seals/seed-N.json`), and what `sweep --study-seal` and
`simulate --study-seal` read to draw their held-out tasks from it.

It holds the task seed, the members (each run's cell and its own seal) and the draw seed
they give (`pyapp.predict.sealing.study_draw_seed`); reading it checks all three against one
another, so a file whose members were edited is refused rather than drawn from. The file
is a convenience for handing the seal over: each run's trace records the seal it drew from
(`HeldoutDraw.study_seal`), and `reproduce` checks it there.
"""

from __future__ import annotations

from pathlib import Path

from pyapp.errors import InputError, RecordError
from pyapp.host.files import write_atomically
from pyapp.predict import study_draw_seed, study_seal_of
from pyapp.records import (
    JSON,
    SealMember,
    StudySeal,
    document_text,
    from_json,
    read_kind,
    to_json,
)

SEAL_SCHEMA = "study-seal/1"
SEAL_KIND = "composition-lab-study-seal"


def seal_document(seed: int, seal: StudySeal, made_at: str) -> dict[str, JSON]:
    """The file's JSON for `seal` of task seed `seed`."""
    return {
        "schema_version": SEAL_SCHEMA,
        "kind": SEAL_KIND,
        "seed": seed,
        "derivation": seal.derivation,
        "members": to_json(seal.members),
        "draw_seed": study_draw_seed(seed, seal.members),
        "made_at": made_at,
    }


def write_seal(path: Path, seed: int, seal: StudySeal, made_at: str) -> None:
    """Write the seal file (atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, document_text(seal_document(seed, seal, made_at), "study-seal"))


def read_seal(path: Path, seed: int) -> StudySeal | None:
    """The study seal in `path` for task seed `seed`; None while the file does not exist (the
    study has not made it yet). A file of another kind, of another seed, or whose draw seed
    is not the one its members give is refused (`InputError`, naming the file)."""
    if not path.exists():
        return None
    data = read_kind(path, "study-seal")  # another kind of document: refused, named
    where = str(path)
    if not isinstance(data, dict) or data.get("schema_version") != SEAL_SCHEMA:
        raise InputError("bad_study_seal", f"not a {SEAL_SCHEMA} document", path=where)
    if data.get("seed") != seed:
        raise InputError(
            "bad_study_seal",
            f"the seal of task seed {data.get('seed')!r}, not of this run's seed {seed}",
            path=where,
        )
    try:
        members = from_json(tuple[SealMember, ...], data.get("members"), "$.members")
        seal = study_seal_of(members)
    except (RecordError, ValueError) as error:
        raise InputError("bad_study_seal", f"members: {error}", path=where) from None
    if seal.members != members or data.get("derivation") != seal.derivation:
        raise InputError(
            "bad_study_seal", "members not ordered by cell or another derivation", path=where
        )
    if data.get("draw_seed") != study_draw_seed(seed, members):
        raise InputError(
            "bad_study_seal", "its draw seed is not the one its members give", path=where
        )
    return seal
