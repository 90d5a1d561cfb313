"""The same bytes whatever ``--cores`` (issue 47).

The rules that can use several cores take every core ``--cores`` gives (``WIDE_THREADS``,
:func:`mimic_deid.core.threads.job_threads`): the synthetic copy's writer threads, the
extraction's parsing threads and inflate thread, the series' worker processes, each method's
classes and the LDA's points over worker processes, and the cross-release pairs over threads. None of it may change
a result byte. The reference is the session's tiny run (``conftest.tiny_run``, at
``--cores 2``). Here the tiny config runs up to every de-identification, the codes stage's
LDA, the utility tables and the cross-release pairing (as targets: synthesize, extract,
cohort, series, duration classes, Mondrian, the three methods of both releases, their
releases, attacks and checks, the codes extraction and LDA; not the comparators' other
rules, the tuning tables nor the report) at one core and at more cores than the reference
(the machine's count, at least 3: on a 2-core machine three worker processes share two
cores, which changes the order in which tasks finish, not what they compute). Every file
the run writes under ``results/`` and ``resources/`` is compared; none is excluded (logs
and Snakemake's timing records live under ``logs/`` and ``.snakemake/``). Its own file, so
that it runs beside the other workflow tests (pytest-xdist hands out whole files).
"""

from __future__ import annotations

import os
import re

import pytest
from workflow_helpers import output_digests, prepare, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

#: Targets besides the utility tables (one per ``ihm48`` point, read from the reference):
#: the cross-release table needs every release, so every de-identification, release and check.
TARGETS = ("results/cross_release.csv", "results/codes/lda.csv")


def job_threads(log: str, rule: str) -> list[int]:
    """The ``threads:`` of every job of ``rule`` in a Snakemake run's output (``rule X:``, or
    ``localrule X:`` at one core; Snakemake leaves the line out for one thread)."""
    return [
        int(m.group(1)) if m else 1
        for block in re.split(r"\n(?=(?:local)?rule \w+:)", log)
        if re.match(rf"(?:local)?rule {rule}:", block)
        for m in [re.search(r"^\s+threads: (\d+)$", block, re.M)]
    ]


@pytest.mark.parametrize("cores", [1, max(3, os.cpu_count() or 1)])
def test_outputs_do_not_depend_on_cores(request, tmp_path, cores):
    reference, _ = request.getfixturevalue("tiny_run")
    want = output_digests(reference)
    utility = sorted(f for f in want if f.endswith("/utility/trust_settings.csv"))
    assert len(utility) == 4, utility  # four methods of the ihm48 release
    config = prepare(tmp_path)
    proc = snakemake(tmp_path, "--cores", str(cores), *TARGETS, *utility, config=config)
    log = proc.stdout + proc.stderr
    # the multi-threaded rules really ran on every core given
    wide = {
        "synthesize": 1,
        "extract": 1,
        "series": 1,
        "deidentify": 8,
        "codes_lda": 1,
        "pair_releases": 1,
    }
    for rule, jobs in wide.items():
        assert job_threads(log, rule) == [cores] * jobs, (rule, job_threads(log, rule))
    got = output_digests(tmp_path)
    perturbed = [f for f in got if f.endswith("/perturbed.parquet")]
    assert len(perturbed) == 8, perturbed  # four methods, two releases
    assert set(TARGETS) | set(utility) <= set(got)
    assert sorted(set(got) - set(want)) == []
    assert [f for f in sorted(got) if got[f] != want[f]] == []
