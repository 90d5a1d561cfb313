"""Pin a job's native thread pools (BLAS, OpenMP, Arrow) to the threads it was given.

A rule declares ``threads: n``; NumPy's BLAS, scikit-learn's OpenMP and Arrow's CPU pool
otherwise start one thread per core each, which oversubscribes a shared machine when jobs or
worker processes run side by side (a competing process made the utility step 4-10x slower).
Snakemake exports ``OMP_NUM_THREADS`` and friends for a rule's own process; worker processes
and benchmark scripts are pinned here. Uses ``threadpoolctl`` for libraries already loaded and
the environment variables for libraries loaded later and for child processes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pyarrow as pa
from threadpoolctl import threadpool_limits

from mimic_deid.errors import ConfigError

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


__all__ = ["THREAD_ENV_VARS", "limit_threads", "pin_threads", "thread_env"]
