"""The command line (``python -m pyapp``): its commands (``main``), what they share with the
sweep (``common``: paths, usage errors, atomic writes, ``--param``), ``simulate``
(synthetic models over many seeds, natively) and the static server (``serve``)."""
