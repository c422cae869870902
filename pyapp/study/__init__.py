"""`python -m pyapp study DIR`: a matrix folder's answer — the only writer of `study.json` and
`study.html` (docs/study.md).

    cells.py    the matrix's cells, each re-derived from its trace (the report's reader), its
                preset matched from its parameters, its identity (what it may be pooled with)
    build.py    groups of poolable cells, their slices (condition × rung × family, pooled
                over a ladder's rungs) and answers, from `pyapp.predict.slices` / `flags`
    record.py   study.json's records (generated schema: exports/study.schema.json)
    render.py   study.html (self-contained, the report's plots) and the Markdown
    command.py  the command: read, build, write atomically, print the answer

A matrix's `summary.json` stays per cell and states no answer; the study states it, and only
as far as its numbers go.
"""
