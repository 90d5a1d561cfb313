"""Native thread pools pinned to a job's threads."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest
from threadpoolctl import threadpool_info

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.threads import THREAD_ENV_VARS, limit_threads, read_ahead, thread_env


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_limit_threads_pins_and_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    before_cpu = pa.cpu_count()
    with limit_threads(1):
        assert all(os.environ[k] == "1" for k in THREAD_ENV_VARS)
        assert pa.cpu_count() == 1
        assert all(n == 1 for n in blas_threads())
    assert os.environ["OMP_NUM_THREADS"] == "7" and "MKL_NUM_THREADS" not in os.environ
    assert pa.cpu_count() == before_cpu


def test_pin_threads_in_a_worker_process() -> None:
    code = (
        "import numpy, pyarrow as pa\n"
        "from threadpoolctl import threadpool_info\n"
        "from mimic_deid.core.threads import pin_threads\n"
        "pin_threads(1)\n"
        "print(pa.cpu_count(), max([p['num_threads'] for p in threadpool_info()] or [1]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV_VARS}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["1", "1"]


def test_thread_env_and_bad_counts() -> None:
    assert thread_env(2) == dict.fromkeys(THREAD_ENV_VARS, "2")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError) as err:
            thread_env(bad)
        assert str(err.value) == f"threads: expected a positive integer, got {bad!r}"


def test_read_ahead_keeps_the_order_and_raises_where_the_reader_failed() -> None:
    def batches():
        yield "first"
        yield "second"
        raise InputDataError("CHARTEVENTS.csv.gz: cannot read the CSV data: bad block")

    got = []
    with pytest.raises(InputDataError) as info:
        for batch in read_ahead(batches()):
            got.append(batch)
    assert got == ["first", "second"]
    assert str(info.value) == "CHARTEVENTS.csv.gz: cannot read the CSV data: bad block"


def test_job_threads_follow_the_cores_given() -> None:
    """Every core --cores gives (issue 47); the cluster default without it; a bad count named."""
    from mimic_deid.core.threads import CLUSTER_THREADS, job_threads

    assert [job_threads(n) for n in (1, 2, 16, 96)] == [1, 2, 16, 96]
    assert job_threads(None) == CLUSTER_THREADS == 8
    for bad in (0, -2, 2.0, True):
        with pytest.raises(ConfigError) as err:
            job_threads(bad)
        assert str(err.value) == f"--cores: expected a positive integer, got {bad!r}"


def _where(i: int) -> tuple[int, int]:
    import threading

    return i * i, os.getpid(), threading.get_ident()


def test_map_tasks_gives_the_results_in_task_order_in_processes_or_threads() -> None:
    from functools import partial

    from mimic_deid.core.threads import map_tasks

    tasks = [partial(_where, i) for i in range(6)]
    costs = [1.0, 5.0, 2.0, 0.5, 3.0, 4.0]
    alone = map_tasks(tasks, threads=1)
    spread = map_tasks(tasks, threads=2, costs=costs)
    shared = map_tasks(tasks, threads=2, costs=costs, shared=True)
    assert [r[0] for r in alone] == [r[0] for r in spread] == [r[0] for r in shared]
    assert [r[0] for r in alone] == [0, 1, 4, 9, 16, 25]
    assert {r[1] for r in alone} == {r[1] for r in shared} == {os.getpid()}
    assert os.getpid() not in {r[1] for r in spread}  # worker processes
    import threading

    assert threading.get_ident() not in {r[2] for r in shared}  # threads of this process
