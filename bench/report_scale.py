"""Report scale bench (issue 24): `python -m pyapp report` of a 100,000-trial run.

Makes a run folder whose trace holds `--trials` trials (default 99,999: the supplied-program
control over `primitives_per_op` = (trials - 18) / 3 tasks per op, the most a trace may
hold is 100,000) unless `--folder` names one, then runs the report command in a subprocess
and prints its wall time and CPU time, its peak memory (the child's maximum resident set)
and the size of the HTML it wrote, each beside its goal (under 60 s, under 1 GiB, under
20 MB) as a ratio, with the number of trials the report counted and the machine's load
average before and after (a loaded machine's wall time is not the report's).
Past `pyapp.report.sample.MAX_LISTED_ROWS` rows the report lists counts and a sample; the
report reads trace.json a trial at a time (`pyapp.report.run_folder.stream_trace`).

Prints figures; asserts nothing. Making the trace takes minutes on a busy 2-core machine.

Usage: .venv/bin/python bench/report_scale.py [--trials 99999] [--folder DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S, GOAL_BYTES, GOAL_HTML = 60.0, 1024**3, 20 * 1000**2
OTHER_TASKS = 18  # compositions (6) and encoding probes (12) of the default parameters


def make_folder(folder: Path, trials: int) -> None:
    per_op = max(1, (trials - OTHER_TASKS) // 3)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pyapp",
            "run",
            "--condition",
            "supplied-program",
            "--param",
            f"primitives_per_op={per_op}",
            "--out",
            str(folder / "trace.json"),
        ],
        cwd=ROOT,
        check=True,
    )
    print(f"made {folder / 'trace.json'} in {time.perf_counter() - started:.0f} s", flush=True)


def measure(folder: Path, out: Path) -> tuple[float, float, int, int, int]:
    """(wall s, CPU s, peak bytes of the report process, HTML bytes, exit status): the
    report's own resource use (`os.wait4` on its process), whatever ran before it."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "pyapp", "report", str(folder), "--out", str(out)], cwd=ROOT
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    html = out.stat().st_size if out.exists() else 0
    return wall, cpu, usage.ru_maxrss * 1024, html, child.returncode


def trials_of(report: Path) -> str:
    """The number of trials the report's trial table counts ("99999 trials: ...")."""
    if not report.exists():
        return "?"
    found = re.search(r"<caption>(\d+) trials: ", report.read_text(encoding="utf-8"))
    return f"{int(found[1]):,}" if found else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=99_999)
    parser.add_argument("--folder", type=Path, help="an existing run folder (trace.json)")
    parser.add_argument("--keep", action="store_true", help="keep the folder made")
    args = parser.parse_args()
    made = None
    folder = args.folder
    if folder is None:
        made = Path(tempfile.mkdtemp(prefix="report-scale-"))
        folder = made / "run"
        make_folder(folder, args.trials)
    try:
        load_before = os.getloadavg()
        out = folder.parent / "report.html"
        wall, cpu, peak, html, status = measure(folder, out)
        load_after = os.getloadavg()
        trace_mb = (folder / "trace.json").stat().st_size / 1e6
        print(f"report of {folder} (trace.json {trace_mb:.0f} MB), exit status {status}")
        print(f"  trials       {trials_of(out):>8}    (the report's own count)")
        print(
            "  load average {:.2f} {:.2f} {:.2f} before, {:.2f} {:.2f} {:.2f} after "
            "(1, 5, 15 min; {} CPUs)".format(*load_before, *load_after, os.cpu_count())
        )
        print(
            f"  wall time    {wall:8.1f} s    goal < {GOAL_S:.0f} s     ratio {wall / GOAL_S:.2f}"
        )
        print(
            f"  CPU time     {cpu:8.1f} s    user + system (a busy machine's wall time hides it);"
            f" ratio to the goal {cpu / GOAL_S:.2f}"
        )
        print(
            f"  peak memory  {peak / 1024**2:8.0f} MiB  goal < 1024 MiB  ratio "
            f"{peak / GOAL_BYTES:.2f}"
        )
        print(
            f"  HTML         {html / 1e6:8.1f} MB   goal < 20 MB     ratio {html / GOAL_HTML:.2f}"
        )
    finally:
        if made is not None and not args.keep:
            shutil.rmtree(made, ignore_errors=True)


if __name__ == "__main__":
    main()
