"""The task set: seeded generation of tasks (``taskset``), the named task sets — calibration
presets and the rungs of difficulty ladders — (``presets``), the exact oracles that confirm
every answer by a different route (``oracles``, ``sympy_oracle``) and the seeded generator
(``rng``)."""
