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
