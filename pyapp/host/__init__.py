"""What the command line and the headless sweep share on the host machine, below both:
``files`` (the repository's paths, the usage error, atomic writes, the ``--param`` parser)
and ``serve`` (the static server of the built site and of a local model hub). A package of
its own so that ``pyapp.sweep`` needs nothing from ``pyapp.cli``, which sits above it."""
