"""A subprocess that checks matrix plans one at a time, under a memory limit (issue 39).

    python tests/planworker.py       (cwd: the repository; PYTHONPATH: the repository)

It limits its own address space (`resource.RLIMIT_AS`, 1 GiB by default; argv[1] in bytes
overrides), imports the command line, prints `ready`, then reads one JSON line per plan —
`{"text": PLAN_TEXT}` — and runs `python -m pyapp matrix PLAN --out DIR --dry-run` in this
process on it (`pyapp.cli.main.main`), answering one JSON line: the exit status, stdout's
first lines and stderr. A traceback is answered as `{"crash": TEXT}`. The caller bounds
each plan's time (it waits for the answer) and sees a death (memory) as the pipe's end.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import sys
import tempfile
import traceback
from pathlib import Path

ADDRESS_SPACE_BYTES = 1024**3


def check(text: str, folder: Path) -> dict[str, object]:
    from pyapp.cli.main import main

    plan = folder / "plan.toml"
    plan.write_text(text, encoding="utf-8", errors="surrogatepass")
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["matrix", str(plan), "--out", str(folder / "out"), "--dry-run"])
    except BaseException:  # the answer is the traceback itself
        return {"crash": traceback.format_exc()[-4000:]}
    return {
        "code": code,
        "plan": str(plan),
        "stdout": out.getvalue()[:2000],
        "stderr": err.getvalue()[:4000],
    }


def serve() -> None:
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else ADDRESS_SPACE_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import pyapp.cli.main  # noqa: F401 (imported once, before the first plan)

    print("ready", flush=True)
    for line in sys.stdin:
        with tempfile.TemporaryDirectory(prefix="plan-") as folder:
            answer = check(json.loads(line)["text"], Path(folder))
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve()
