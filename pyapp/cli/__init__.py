"""The command line (``python -m pyapp``): its commands and the parser (``main``), the
argument types and option groups they share (``arguments``), ``schema`` (every generated
file), ``sweep`` (the sweep's options, handed to ``pyapp.sweep``) and ``simulate``
(synthetic models over many seeds, natively). What it shares with the sweep (paths, atomic
writes, the static server) is in ``pyapp.host``, below both."""
