"""The command line (``python -m pyapp``): its commands (``main``) and ``simulate``
(synthetic models over many seeds, natively). What it shares with the sweep (paths, atomic
writes, the static server) is in ``pyapp.host``, below both."""
