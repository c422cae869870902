"""Synthetic validation models: model adapters whose error structure is known by
construction (``spec``), answering every condition as a model would (``adapter``), and the
native driver that runs the page's protocol over many seeds with them (``simulate``), the
validation over many seeds (``validation``) and its report (``report``).

Their output is labelled ``evidence: "synthetic"`` everywhere: it validates the instrument
and is never model evidence."""
