"""Pin a job's native thread pools (BLAS, OpenMP, Arrow) to the threads it was given.

A rule declares ``threads: n``; NumPy's BLAS, scikit-learn's OpenMP and Arrow's CPU pool
otherwise start one thread per core each, which oversubscribes a shared machine when jobs or
worker processes run side by side (a competing process made the utility step 4-10x slower).
Snakemake exports ``OMP_NUM_THREADS`` and friends for a rule's own process; worker processes
and benchmark scripts are pinned here. Uses ``threadpoolctl`` for libraries already loaded and
the environment variables for libraries loaded later and for child processes.

:func:`map_tasks` spreads a job's independent tasks over its threads: one worker process per
thread, each pinned to one native thread.

:func:`job_threads` is the one place that says how many threads a rule that can use several
cores declares: every core Snakemake's ``--cores`` gives the run (issue 47), so that the same
workflow uses a 2-core laptop and a 16-core server. Results never depend on it: every
parallel path splits its work into units fixed by the data and the config and draws each
unit's randomness from its own generator.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from typing import Any

import pyarrow as pa
from threadpoolctl import threadpool_limits

from mimic_deid.core.errors import ConfigError

#: The environment variables the BLAS/OpenMP libraries read when they load.
THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "BLIS_NUM_THREADS",
)


#: The threads of a multi-threaded rule when Snakemake is given no ``--cores`` (a cluster run
#: through an executor plugin, where each job asks the scheduler for its threads): the fixed
#: cap the rules had before issue 47. ``--max-threads N`` or ``--set-threads RULE=N`` change it.
CLUSTER_THREADS = 8


def job_threads(cores: int | None) -> int:
    """The threads a rule that can use several cores declares (``threads:`` in the rules).

    Parameters
    ----------
    cores : int or None
        Snakemake's ``--cores`` (``workflow.resource_settings.cores``; ``all`` is already the
        machine's core count there); None where the run has none (a cluster executor, or a
        dry run without ``--cores``).

    Returns
    -------
    int
        ``cores``, or :data:`CLUSTER_THREADS` without it. Snakemake caps a job's threads at
        ``--cores`` and ``--max-threads`` in any case.
    """
    if cores is None:
        return CLUSTER_THREADS
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise ConfigError(f"--cores: expected a positive integer, got {cores!r}")
    return cores


def thread_env(threads: int) -> dict[str, str]:
    """The environment variables that pin a child process's native pools to ``threads``."""
    return dict.fromkeys(THREAD_ENV_VARS, str(_check(threads)))


def _check(threads: int) -> int:
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ConfigError(f"threads: expected a positive integer, got {threads!r}")
    return threads


def pin_threads(threads: int) -> None:
    """Pin this process's native pools to ``threads`` for the rest of its life.

    Meant as the ``initializer`` of worker processes (``threads=1`` when the rule's threads
    are spread over workers) and for the start of a benchmark script.
    """
    os.environ.update(thread_env(threads))
    threadpool_limits(limits=threads)
    pa.set_cpu_count(threads)
    pa.set_io_thread_count(max(threads, 1))


@contextlib.contextmanager
def limit_threads(threads: int) -> Iterator[None]:
    """Within the block, this process's native pools use at most ``threads`` threads; the
    environment and Arrow's pool sizes are restored afterwards."""
    saved_env = {k: os.environ.get(k) for k in THREAD_ENV_VARS}
    saved_cpu, saved_io = pa.cpu_count(), pa.io_thread_count()
    os.environ.update(thread_env(threads))
    pa.set_cpu_count(threads)
    pa.set_io_thread_count(max(threads, 1))
    try:
        with threadpool_limits(limits=threads):
            yield
    finally:
        pa.set_cpu_count(saved_cpu)
        pa.set_io_thread_count(saved_io)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def map_tasks(
    tasks: Sequence[Callable[[], Any]],
    *,
    threads: int = 1,
    costs: Sequence[float] | None = None,
    on_done: Callable[[int], None] | None = None,
    shared: bool = False,
) -> list[Any]:
    """``[task() for task in tasks]``, in this process, in ``threads`` worker processes or, with
    ``shared``, on ``threads`` threads of this process.

    The tasks must be independent and draw randomness only from generators they carry (see
    :mod:`mimic_deid.core.seeding`): the results are then the same whatever ``threads`` is and in
    whatever order the tasks run.

    Parameters
    ----------
    tasks : sequence of callables without arguments
        Picklable when ``threads > 1`` (e.g. ``functools.partial`` of a module-level function).
    threads : int
        The job's threads (>= 1). With more than one (and more than one task), that many worker
        processes run the tasks, each with its native pools pinned to one thread.
    costs : sequence of float, optional
        Expected cost of each task; with workers, tasks start in decreasing cost (ties: list
        order), so that a long task does not start last. Default: list order.
    on_done : callable, optional
        ``on_done(i)`` in this process when task ``i`` has finished (progress).
    shared : bool
        Run the tasks on ``threads`` threads of this process instead of worker processes:
        for tasks that share large read-only arrays (pickling them to a worker per task would
        cost more than the work) and spend their time in native code that releases the GIL
        (BLAS products, NumPy's element-wise loops). The caller pins the native pools to one
        thread (:func:`limit_threads`), as a worker process pins its own.

    Returns
    -------
    list
        The tasks' results, in ``tasks`` order.
    """
    threads = _check(threads)
    if costs is not None and len(costs) != len(tasks):
        raise ValueError(f"map_tasks: {len(costs)} costs for {len(tasks)} tasks")
    results: list[Any] = [None] * len(tasks)
    if threads == 1 or len(tasks) < 2:
        for i, task in enumerate(tasks):
            results[i] = task()
            if on_done is not None:
                on_done(i)
        return results
    order = (
        range(len(tasks)) if costs is None else sorted(range(len(tasks)), key=lambda i: -costs[i])
    )
    workers = min(threads, len(tasks))
    pool_of = (
        ThreadPoolExecutor(max_workers=workers)
        if shared
        else ProcessPoolExecutor(max_workers=workers, initializer=pin_threads, initargs=(1,))
    )
    with pool_of as pool:
        # Submitted lazily, a few ahead of the workers, so that the parent never holds the
        # pickled arguments of every task at once.
        pending: dict[Any, int] = {}
        queue = iter(order)
        for i in queue:
            pending[pool.submit(tasks[i])] = i
            if len(pending) >= 2 * workers:
                break
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                i = pending.pop(future)
                results[i] = future.result()
                if on_done is not None:
                    on_done(i)
                nxt = next(queue, None)
                if nxt is not None:
                    pending[pool.submit(tasks[nxt])] = nxt
    return results


def read_ahead(items: Iterator[Any]) -> Iterator[Any]:
    """``items``, with the next one produced in a second thread while the caller works on the
    current one (for producers that release the GIL: Arrow's readers, NumPy gathers): memory
    holds one item more. An error of the producer is raised where its item would have been.
    ``items`` must not yield ``None``."""
    with ThreadPoolExecutor(max_workers=1) as producer:
        ahead = producer.submit(next, items, None)
        while (item := ahead.result()) is not None:
            ahead = producer.submit(next, items, None)
            yield item


__all__ = [
    "CLUSTER_THREADS",
    "THREAD_ENV_VARS",
    "job_threads",
    "limit_threads",
    "map_tasks",
    "pin_threads",
    "read_ahead",
    "thread_env",
]
