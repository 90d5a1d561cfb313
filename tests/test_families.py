"""A service-backed test family skips on a developer machine and fails where it is required."""

from __future__ import annotations

import pytest
from families import REQUIRE_ENV, required, unavailable


def test_missing_service_skips_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception) as info:
        unavailable("postgres", "PostgreSQL test server not reachable (host=x): refused")
    assert str(info.value) == "PostgreSQL test server not reachable (host=x): refused"


def test_missing_service_fails_when_the_family_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "postgres, slurm")
    with pytest.raises(pytest.fail.Exception) as info:
        unavailable("slurm", "`sinfo` not found")
    assert str(info.value) == (
        "the slurm tests must run here (MIMIC_DEID_REQUIRE names slurm) but cannot: "
        "`sinfo` not found"
    )


def test_other_families_still_skip_when_one_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "postgres")
    with pytest.raises(pytest.skip.Exception):
        unavailable("slurm", "`sinfo` not found")


def test_unknown_family_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "postgres,mysql")
    with pytest.raises(pytest.UsageError) as info:
        required()
    assert str(info.value) == (
        "MIMIC_DEID_REQUIRE: unknown test family mysql; "
        "expected a comma-separated subset of postgres, slurm, chromium"
    )
