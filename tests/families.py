"""Test families that need a service or program (PostgreSQL, SLURM, a headless Chromium):
skipped or failed when it is missing.

On a developer machine without it the family skips, with the reason. Where the family must
run (CI sets ``MIMIC_DEID_REQUIRE=postgres,slurm,chromium``), a missing one fails the test
instead, so a run that silently skipped a whole family cannot pass.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_ENV = "MIMIC_DEID_REQUIRE"
FAMILIES = ("postgres", "slurm", "chromium")


def required() -> frozenset[str]:
    """The families named in ``MIMIC_DEID_REQUIRE`` (comma-separated; unknown names refused)."""
    names = {n.strip() for n in os.environ.get(REQUIRE_ENV, "").split(",") if n.strip()}
    unknown = sorted(names - set(FAMILIES))
    if unknown:
        raise pytest.UsageError(
            f"{REQUIRE_ENV}: unknown test family {', '.join(unknown)}; "
            f"expected a comma-separated subset of {', '.join(FAMILIES)}"
        )
    return frozenset(names)


def unavailable(family: str, reason: str) -> NoReturn:
    """Skip a test of ``family`` for ``reason``, or fail it if the family is required."""
    if family in required():
        pytest.fail(
            f"the {family} tests must run here ({REQUIRE_ENV} names {family}) but cannot: {reason}",
            pytrace=False,
        )
    pytest.skip(reason)
