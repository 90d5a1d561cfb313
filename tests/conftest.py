"""The suite's scheduling: the longest test files start first.

The suite runs on every core, one test file per worker (``-n auto --dist loadfile``; one
worker more than the cores was slower, benchmarks/README "Test suite wall time").
pytest-xdist hands out the files with the most tests first, so a long file of one test (the
SLURM run, about 5 minutes of mostly waiting for the scheduler) would run last and alone while
the other workers idle. With xdist loaded (not under ``-p no:xdist``), a plugin moves the files
of :data:`FIRST` to the front of the queue, so they run beside the others.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The tests mirror the package's parts (tests/<part>/test_*.py, docs/architecture.md
# "Layout"); a test module may import the helpers at tests/ or another test module's
# fixtures and data, whatever its folder, so every folder is on the path before collection.
_TESTS = Path(__file__).resolve().parent
sys.path[:0] = [
    str(_TESTS),
    *(str(d) for d in sorted(_TESTS.iterdir()) if d.is_dir() and d.name.isidentifier()),
]

#: Test files that start first, longest first (measured on the 2-core machine);
#: ``test_workflow.py`` builds the session's tiny run; ``test_install.py`` and ``test_resume.py``
#: take it at their end.
FIRST = (
    "tests/workflow/test_slurm.py",
    "tests/workflow/test_workflow.py",
    "tests/workflow/test_demo_preset.py",
    "tests/workflow/test_install.py",
    "tests/workflow/test_resume.py",
)


class _LongestFirst:
    """The xdist hook, registered only when xdist is there (its hook is unknown otherwise)."""

    def pytest_xdist_make_scheduler(self, config, log):
        from xdist.scheduler import LoadFileScheduling

        class LongestFirst(LoadFileScheduling):
            def _assign_work_unit(self, node) -> None:
                for scope in reversed(FIRST):
                    if scope in self.workqueue:
                        self.workqueue.move_to_end(scope, last=False)
                super()._assign_work_unit(node)

        if config.getvalue("dist") != "loadfile":
            return None  # another distribution mode: xdist's own scheduler
        return LongestFirst(config, log)


def pytest_configure(config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_LongestFirst(), "mimic-deid-longest-first")
