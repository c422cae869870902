"""The command line (``python -m pyapp``): its commands (``main``) and the static server
(``serve``)."""
