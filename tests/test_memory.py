"""Arrow's memory pool of the streaming stages (mimic_deid.memory)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mimic_deid.memory import release_memory, use_compact_pool


@pytest.fixture
def restore_pool():
    before = pa.default_memory_pool()
    yield
    pa.set_memory_pool(before)


@pytest.mark.usefixtures("restore_pool")
def test_the_streaming_stages_allocate_from_jemalloc_where_arrow_has_it() -> None:
    try:
        pa.jemalloc_memory_pool()
        expected = "jemalloc"
    except NotImplementedError:
        expected = pa.default_memory_pool().backend_name
    assert use_compact_pool() == expected
    table = pa.table({"x": pa.array(range(100_000))})
    assert pa.default_memory_pool().backend_name == expected
    assert pa.default_memory_pool().bytes_allocated() >= table.nbytes
    del table
    release_memory()  # callable whatever the backend
