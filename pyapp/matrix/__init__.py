"""Matrix runs: many models × seeds × presets as one plan (`python -m pyapp matrix`).

    plan.py         the PLAN (TOML) as typed records; generates exports/matrix-plan.schema.json
    check.py        the plan checked whole with bounds (ranges counted, numbers in range,
                    duplicates, lengths) before anything is made; cells' folder names
    cells.py        the plan's cells: the cross product less exclusions, checked, named
    runner.py       one attempt at one cell: `python -m pyapp simulate|sweep` as a subprocess
                    in DIR/cells/NAME/ (resume through the sweep's own --resume); the only
                    code the engines share
    engines.py      local (a thread pool of --jobs cell processes) and ray (a Ray task per cell)
    coordinator.py  the command: check, hold the folder, run the cells to run, record, Ctrl-C
    folder.py       the output folder as a record: one writer (a lock, or --wait), plain
                    entries only (no symlinks), another command's folder refused, atomic
                    writes that merge nothing unread (reusable by `study`)
    cellfiles.py    what each cell's own files say: missing, unfinished, re-derives (cached by
                    their hash) or not; which cell a trace is; a plan that changes a cell refused
    state.py        DIR/matrix.json: every cell's state, attempts, timings, errors, what its
                    files said (atomic; decided from the files, not trusted)
    progress.py     the progress line: done / running / failed / waiting, ETA
    summary.py      DIR/summary.json: a row per cell, pooled rows where pooling is allowed
    report.py       DIR/report.html
    cli.py          the command line of `matrix`

See docs/scale.md.
"""
