"""Report figures, tables and index page: every function writes its output and labels it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.deid.duration_stats import records_lost
from mimic_deid.evaluate.privacy import SERIES_DISTANCES
from mimic_deid.evaluate.utility import SETTINGS as UTILITY_SETTINGS
from mimic_deid.report import disagreement as dis_figures
from mimic_deid.report import figures, html, shaping, tables

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STATS = ("min", "mean", "max", "q10", "q25", "q50", "q75", "q90")


# --------------------------------------------------------------------------------------------
# realistic fake inputs (also used to review the figures by eye)


def fake_lengths(n: int, seed: int = 0) -> np.ndarray:
    """ICU stay lengths in hours: log-normal, median ~40 h, long tail."""
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.lognormal(3.7, 0.9, n)), 1, 3000).astype(np.int64)


def fake_classes(lengths: np.ndarray, dk: int) -> np.ndarray:
    """A simple duration k-classing: pool from the longest down, cut when the pool reaches dk."""
    out = np.zeros_like(lengths)
    pool: list[np.ndarray] = []
    size = 0
    for length in np.unique(lengths)[::-1]:
        idx = np.flatnonzero(lengths == length)
        pool.append(idx)
        size += idx.size
        if size >= dk:
            out[np.concatenate(pool)] = length
            pool, size = [], 0
    return out  # what is left in the pool at the shortest lengths stays 0 (suppressed)


def _curves(f_orig, f_rel, x_orig, x_rel):
    d_f = np.sqrt(((f_orig[:, None, :] - f_rel[None, :, :]) ** 2).sum(-1))
    d_s = np.sqrt(((x_orig[:, None, :] - x_rel[None, :, :]) ** 2).sum(-1)) / x_orig.shape[1]
    order = np.argsort(d_f, axis=1, kind="stable")
    sorted_s = np.take_along_axis(d_s, order, axis=1)
    return np.cumsum(sorted_s, axis=1) / np.arange(1, d_s.shape[1] + 1)


def _feat(x: np.ndarray) -> np.ndarray:
    return np.stack([x.mean(1), x.var(1), x.min(1), x.max(1)], axis=1)


def fake_disagreement(n: int = 60, length: int = 30, seed: int = 0):
    """(baseline summary, release summary, baseline series, release series) for two classes."""
    rng = np.random.default_rng(seed)
    summaries: dict[str, list[pd.DataFrame]] = {"baseline": [], "release": []}
    per_series: dict[str, list[pd.DataFrame]] = {"baseline": [], "release": []}
    for cl in (length, 9):
        x = 80 + rng.normal(0, 8, (n, 1)) + np.cumsum(rng.normal(0, 2, (n, cl)), axis=1)
        f = _feat(x)
        groups = np.argsort(np.argsort(f[:, 0])) // 10  # 10-anonymous classes on the mean
        target = np.stack([f[groups == g].mean(0) for g in groups])
        xr = target[:, [0]] + (x - x.mean(1, keepdims=True)) * np.sqrt(
            target[:, [1]] / np.maximum(x.var(1, keepdims=True), 1e-9)
        )
        xr += rng.normal(0, 0.5, xr.shape)
        for who, rel in (("baseline", x), ("release", xr)):
            curves = _curves(f, _feat(rel), x, rel)
            inclusion = np.arange(1, n + 1) / n
            rows = []
            for stat in STATS:
                fn = {"min": np.min, "mean": np.mean, "max": np.max}.get(stat)
                val = fn(curves, 0) if fn else np.quantile(curves, int(stat[1:]) / 100, axis=0)
                for inc, v in zip(inclusion, val, strict=True):
                    rows.append((cl, inc, stat, v, v / val[-1] if val[-1] else math.nan))
            summaries[who].append(
                pd.DataFrame(
                    rows, columns=["class_length", "inclusion", "stat", "value", "normalised"]
                )
            )
            per_series[who].append(
                pd.DataFrame(
                    {
                        "class_length": cl,
                        "auc": curves.mean(1),
                        "first_threshold": rng.uniform(0, 2, n) * (who == "release"),
                        "first_disagreement": curves[:, 0],
                    }
                )
            )
    cat = {k: pd.concat(v, ignore_index=True) for k, v in summaries.items()}
    ser = {k: pd.concat(v, ignore_index=True) for k, v in per_series.items()}
    return cat["baseline"], cat["release"], ser["baseline"], ser["release"]


def fake_linkage() -> dict:
    errors = ("0.0", "0.05", "0.1", "0.2")
    base = dict(
        zip(
            errors,
            [(1.0, 1.0, 0.0), (0.82, 0.97, 3.1), (0.55, 0.86, 6.8), (0.27, 0.61, 11.5)],
            strict=True,
        )
    )
    rel = dict(
        zip(
            errors,
            [(0.12, 0.41, 28.0), (0.1, 0.37, 28.9), (0.08, 0.3, 29.7), (0.05, 0.22, 31.2)],
            strict=True,
        )
    )
    return {
        who: {
            e: {"top1": a, "top5": b, "reconstruction_error": c, "n": 4000}
            for e, (a, b, c) in d.items()
        }
        for who, d in (("baseline", base), ("release", rel))
    }


def fake_card(release: str, point: dict, passed: bool = True, utility: bool = True) -> dict:
    """A release card as ``evaluate.card.release_card`` writes it: the strong attacker at
    4.2 % [2.0, 8.1] against 1/10; ``ihm48`` with the test utility of :func:`fake_utility`."""
    card = {
        "release": release,
        "point": dict(point),
        "passed": passed,
        "verdict": "certified" if passed else (
            "refused: linkage bound: strong attacker's top-1 12.0 % > bound 1/10 = 10.0 % "
            "(95 % interval 10.0 % to 14.0 %, 900 series)"
        ),
        "k": 10,
        "dk": point["dk"],
        "l": 2 if release == "ihm48" else None,
        "attackers": {
            "seed": {"error": 0.0, "top1": 0.012, "top1_ci": [0.004, 0.03], "top5": 0.05,
                     "top5_ci": [0.03, 0.08], "n": 500},
            "strong": {"error": 0.0, "top1": 0.042 if passed else 0.12,
                       "top1_ci": [0.02, 0.081] if passed else [0.10, 0.14], "top5": 0.2,
                       "top5_ci": [0.16, 0.24], "n": 500},
        },
        "bound": {"error": 0.0, "k": 10, "top1": 0.1, "within": passed},
        "utility": None,
    }  # fmt: skip
    if release == "ihm48" and utility:
        test = fake_utility().query("split == 'test' and cross == 'shipped'")
        card["utility"] = [
            {"task": r.task, "setting": r.setting, "variables": r.variables,
             "roc_auc": r.roc_auc, "roc_auc_lo": r.roc_auc_lo, "roc_auc_hi": r.roc_auc_hi,
             "pr_auc": r.pr_auc}
            for r in test.itertuples()
        ]  # fmt: skip
    return card


def fake_utility() -> pd.DataFrame:
    """A utility table as ``utility_table`` writes it: the seed's figures as the shipped
    rows, like-for-like rows 0.01 higher in the cross settings, the owner's baseline 0.05
    above orig. / orig."""
    rows = []
    values = {
        "train": {
            "orig. / orig.": (0.87, 0.54),
            "de-id. / de-id.": (0.87, 0.54),
            "orig. / de-id.": (0.86, 0.51),
            "de-id. / orig.": (0.64, 0.22),
        },
        "test": {
            "orig. / orig.": (0.85, 0.49),
            "de-id. / de-id.": (0.83, 0.45),
            "orig. / de-id.": (0.82, 0.40),
            "de-id. / orig.": (0.64, 0.22),
        },
    }
    sides = {label: (train, test) for label, train, test in UTILITY_SETTINGS}
    keys = [("all", "shipped", "orig. / orig.", 0.05)]
    keys += [("released", "shipped", s, 0.0) for s in values["test"]]
    cross_settings = ("orig. / de-id.", "de-id. / orig.")
    keys += [
        ("released", "gap_filled", s, 0.01 if s in cross_settings else 0.0) for s in values["test"]
    ]
    for variables, cross, setting, shift in keys:
        for split, by in values.items():
            n, pos = (12000, 1600) if split == "train" else (2600, 350)
            width = 0.01 if split == "train" else 0.025
            roc, pr = (v + shift for v in by[setting])
            rows.append(
                {
                    "task": "mortality",
                    "variables": variables,
                    "cross": cross,
                    "setting": setting,
                    "train_data": sides[setting][0],
                    "test_data": sides[setting][1],
                    "split": split,
                    "roc_auc": roc,
                    "roc_auc_lo": roc - width,
                    "roc_auc_hi": roc + width,
                    "pr_auc": pr,
                    "pr_auc_lo": pr - 2 * width,
                    "pr_auc_hi": pr + 2 * width,
                    "n": n,
                    "positives": pos,
                    "C": 0.1,
                }
            )
    return pd.DataFrame(rows)


def fake_ga_example(seed: int = 3):
    """Seed Fig. 6.2: heart rate 78-88 bpm pushed to targets (77.75, 106.19, 90.20, 41.52)."""
    rng = np.random.default_rng(seed)
    x = np.clip(np.round(83 + np.cumsum(rng.normal(0, 1.0, 30))), 78, 88)
    x[[4, 5]] = np.nan
    target = {"min": 77.75, "max": 106.19, "mean": 90.20, "var": 41.52}
    ok = np.isfinite(x)
    z = (x - np.nanmean(x)) / max(np.nanstd(x), 1e-9)
    p = target["mean"] + z * math.sqrt(target["var"])
    p[ok] = np.clip(p[ok], target["min"], target["max"])
    achieved = {
        "min": float(np.nanmin(p)),
        "max": float(np.nanmax(p)),
        "mean": float(np.nanmean(p)),
        "var": float(np.nanvar(p)),
    }
    orig = {"min": np.nanmin(x), "max": np.nanmax(x), "mean": np.nanmean(x), "var": np.nanvar(x)}
    return x, p, {"original": orig, "target": target, "achieved": achieved}


def _png_ok(path: Path) -> None:
    assert path.is_file()
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 5000
    assert not list(path.parent.glob(f".{path.name}.*")), "temporary file left behind"


def _labels_ok(info: dict, n_axes: int) -> None:
    assert len(info["axes"]) == n_axes
    for ax in info["axes"]:
        assert ax["xlabel"], ax
        assert ax["ylabel"], ax
        assert ax["title"] or info["title"]


@pytest.fixture(scope="module")
def disagreement():
    return fake_disagreement()


# --------------------------------------------------------------------------------------------
# figures


def test_duration_classes(tmp_path):
    lengths = fake_lengths(3000)
    classes = fake_classes(lengths, 50)
    info = figures.plot_duration_classes(lengths, classes, tmp_path / "d.png")
    _png_ok(tmp_path / "d.png")
    _labels_ok(info, 2)
    assert "days" in info["axes"][0]["xlabel"]
    assert info["axes"][1]["xscale"] == "log" and info["axes"][1]["yscale"] == "log"
    assert any("smallest released class: " in t for t in info["axes"][1]["legend"])


def test_records_lost(tmp_path):
    lengths = fake_lengths(2000, seed=1)
    classes = fake_classes(lengths, 50)
    lost = records_lost(lengths, classes)
    info = figures.plot_records_lost(lengths, classes, lost, tmp_path / "r.png")
    _png_ok(tmp_path / "r.png")
    _labels_ok(info, 2)
    assert f"mean {lost.mean():.2f} h" in info["title"]
    assert "hours" in info["axes"][0]["xlabel"]


def test_records_lost_counts_suppressed_as_lost():
    lost = records_lost(np.array([10, 7, 3]), np.array([8, 7, 0]))
    assert lost.tolist() == [2, 0, 3]


def test_records_lost_figure_refuses_a_count_per_other_series(tmp_path):
    with pytest.raises(InputDataError) as err:
        figures.plot_records_lost(
            np.array([10, 7]), np.array([8, 7]), np.array([2]), tmp_path / "r.png"
        )
    assert str(err.value) == "records_lost: expected one value per series (2), got 1"


def test_duration_inputs_rejected():
    with pytest.raises(InputDataError) as err:
        shaping.duration_inputs(np.array([1, 2]), np.array([1]))
    assert str(err.value) == (
        "lengths and class_lengths: expected the same number of series, got 2 and 1"
    )
    with pytest.raises(InputDataError) as err:
        shaping.duration_inputs(np.array([5]), np.array([6]))
    assert str(err.value) == (
        "class_lengths: a class length exceeds the series' original length; series are only "
        "ever shortened"
    )


@pytest.mark.parametrize("normalised", [False, True])
def test_summary_disagreement(tmp_path, disagreement, normalised):
    base, rel, _, _ = disagreement
    out = tmp_path / "s.png"
    info = dis_figures.plot_summary_disagreement(base, rel, 30, out, normalised=normalised)
    _png_ok(out)
    _labels_ok(info, 1)
    ax = info["axes"][0]
    assert ax["xscale"] == "log"
    assert "inclusion percentage (%" in ax["xlabel"]
    assert ("100 %" in ax["ylabel"]) == normalised
    assert len(ax["legend"]) == 6
    assert "mean, de-identified" in ax["legend"]


def test_summary_disagreement_no_data_and_baseline_only(tmp_path, disagreement):
    base, rel, _, _ = disagreement
    info = dis_figures.plot_summary_disagreement(base, rel, 12345, tmp_path / "e.png")
    _png_ok(tmp_path / "e.png")
    assert info["axes"][0]["ylabel"]
    info = dis_figures.plot_summary_disagreement(base, None, 9, tmp_path / "b.png", stats=("mean",))
    assert info["axes"][0]["legend"] == ["mean, original"]
    with pytest.raises(InputDataError) as info:
        dis_figures.plot_summary_disagreement(base, rel, 9, tmp_path / "x.png", stats=("median",))
    assert str(info.value) == (
        "stats: unknown statistic(s) ['median']; expected some of ['min', 'mean', 'max', "
        "'q10', 'q25', 'q50', 'q75', 'q90']"
    )
    with pytest.raises(InputDataError) as info:
        dis_figures.plot_summary_disagreement(
            base.drop(columns="normalised"), rel, 9, tmp_path / "x.png"
        )
    assert str(info.value) == (
        "baseline disagreement summary: missing column(s) ['normalised']; expected at least "
        "['class_length', 'inclusion', 'stat', 'value', 'normalised'], got ['class_length', "
        "'inclusion', 'stat', 'value']"
    )
    assert not (tmp_path / "x.png").exists()


def test_disagreement_axes_name_the_configured_series_distance(tmp_path, disagreement):
    base, rel, base_s, rel_s = disagreement
    info = dis_figures.plot_summary_disagreement(base, rel, 30, tmp_path / "d.png")
    assert info["axes"][0]["ylabel"] == "disagreement (Euclidean series distance, series units)"
    info = dis_figures.plot_summary_disagreement(
        base, rel, 30, tmp_path / "d.png", series_distance="dtw"
    )
    assert info["axes"][0]["ylabel"] == "disagreement (DTW series distance, series units)"
    info = dis_figures.plot_first_disagreement_cdf(
        base_s, rel_s, 30, tmp_path / "c.png", series_distance="per_record"
    )
    assert info["axes"][0]["xlabel"] == (
        "first disagreement (Euclidean series distance per hour of the class, series units, "
        "log scale)"
    )
    with pytest.raises(ConfigError) as err:
        dis_figures.plot_first_disagreement_cdf(base_s, rel_s, 30, tmp_path / "x.png", "mjc")
    assert str(err.value) == (
        "series distance (evaluate/series_distance) must be one of ['euclidean', 'per_record', "
        "'dtw'], got 'mjc'"
    )
    assert set(dis_figures.DISTANCE_UNITS) == set(SERIES_DISTANCES)
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("class_length", [30, None, 777])
def test_first_disagreement_cdf(tmp_path, disagreement, class_length):
    _, _, base_s, rel_s = disagreement
    out = tmp_path / "c.png"
    info = dis_figures.plot_first_disagreement_cdf(base_s, rel_s, class_length, out)
    _png_ok(out)
    _labels_ok(info, 1)
    ax = info["axes"][0]
    assert ax["xscale"] == "log"
    assert "(%)" in ax["ylabel"]
    if class_length == 777:
        assert ax["legend"] == []
    else:
        assert len(ax["legend"]) == 2


def test_first_disagreement_cdf_all_zero_or_empty(tmp_path):
    df = pd.DataFrame({"class_length": [5] * 4, "first_disagreement": [0.0, 0.0, 0.0, np.nan]})
    info = dis_figures.plot_first_disagreement_cdf(df, df, 5, tmp_path / "z.png")
    _png_ok(tmp_path / "z.png")
    assert "1 undefined" in info["axes"][0]["legend"][0]
    assert "zero values drawn at" in info["axes"][0]["title"]
    dis_figures.plot_first_disagreement_cdf(pd.DataFrame(), None, None, tmp_path / "e.png")
    _png_ok(tmp_path / "e.png")


def test_ga_example(tmp_path):
    x, p, feats = fake_ga_example()
    info = figures.plot_ga_example(x, p, feats, tmp_path / "g.png", "Heart rate", "bpm")
    _png_ok(tmp_path / "g.png")
    _labels_ok(info, 1)
    ax = info["axes"][0]
    assert ax["ylabel"] == "Heart rate (bpm)"
    assert "hour" in ax["xlabel"]
    assert {"original", "perturbed", "target mean"} <= set(ax["legend"])
    assert "unfeasibility" in ax["title"]
    # all-null series: a "no data" figure, not a crash
    nan = np.full(5, np.nan)
    figures.plot_ga_example(nan, nan, {}, tmp_path / "n.png", "Glucose", "mg/dL")
    _png_ok(tmp_path / "n.png")


def test_linkage(tmp_path):
    info = figures.plot_linkage(fake_linkage(), tmp_path / "l.png")
    _png_ok(tmp_path / "l.png")
    _labels_ok(info, 2)
    assert "(%)" in info["axes"][0]["xlabel"] and "(%)" in info["axes"][0]["ylabel"]
    assert "top-1, de-identified" in info["axes"][0]["legend"]
    info = figures.plot_linkage({}, tmp_path / "l0.png")
    _png_ok(tmp_path / "l0.png")
    # the shape evaluate.linkage.aggregate_linkage returns
    agg = {
        "n": 100,
        "top": [1, 5],
        "by_error": [
            {"error": e, "n_targets": 100, "top1": 1 - e, "top5": 1.0, "reconstruction_error": e}
            for e in (0.0, 0.1, 0.2)
        ],
    }
    info = figures.plot_linkage({"baseline": agg, "release": agg}, tmp_path / "l1.png")
    _png_ok(tmp_path / "l1.png")
    assert "100 targets" in info["title"] and len(info["axes"][0]["legend"]) == 4


def test_trust_settings(tmp_path):
    info = figures.plot_trust_settings(fake_utility(), tmp_path / "t.png")
    _png_ok(tmp_path / "t.png")
    _labels_ok(info, 4)
    titles = [ax["title"] for ax in info["axes"]]
    assert titles == [
        "ROC-AUC, evaluated on train (seed Table 6.3)",
        "ROC-AUC, evaluated on test (seed Table 6.4)",
        "PR-AUC, evaluated on train (seed Table 6.3)",
        "PR-AUC, evaluated on test (seed Table 6.4)",
    ]
    assert info["axes"][0]["legend"] == [
        "chance (0.5)",
        "shipped (original side as recorded)",
        "like-for-like (original side gap-filled)",
        "seed Tables 6.3/6.4",
    ]
    info = figures.plot_trust_settings(
        fake_utility().assign(task="long_stay"), tmp_path / "ls.png", task="long_stay"
    )
    assert info["title"].startswith("Length of stay > 7 days prediction")
    assert info["axes"][3]["title"] == "PR-AUC, evaluated on test"
    assert "seed Tables 6.3/6.4" not in info["axes"][0]["legend"]
    # an older table without the key columns: shipped rows only, no like-for-like marker
    old = fake_utility().query("variables == 'released' and cross == 'shipped'")
    old = old.drop(columns=["task", "variables", "cross", "train_data", "test_data"])
    info = figures.plot_trust_settings(old, tmp_path / "old.png")
    assert "like-for-like (original side gap-filled)" not in info["axes"][0]["legend"]
    for i, empty in enumerate([fake_utility().iloc[:0], pd.DataFrame()]):
        figures.plot_trust_settings(empty, tmp_path / f"t{i}.png")
        _png_ok(tmp_path / f"t{i}.png")


def test_png_is_deterministic(tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    figures.plot_linkage(fake_linkage(), a)
    figures.plot_linkage(fake_linkage(), b)
    assert a.read_bytes() == b.read_bytes()


def test_empty_duration(tmp_path):
    info = figures.plot_duration_classes(np.array([], int), np.array([], int), tmp_path / "e.png")
    _png_ok(tmp_path / "e.png")
    assert all(ax["xlabel"] for ax in info["axes"])
    empty = np.array([], int)
    figures.plot_records_lost(empty, empty, empty, tmp_path / "e2.png")
    _png_ok(tmp_path / "e2.png")


# --------------------------------------------------------------------------------------------
# tables


def test_trust_settings_table():
    util = fake_utility()
    t = tables.trust_settings_table(util, "test")
    assert list(t.index) == [
        "ROC-AUC, shipped",
        "ROC-AUC, like-for-like",
        "ROC-AUC, seed",
        "PR-AUC, shipped",
        "PR-AUC, like-for-like",
        "PR-AUC, seed",
    ]
    assert list(t.columns) == [
        "orig. / orig., all variables",
        "orig. / orig.",
        "de-id. / de-id.",
        "orig. / de-id.",
        "de-id. / orig.",
    ]
    assert t.loc["ROC-AUC, shipped", "orig. / orig., all variables"] == "0.900 [0.875, 0.925]"
    assert t.loc["ROC-AUC, like-for-like", "orig. / orig., all variables"] == "n/a"
    assert t.loc["ROC-AUC, seed", "orig. / orig., all variables"] == "n/a"
    assert t.loc["ROC-AUC, shipped", "orig. / orig."] == "0.850 [0.825, 0.875]"
    assert t.loc["ROC-AUC, like-for-like", "orig. / de-id."] == "0.830 [0.805, 0.855]"
    assert t.loc["ROC-AUC, seed", "orig. / de-id."] == "0.820"
    assert t.loc["PR-AUC, shipped", "de-id. / orig."] == "0.220 [0.170, 0.270]"
    assert t.loc["PR-AUC, seed", "de-id. / orig."] == "0.220"
    # every seed figure of Tables 6.3/6.4 is printed where it belongs
    for split in ("train", "test"):
        t = tables.trust_settings_table(util, split)
        for metric, label in (("roc_auc", "ROC-AUC"), ("pr_auc", "PR-AUC")):
            seed = [float(v) for v in t.loc[f"{label}, seed"].iloc[1:]]
            assert seed == list(tables.SEED_TRUST_SETTINGS[(split, metric)])
    # the second task: its own rows, no seed figures
    both = pd.concat([util, util.assign(task="long_stay", roc_auc=0.7)], ignore_index=True)
    t = tables.trust_settings_table(both, "test", task="long_stay")
    assert list(t.index) == [
        "ROC-AUC, shipped",
        "ROC-AUC, like-for-like",
        "PR-AUC, shipped",
        "PR-AUC, like-for-like",
    ]
    assert t.loc["ROC-AUC, shipped", "orig. / orig."] == "0.700 [0.825, 0.875]"
    assert tables.trust_settings_table(both, "test").equals(
        tables.trust_settings_table(util, "test")
    )
    # a missing setting and a missing interval
    part = util[util["setting"] != "de-id. / orig."].copy()
    part.loc[part["setting"] == "orig. / orig.", "roc_auc_lo"] = np.nan
    t = tables.trust_settings_table(part, "train")
    assert t.loc["ROC-AUC, shipped", "de-id. / orig."] == "n/a"
    assert t.loc["ROC-AUC, shipped", "orig. / orig."] == "0.870"
    with pytest.raises(InputDataError) as info:
        tables.trust_settings_table(pd.concat([util, util]), "test")
    assert str(info.value) == (
        "utility (trust settings): setting 'orig. / orig.' (all variables, shipped) appears "
        "more than once for split 'test'; expected one row per (task, variables, cross, "
        "setting, split)"
    )


def test_to_markdown_and_write_table(tmp_path):
    t = tables.trust_settings_table(fake_utility(), "train")
    md = tables.to_markdown(t)
    lines = md.strip().splitlines()
    assert lines[0] == (
        "| Training / test | orig. / orig., all variables | orig. / orig. | de-id. / de-id. | "
        "orig. / de-id. | de-id. / orig. |"
    )
    assert lines[1] == "|---|---|---|---|---|---|"
    assert lines[2].startswith("| ROC-AUC, shipped | 0.920 [0.910, 0.930] | 0.870 [0.860, 0.880] |")
    df = pd.DataFrame({"a": [1, 2], "b": [0.5, np.nan], "c": ["x|y", "z"]})
    md = tables.to_markdown(df)
    assert md.splitlines()[1] == "|---:|---:|---|"
    assert "| 1 | 0.50 | x\\|y |" in md and "| 2 | n/a | z |" in md
    tables.write_table(t, tmp_path / "t.csv", tmp_path / "t.md")
    back = pd.read_csv(tmp_path / "t.csv", index_col=0)
    assert back.shape == (6, 5)
    assert (tmp_path / "t.md").read_text() == tables.to_markdown(t)


def test_optimiser_tables():
    summary = pd.DataFrame(
        {
            "duration": [5, 25, 50, 75, 100, "All classes"],
            "unfeasibility": [0.5, 1.25, 2.0, 3.5, 4.0, 2.25],
            "distortion": [9.0, 9.5, 10.0, 10.25, 11.0, 9.95],
            "iterations": [300.0, 900.0, 1500.0, 2000.0, 2500.0, 1440.0],
        }
    )
    shuffled = summary.iloc[[5, 3, 0, 1, 4, 2]]
    t = tables.optimiser_table(shuffled)
    assert list(t.columns) == [
        "Duration",
        "Avg. cum. unfeasibility",
        "Avg. cum. distortion",
        "Avg. iterations",
    ]
    assert t["Duration"].tolist() == ["5", "25", "50", "75", "100", "All classes"]
    assert all(len(v.split(".")[1]) == 2 for v in t["Avg. cum. distortion"])
    adhoc = tables.optimiser_table(summary.drop(columns="iterations"))
    assert adhoc.shape == (6, 3)


# --------------------------------------------------------------------------------------------
# index page


def test_write_index(tmp_path):
    (tmp_path / "figures").mkdir()
    figures.plot_linkage(fake_linkage(), tmp_path / "figures" / "linkage.png")
    t = tables.trust_settings_table(fake_utility(), "test")
    tables.write_table(t, tmp_path / "tables" / "test.csv", tmp_path / "tables" / "test.md")
    sections = [
        {
            "title": "Privacy <linkage> & more",
            "text": "Attack with error e < 20 %.\n\nSecond paragraph.",
            "items": [
                {
                    "kind": "figure",
                    "path": "figures/linkage.png",
                    "caption": "Top-1 <b>rate</b>",
                    "title": "Linkage",
                },
                {"kind": "figure", "path": "figures/missing.png", "caption": "gone"},
            ],
        },
        {
            "title": "Utility",
            "items": [
                {"kind": "table", "path": "tables/test.csv", "caption": "Test split"},
                {"kind": "table", "markdown": tables.to_markdown(t), "caption": "from md"},
                {"kind": "table", "data": t, "caption": "from frame"},
            ],
        },
        {"title": "Empty section"},
    ]
    out = tmp_path / "index.html"
    text = html.write_index(out, "Report <run>", sections)
    assert out.read_text() == text
    for title in ("Privacy &lt;linkage&gt; &amp; more", "Utility", "Empty section"):
        assert text.count(title) == 2  # table of contents and heading
    assert "<linkage>" not in text and "<b>rate</b>" not in text and "<run>" not in text
    assert "e &lt; 20 %" in text
    assert 'src="figures/linkage.png"' in text
    assert "figure not found: figures/missing.png" in text
    assert text.count("<table") == 3
    assert text.count("0.900 [0.875, 0.925]") == 3  # the owner's baseline, once per table
    assert "http://" not in text and "https://" not in text and "<script" not in text
    embedded = html.write_index(tmp_path / "embedded.html", "R", sections[:1], embed_images=True)
    assert "data:image/png;base64," in embedded
    with pytest.raises(InputDataError) as info:
        html.write_index(tmp_path / "bad.html", "R", [{"title": "x", "items": [{"kind": "video"}]}])
    assert str(info.value) == (
        "report index: section 'x' item 1: kind 'video', expected one of ('figure', 'table')"
    )
    assert not (tmp_path / "bad.html").exists()
