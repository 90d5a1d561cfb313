"""Arrow's memory pool of the streaming stages (mimic_deid.core.memory)."""

from __future__ import annotations

import os
import subprocess
import sys

from mimic_deid.core.memory import COMPACT_POOL_ENV


def test_a_job_started_with_the_pool_environment_allocates_from_jemalloc() -> None:
    """Set before pandas loads Arrow, as the extract and series scripts do."""
    code = (
        "import os; from mimic_deid.core.memory import COMPACT_POOL_ENV, release_memory; "
        "os.environ.update(COMPACT_POOL_ENV); import pandas; import pyarrow as pa; "
        "t = pa.table({'x': list(range(1000))}); release_memory(); "
        "print(pa.default_memory_pool().backend_name)"
    )
    env = {k: v for k, v in os.environ.items() if k not in COMPACT_POOL_ENV}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "jemalloc"  # the pip wheels build it in
