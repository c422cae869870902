"""Record types and what builds them, at the bottom of `pyapp`'s layers: JSON helpers and
record bases (``base``), the trace document and its generated schema (``trace``), a trial's
records and the one trial builder ``new_trial`` (``trial``), the trace's schema versions and
the upgrade of older traces (``trace_versions``), the model contract's records and the
scripted adapter (``model``: ``Caps``, ``Completion``, ``ModelAdapter``, provenance), the
clock (``clock``), prompt rendering (``prompts``, templates in ``prompts/``), task
parameters from JSON (``params``), the reference subject's identity (``subject``), a
synthetic model's specification (``synthetic_spec``), documents read under input limits
(``documents``: the one bounded reader of every input file), the one writer of every
document (``writer``), the kind of a document, checked by every reader and writer
(``kinds``), the fault-injection grammar (``faults``), the evidence labels (``evidence``),
the hash chain over a sweep's records (``chain``), what a freeze commits to besides the
profile (``frozen``), the terms a run is measured under — the chain protocols and trace/4's
one record of terms (``terms``) — and a sweep as it is stored between checkpoints, with the
one assembly of its texts into a trace (``stored``). Re-deriving a record is above the
runners, in ``pyapp.verify``."""
