"""Order of the test files: the longest ones first.

The suite runs on every core, one test file per worker (``-n auto --dist loadfile``), and a
worker takes the files in collection order. A long file collected last (the SLURM run, about
8 minutes of mostly waiting for the scheduler) would run alone at the end while the other
workers idle; started first, it runs beside the rest (benchmarks/README, "Test suite wall
time"). Order within a file is kept.
"""

from __future__ import annotations

#: Test files by how early they start (the longest first, measured on the 2-core machine).
FIRST = ("test_slurm.py", "test_demo_preset.py", "test_workflow.py")


def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))
