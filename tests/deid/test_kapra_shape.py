"""Seed-shape checks of KAPRA and PC-KAPRA (seed 001 §4, Fig. 4.1) on synthetic heart rate.

The seed publishes no numeric table and its ECGFiveDays data is not available here, so the
shapes of Fig. 4.1 are checked on the heart rate of the synthetic ``ihm48`` release
(1500 synthetic subjects, ~670 series of 46 h) at the seed's setting k = 10, P = 5, PAA 10,
SAX level 10, varying one parameter at a time:

- KAPRA's TPL does not depend on k (the P-groups are formed before k enters);
- TIVL increases with k for both methods, and with P below k (PC-KAPRA averaged over k-means
  seeds, as the seed attributes its wiggles to the clustering's randomness);
- PC-KAPRA's TPL is below KAPRA's;
- at PAA 2 both TPLs are near-equal (both close to zero next to their gap at PAA 10).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sax_reference
from scipy.stats import spearmanr
from series_reference import build_release

from mimic_deid.deid.kapra import kp_anonymise
from mimic_deid.deid.missing import fill_missing_hours
from mimic_deid.pipeline.cohort import build_cohort
from mimic_deid.pipeline.variables import configured_itemids, load_variables
from mimic_deid.sources import extract_raw, open_source
from mimic_deid.synthetic import generate

SEED_SETTING = dict(k=10, P=5, paa=10, level=10)
PC_SEEDS = range(5)


@pytest.fixture(scope="module")
def heart_rate(tmp_path_factory) -> np.ndarray:
    """Hourly heart rate (n, 46) of the synthetic ihm48 release, missing hours carried."""
    root = tmp_path_factory.mktemp("synth")
    generate(root / "src", subjects=1500, seed=3)
    variables = load_variables("config/variables.yaml")
    source = open_source("csv", csv_path=str(root / "src"), dsn="", schema="mimiciii")
    extract_raw(
        source,
        str(root / "raw"),
        itemids=configured_itemids(variables),
        event_buckets=2,
        chunk_rows=10**6,
    )
    raw = root / "raw"
    stays, _ = build_cohort(
        *(pd.read_parquet(raw / f"{t}.parquet") for t in ("icustays", "admissions", "patients")),
        min_age=18,
    )
    series, meta, _ = build_release(str(raw), stays, variables, "ihm48", ihm_hours=48)
    length = int(meta["length"].min())
    wide = series.pivot(index="icustay_id", columns="hour", values="heart_rate").to_numpy()
    x = fill_missing_hours(wide[:, :length, None])[:, :, 0]
    assert x.shape[0] > 500 and length >= 40 and not np.isnan(x).any()
    return x


def losses(x, algorithm, seeds=(0,), **change):
    """Mean (TIVL, TPL) over ``seeds`` at the seed setting with ``change`` applied."""
    p = SEED_SETTING | change
    out = []
    for seed in seeds:
        r = kp_anonymise(
            x, p["k"], p["P"], p["paa"], p["level"], algorithm, np.random.default_rng(seed)
        )
        out.append(
            (
                sax_reference.tivl(x, r.k_group),
                sax_reference.tpl(r.orig_codes, p["level"], r.codes, r.levels),
            )
        )
    return tuple(np.mean(out, axis=0))


def test_kapra_pattern_loss_is_constant_in_k(heart_rate):
    tpl = [losses(heart_rate, "kapra", k=k)[1] for k in (5, 10, 20, 40)]
    assert tpl == [tpl[0]] * 4


@pytest.mark.parametrize("algorithm", ["kapra", "pc-kapra"])
def test_value_loss_increases_with_k(heart_rate, algorithm):
    tivl = [losses(heart_rate, algorithm, k=k)[0] for k in (5, 10, 20, 40)]
    assert np.all(np.diff(tivl) > 0), tivl


@pytest.mark.parametrize("algorithm", ["kapra", "pc-kapra"])
def test_value_loss_rises_with_p(heart_rate, algorithm):
    # P below k only: at P = k every P-group (P .. 2P - 1 series) is already a k-group, so the
    # group formation merges nothing and the value loss can fall (KAPRA on this data: 30.3 at
    # P 8, 26.1 at P 10)
    seeds = (0,) if algorithm == "kapra" else PC_SEEDS
    grid = (2, 3, 5, 8)
    tivl = [losses(heart_rate, algorithm, seeds, P=P)[0] for P in grid]
    assert tivl[-1] > tivl[0] and spearmanr(grid, tivl).statistic >= 0.8, tivl


def test_pc_kapra_keeps_patterns_better_than_kapra(heart_rate):
    kapra_tpl = losses(heart_rate, "kapra")[1]
    pc_tpl = losses(heart_rate, "pc-kapra", PC_SEEDS)[1]
    assert pc_tpl < 0.75 * kapra_tpl, (pc_tpl, kapra_tpl)


def test_pattern_losses_are_near_equal_at_paa_2(heart_rate):
    gap_10 = losses(heart_rate, "kapra")[1] - losses(heart_rate, "pc-kapra", PC_SEEDS)[1]
    at_2 = [losses(heart_rate, a, PC_SEEDS, paa=2)[1] for a in ("kapra", "pc-kapra")]
    assert abs(at_2[0] - at_2[1]) < 0.05 * gap_10, (at_2, gap_10)


def _ar1_series(level_sd: float, seed: int, n: int = 600, length: int = 46) -> np.ndarray:
    """Heart-rate-like series: AR(1) shapes (innovation sd 4, coefficient 0.8) around 85 bpm
    plus a level of its own per series (sd ``level_sd``: 0 = one patient, as the seed's ECG)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, 4.0, (n, length))
    x = np.empty((n, length))
    x[:, 0] = noise[:, 0] / np.sqrt(1 - 0.8**2)
    for t in range(1, length):
        x[:, t] = 0.8 * x[:, t - 1] + noise[:, t]
    return 85.0 + rng.normal(0.0, level_sd, (n, 1)) + x


@pytest.mark.parametrize(("level_sd", "low", "high"), [(0.0, 0.95, 1.05), (15.0, 1.3, 1.8)])
def test_pc_kapra_loses_more_value_only_where_series_differ_in_level(level_sd, low, high):
    """Why PC-KAPRA's value loss is above KAPRA's on ICU data (benchmarks/README.md, "Moved from the README: KAPRA and PC-KAPRA head to head").

    SAX z-normalises every series, so PC-KAPRA's pattern clusters ignore a series' level, and
    its P-groups, cut inside one cluster, mix levels; KAPRA leaves most series at SAX level 1
    (one word), where its top-down split groups them by value. With one level for all series
    (the seed's ECG of one patient) the two value losses are equal, as the seed reports; with
    ICU-like levels (between-patient sd 15 bpm) PC-KAPRA's is 30-80 % higher.
    """
    ratios = []
    for seed in range(2):
        x = _ar1_series(level_sd, 100 + seed)
        tivl = {
            algorithm: sax_reference.tivl(
                x, kp_anonymise(x, 10, 5, 10, 10, algorithm, np.random.default_rng(seed)).k_group
            )
            for algorithm in ("kapra", "pc-kapra")
        }
        ratios.append(tivl["pc-kapra"] / tivl["kapra"])
    assert low <= np.mean(ratios) <= high, ratios


def test_kapra_leaves_most_icu_like_series_at_sax_level_one():
    x = _ar1_series(15.0, 100)
    levels = np.asarray(kp_anonymise(x, 10, 5, 10, 10, "kapra", np.random.default_rng(0)).levels)
    assert np.mean(levels == 1) > 0.7
