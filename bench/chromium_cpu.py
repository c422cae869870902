"""CPU used by the Chromium processes a bench started, from Linux /proc (bench/generation.py,
bench/wasm_loops.py): per process, in total, and per thread name. Every function returns None
or an empty table where /proc cannot tell."""

from __future__ import annotations

import os
from pathlib import Path


def read_stat(path: Path) -> tuple[str, list[str]] | None:
    """A /proc stat file: the process or thread name and the fields after it (ppid at 1,
    utime and stime at 11 and 12); None when it is gone."""
    try:
        text = path.read_text()
    except OSError:
        return None
    return text[text.index("(") + 1 : text.rindex(")")], text.rsplit(")", 1)[1].split()


def chromium_processes() -> dict[int, int] | None:
    """CPU ticks (user + system) used so far by every Chromium process this bench started
    (descendants of this process, Linux /proc), by pid; None where /proc cannot tell."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").is_file():
        return None
    table: dict[int, tuple[int, str, int]] = {}
    for entry in proc.iterdir():
        stat = read_stat(entry / "stat") if entry.name.isdigit() else None
        if stat is not None:
            name, fields = stat
            table[int(entry.name)] = (int(fields[1]), name, int(fields[11]) + int(fields[12]))
    found: dict[int, int] = {}
    todo, seen = [os.getpid()], set()
    while todo:
        parent = todo.pop()
        for pid, (ppid, name, cpu) in table.items():
            if ppid == parent and pid not in seen:
                seen.add(pid)
                todo.append(pid)
                if "chrom" in name.lower():
                    found[pid] = cpu
    return found


def chromium_cpu_seconds() -> float | None:
    """CPU seconds used so far by every Chromium process this bench started; None where /proc
    cannot tell. CPU time is what the browser's side cost, whatever else the shared machine
    was running."""
    found = chromium_processes()
    return None if found is None else sum(found.values()) / os.sysconf("SC_CLK_TCK")


def chromium_threads() -> dict[str, int]:
    """CPU ticks used so far by the threads of this bench's Chromium processes, summed by
    thread name (`DedicatedWorker`: the page's workers; `ThreadPoolForeg`: V8's background
    work such as garbage collection and optimising compiles; ...); empty without /proc."""
    ticks: dict[str, int] = {}
    for pid in chromium_processes() or {}:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            stat = read_stat(task / "stat")
            if stat is not None:
                name, fields = stat
                ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])
    return ticks
