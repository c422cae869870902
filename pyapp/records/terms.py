"""The terms a run is measured under besides its task set, conditions and prompts: the
controlled chain's protocol (`ChainProtocol`: which families it routes and one set of
limits for every route of a run), and `RunTerms`, the one record trace/4 added to carry
such terms.

**Chain protocols.** A run chooses one explicitly; the design's is the default everywhere
(its numbers are requirements). Every chain family of a run runs under its protocol's one
limit set; the per-call caps are the same in both.

| protocol | version | families routed | calls | input | output | wall |
|---|---|---|---|---|---|---|
| `design` (default) | `chain-design/1` | primitives, probes, recurrences | 6 | 3,072 | 256 | 90 s |
| `extended` | `chain-extended/1` | those, determinants, derivatives | 7 | 3,584 | 256 | 105 s |

(Route budgets in tokens; each call 512 input and 32 output tokens, 1,024 bytes, 15 s.)

The route of every family is the interpreter's post-order of its reference program
(`pyapp.conditions.route.route_of`), so the protocol only decides *whether* a family is
routed and under which limits; a route over its protocol's limits is refused when the
sweep starts (`pyapp.conditions.route.chain_capacity_problem`), never scored.

**RunTerms: where trace/4's fields go.** One record, written in the trace's run
(`RunInfo.terms`), copied into every freeze (`FreezeRecord.terms`, so the chain and the
profile hash cover it), into each frozen profile of the predictions
(`FrozenProfile.terms`) and into the freeze receipt (`Receipt.terms`); `reproduce` checks
that every copy is the run's. It is null only in documents older than trace/4, which were
all measured under `chain-design/1` (`protocol_of` reads them so).

To add a term later in trace/4 (without another bump): a field on `RunTerms` with a default,
`metadata=ADDED_IN_TRACE_4` (optional on read) and a docstring; then `python -m pyapp
schema`. While it holds its default it is left out of the canonical JSON that the hash
chain, the profile hash and the receipt's fingerprint hash (`pyapp.records.chain`), so a
trace/4 document written before the field existed reads, hashes and reproduces unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from pyapp.records.model import DEFAULT_ROUTE_LIMITS, RouteLimits
from pyapp.records.trace_versions import ADDED_IN_TRACE_4

ChainProtocolName = Literal["design", "extended"]
ChainProtocolVersion = Literal["chain-design/1", "chain-extended/1"]

ROUTED_BY_DESIGN: Final = ("add", "sub", "mul", "affine_recurrence")
"""The families the design's chain routes (isolated primitives, probes, recurrences)."""


@dataclass(frozen=True)
class ChainProtocol:
    """One versioned controlled-chain protocol: the families it routes and its limits."""

    name: ChainProtocolName
    """What a person chooses (`--chain-protocol NAME`, a plan's `chain_protocol`)."""
    version: ChainProtocolVersion
    """What the trace, the freeze and the receipt record."""
    families: tuple[str, ...]
    """The task families it routes; any other is `unsupported`, with zero calls."""
    limits: RouteLimits
    """The one limit set of every route of a run (per call and per route)."""


DESIGN_CHAIN: Final = ChainProtocol(
    name="design",
    version="chain-design/1",
    families=ROUTED_BY_DESIGN,
    limits=DEFAULT_ROUTE_LIMITS,
)
"""The design's chain: 20 of the default 24 tasks routed, at most six calls a route."""

EXTENDED_CHAIN: Final = ChainProtocol(
    name="extended",
    version="chain-extended/1",
    families=(*ROUTED_BY_DESIGN, "triangle_determinant", "cubic_derivative"),
    limits=RouteLimits(
        max_calls=7, max_input_tokens=3_584, max_output_tokens=256, timeout_ms=105_000
    ),
)
"""Every family routed (24 of the default 24 tasks): seven calls, 7 × 512 input tokens,
256 output tokens and 7 × 15 s a route; the per-call caps unchanged."""

CHAIN_PROTOCOLS: Final[dict[str, ChainProtocol]] = {
    p.name: p for p in (DESIGN_CHAIN, EXTENDED_CHAIN)
}
"""Protocol name → protocol (the choices of `--chain-protocol`, the page and a plan)."""
CHAIN_PROTOCOL_NAMES: Final = tuple(CHAIN_PROTOCOLS)
DEFAULT_CHAIN_PROTOCOL: Final = DESIGN_CHAIN


def chain_protocol(name: str) -> ChainProtocol:
    """The protocol called `name` (KeyError naming the choices)."""
    if name not in CHAIN_PROTOCOLS:
        raise KeyError(f"unknown chain protocol {name!r}; known: {', '.join(CHAIN_PROTOCOL_NAMES)}")
    return CHAIN_PROTOCOLS[name]


@dataclass(frozen=True)
class RunTerms:
    """The terms a run was measured under that trace/4 added, in one record (the run's, and
    a copy in every freeze, frozen profile and receipt). A term added later in trace/4 is a
    field here with a default and `ADDED_IN_TRACE_4` (see the module docstring)."""

    chain_protocol: ChainProtocolVersion
    """The controlled chain's protocol version (`chain-design/1`, the default, or
    `chain-extended/1`): which families are routed and the route limits of every chain
    trial of the run."""
    sealed: bool = field(default=False, metadata=ADDED_IN_TRACE_4)
    """True for a sealed run: its held-out tasks are drawn after every profile is frozen,
    from the held-out draw seed the freezes seal (`pyapp.predict.sealing`; generator
    `tasks/2`, the draw in the trace's `draw`); false (the default, and every document
    written before the field) for an unsealed run, whose held-out tasks follow from the
    task seed (`tasks/1`)."""


def terms_for(protocol: ChainProtocol, sealed: bool = False) -> RunTerms:
    """The terms a new run records."""
    return RunTerms(chain_protocol=protocol.version, sealed=sealed)


def is_sealed(terms: RunTerms | None) -> bool:
    """Whether a run's held-out tasks are sealed (false before trace/4)."""
    return terms is not None and terms.sealed


def protocol_of(terms: RunTerms | None) -> ChainProtocol:
    """The chain protocol a run was measured under: its terms' version, or the design's
    for a document older than trace/4 (the only protocol there was)."""
    if terms is None:
        return DESIGN_CHAIN
    for protocol in CHAIN_PROTOCOLS.values():
        if protocol.version == terms.chain_protocol:
            return protocol
    raise KeyError(f"unknown chain protocol version {terms.chain_protocol!r}")
