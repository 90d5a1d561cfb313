"""Arrow's memory pool for the streaming stages (extract, series).

The stages stream bounded pieces (sort ranges, event batches, row groups) through Arrow, each
allocated and freed in turn. With Arrow's default pool (mimalloc in the pip wheels) the freed
pieces stay mapped, so the peak resident memory grows with the size of the pieces seen rather
than with what is live (measured: 752 MB vs 542 MB for the same extraction, 542 vs 372 MB for
the same series job, at 20 M rows); jemalloc returns them to the system. The choice changes no
output, only where memory goes.
"""

from __future__ import annotations

import pyarrow as pa

from mimic_deid.logs import get_logger

log = get_logger(__name__)


def use_compact_pool() -> str:
    """Make jemalloc Arrow's default memory pool when this build has it; return the backend
    in use (``jemalloc``, or the unchanged default where jemalloc is not built in)."""
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:  # an Arrow build without jemalloc: keep its default
        log.debug("jemalloc not available in this Arrow build; keeping the default pool")
    return pa.default_memory_pool().backend_name


def release_memory() -> None:
    """Return the memory Arrow's pool holds but no longer uses to the system (between the
    bounded pieces of a stage)."""
    pa.default_memory_pool().release_unused()


__all__ = ["release_memory", "use_compact_pool"]
