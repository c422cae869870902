"""The two engines: where cells run. Neither schedules anything itself.

    local   a standard-library thread pool of `--jobs` threads, each running one cell at a
            time through the cell runner (`pyapp.matrix.runner.run_cell`), which starts the
            cell's own process: cells run in parallel processes on this machine.
    ray     each cell is one Ray task (`ray.remote`): Ray places it (a WebGPU browser cell
            asks for `num_gpus=1`, a WASM one for `options.cpus_per_browser_cell` CPUs, a
            synthetic one for `options.cpus_per_synthetic_cell`, a native sweep for
            `options.cpus_per_native_cell`) and tries it again, up to
            `options.retries` times, when its worker or node is lost; the retried task is
            the same cell runner, which resumes the cell from its own files.

Both take every job at once and hand back finished attempts; the matrix command
(`pyapp.matrix.coordinator`) records them. Ray is optional (`pip install '.[cluster]'`).
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from pyapp.errors import UsageError
from pyapp.matrix.cells import Cell
from pyapp.matrix.runner import Attempt, Job, run_cell
from pyapp.records import JSON, from_json, to_json

RAY_INSTALL = (
    "--engine ray needs Ray: pip install '.[cluster]' (or pip install ray==2.60.0; "
    "see docs/scale.md)"
)
Finished = tuple[str, Attempt | BaseException]
"""A cell's name and its attempt, or why the engine could not give one."""


def default_jobs() -> int:
    """One cell per core. Measured (bench/matrix.py, README): on 2 cores, 2 jobs ran 8
    fixture browser cells 2.09x and 40 synthetic cells 1.82x faster than 1 job — a browser
    cell waits on its page as much as it computes — so one per two cores would leave half
    the machine idle."""
    return max(1, os.cpu_count() or 1)


class Engine(Protocol):
    def submit(self, jobs: Sequence[Job]) -> None: ...

    def wait(self, timeout: float) -> list[Finished]: ...

    def started(self) -> list[str]: ...

    def outstanding(self) -> int: ...

    def close(self) -> None: ...


class LocalEngine:
    """Cells in parallel processes on this machine, `jobs` at a time."""

    def __init__(self, jobs: int) -> None:
        self.pool = concurrent.futures.ThreadPoolExecutor(jobs, thread_name_prefix="cell")
        self.futures: dict[concurrent.futures.Future[Attempt], str] = {}
        self.begun: queue.SimpleQueue[str] = queue.SimpleQueue()

    def _run(self, job: Job) -> Attempt:
        name = str(job.cell["name"])
        if not Path(job.stop_file).exists():
            self.begun.put(name)
        return run_cell(job)

    def submit(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            self.futures[self.pool.submit(self._run, job)] = str(job.cell["name"])

    def wait(self, timeout: float) -> list[Finished]:
        done, _ = concurrent.futures.wait(self.futures, timeout, concurrent.futures.FIRST_COMPLETED)
        out: list[Finished] = []
        for future in done:
            name = self.futures.pop(future)
            error = future.exception()
            out.append((name, error if error is not None else future.result()))
        return out

    def started(self) -> list[str]:
        names = []
        while not self.begun.empty():
            names.append(self.begun.get())
        return names

    def outstanding(self) -> int:
        return len(self.futures)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _ray_task(job_json: dict[str, JSON]) -> dict[str, JSON]:
    """The Ray task: one attempt at one cell (plain JSON in and out)."""
    attempt = run_cell(from_json(Job, job_json))
    result: dict[str, JSON] = to_json(attempt)
    return result


class RayEngine:
    """Each cell a Ray task, on a cluster (`address`) or a local instance."""

    def __init__(self, address: str | None, retries: int, cpus: tuple[float, float, float]) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError(RAY_INSTALL) from None
        self.ray = ray
        owned = not ray.is_initialized()
        if owned:
            if address:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(include_dashboard=False, log_to_driver=False)
        self.task = ray.remote(max_retries=retries, retry_exceptions=False)(_ray_task)
        self.cpus_browser, self.cpus_synthetic, self.cpus_native = cpus
        self.refs: dict[Any, str] = {}
        self.owned = owned

    def gpus(self) -> float:
        resources: dict[str, float] = self.ray.cluster_resources()  # type: ignore[no-untyped-call]
        return float(resources.get("GPU", 0))

    def resources(self, cell: Cell) -> dict[str, float]:
        if cell.kind == "synthetic":
            return {"num_cpus": self.cpus_synthetic}
        if cell.backend == "native":
            return {"num_cpus": self.cpus_native}
        if cell.backend == "webgpu":
            return {"num_cpus": self.cpus_browser, "num_gpus": 1}
        return {"num_cpus": self.cpus_browser}

    def submit(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            cell: Cell = from_json(Cell, job.cell)
            options = self.task.options(**self.resources(cell))
            self.refs[options.remote(to_json(job))] = cell.name

    def wait(self, timeout: float) -> list[Finished]:
        if not self.refs:
            return []
        ready, _ = self.ray.wait(list(self.refs), num_returns=1, timeout=timeout)
        if ready:
            more, _ = self.ray.wait(list(self.refs), num_returns=len(self.refs), timeout=0)
            ready = list(dict.fromkeys([*ready, *more]))
        out: list[Finished] = []
        for ref in ready:
            name = self.refs.pop(ref)
            try:
                out.append((name, from_json(Attempt, self.ray.get(ref))))
            except Exception as error:  # retries exhausted: the worker or node was lost
                out.append((name, error))
        return out

    def started(self) -> list[str]:
        return []  # Ray says nothing when a task starts: queued and running are one count

    def outstanding(self) -> int:
        return len(self.refs)

    def close(self) -> None:
        """Leaves Ray running when the caller started it; shuts down an instance we began."""
        if self.owned:
            self.ray.shutdown()
