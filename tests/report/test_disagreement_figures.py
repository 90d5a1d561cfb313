"""Seed Figs 3.1 and 5.4 (lower panel): the main class's individual disagreement curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from privacy_reference import disagreement, summarise_curves

from mimic_deid.core.atomic import write_table
from mimic_deid.core.errors import InputDataError
from mimic_deid.deid.classes import KEY
from mimic_deid.evaluate.curves import (
    curves_from_table,
    curves_table,
    main_class_curves,
    main_class_keys,
)
from mimic_deid.report import disagreement as dis_figures
from mimic_deid.report.content import stage_items
from mimic_deid.report.series import example_target
from mimic_deid.stages import REPORT_MODULES

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def long_tables(n: int = 12, length: int = 6):
    rng = np.random.default_rng(4)
    keys = np.arange(500, 500 + n)
    series = pd.DataFrame(
        {
            KEY: np.repeat(keys, length),
            "hour": np.tile(np.arange(length), n),
            "heart_rate": rng.normal(80, 10, n * length),
            "glucose": rng.normal(130, 30, n * length),
        }
    )
    classes = pd.DataFrame(
        {KEY: keys, "group": "all", "split": "train", "length": length, "class_length": length}
    )
    pseudonyms = pd.DataFrame({KEY: keys, "pseudonym": [f"s{k}" for k in keys]})
    release = series.merge(pseudonyms, on=KEY).drop(columns=[KEY])
    release["heart_rate"] += rng.normal(0, 3, len(release))
    release = release[["pseudonym", "hour", "heart_rate", "glucose"]]
    return series, classes, release, pseudonyms


def test_the_main_class_curves_need_only_the_class_rows() -> None:
    """main_class_keys picks the class the rule reads (group all, its length); the curves are
    the same from tables cut to its series, original and released, as privacy_curves reads
    them, as from the whole tables with another class beside it."""
    series, classes, release, pseudonyms = long_tables()
    other_s, other_c, other_r, other_p = long_tables(n=3, length=4)
    shift = {KEY: other_s[KEY] + 100}
    series = pd.concat([series, other_s.assign(**shift)], ignore_index=True)
    classes = pd.concat([classes, other_c.assign(**{KEY: other_c[KEY] + 100})])
    other_p = other_p.assign(**{KEY: other_p[KEY] + 100, "pseudonym": ["t1", "t2", "t3"]})
    pseudonyms = pd.concat([pseudonyms, other_p], ignore_index=True)
    other_r = other_r.assign(pseudonym=np.repeat(["t1", "t2", "t3"], 4))
    release = pd.concat([release, other_r], ignore_index=True)
    keys = main_class_keys(classes, 6)
    np.testing.assert_array_equal(keys, np.arange(500, 512))
    assert len(main_class_keys(classes, None)) == 0
    names = pseudonyms.loc[pseudonyms[KEY].isin(keys), "pseudonym"]
    features = {"heart_rate": ["mean", "var", "min", "max"]}
    args = (6, features, False, "euclidean")
    whole = main_class_curves(series, classes, release, pseudonyms, *args)
    cut = main_class_curves(
        series[series[KEY].isin(keys)], classes, release[release["pseudonym"].isin(names)],
        pseudonyms, *args,
    )  # fmt: skip
    assert curves_table(cut).equals(curves_table(whole))


def test_main_class_curves_match_the_disagreement_of_the_class(tmp_path) -> None:
    series, classes, release, pseudonyms = long_tables()
    features = {"heart_rate": ["mean", "var", "min", "max"]}
    c = main_class_curves(series, classes, release, pseudonyms, 6, features, False, "euclidean")
    X = series.sort_values([KEY, "hour"])[["heart_rate", "glucose"]].to_numpy().reshape(12, 6, 2)
    rel = release.assign(**{KEY: release["pseudonym"].str[1:].astype(int)})
    Xr = rel.sort_values([KEY, "hour"])[["heart_rate", "glucose"]].to_numpy().reshape(12, 6, 2)
    F = c["F_orig"]
    ref = disagreement(F, c["F_rel"], X, Xr)
    np.testing.assert_array_equal(c["result"].auc, ref.auc)
    np.testing.assert_array_equal(c["result"].curves, ref.curves)
    assert c["variable"] == "heart_rate" and c["X_orig"].shape == (12, 6)
    # first included = the first series the disagreement's sorted order takes
    DF = np.sqrt(((F[:, None, :] - c["F_rel"][None, :, :]) ** 2).sum(axis=2))
    np.testing.assert_array_equal(c["first_included"], DF.argmin(axis=1))
    assert main_class_curves(series, classes, release, pseudonyms, 7, features, False, "dtw") == {}
    per_record = main_class_curves(
        series, classes, release, pseudonyms, 6, features, False, "per_record"
    )
    np.testing.assert_allclose(per_record["result"].auc, ref.auc / 6, rtol=1e-12)

    summary = summarise_curves(ref).assign(group="all", class_length=6)
    info = dis_figures.plot_disagreement_curves(
        summary, ref.curves, ref.n_reachable, 6, tmp_path / "c.png", n_curves=5
    )
    assert (tmp_path / "c.png").read_bytes()[:8] == PNG_MAGIC
    assert len(info["axes"]) == 2
    assert info["axes"][1]["title"].startswith("5 of the 12 normalised")
    t = example_target(ref.auc)
    assert ref.auc[t] == np.sort(ref.auc)[5]
    dis_figures.plot_disagreement_example(
        c["X_orig"],
        c["X_rel"],
        F[:, :2],
        c["F_rel"][:, :2],
        ref.thresholds[t],
        ref.curves[t],
        float(ref.t_max[t]),
        float(ref.auc[t]),
        t,
        int(c["first_included"][t]),
        6,
        {"variable": "Heart rate", "unit": "bpm"},
        tmp_path / "e.png",
    )
    assert (tmp_path / "e.png").stat().st_size > 5000


def test_the_curves_artefact_gives_back_what_was_computed(tmp_path) -> None:
    """Rule privacy_curves writes the curves; the report reads the same arrays back."""
    series, classes, release, pseudonyms = long_tables()
    features = {"heart_rate": ["mean", "var", "min", "max"], "glucose": ["mean"]}
    c = main_class_curves(series, classes, release, pseudonyms, 6, features, True, "dtw", 2)
    write_table(curves_table(c), tmp_path / "curves.parquet")
    back = curves_from_table(pq.read_table(tmp_path / "curves.parquet"))
    assert set(back) == set(c)
    for name in ("auc", "first_threshold", "first_disagreement", "t_max", "n_reachable",
                 "curves", "thresholds"):  # fmt: skip
        got, want = getattr(back["result"], name), getattr(c["result"], name)
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert got.dtype == want.dtype, name
    for name in ("first_included", "F_orig", "F_rel", "X_orig", "X_rel"):
        np.testing.assert_array_equal(back[name], c[name], err_msg=name)
    assert {k: back[k] for k in ("variable", "names", "class_length", "series_distance")} == {
        "variable": "heart_rate",
        "names": c["names"],
        "class_length": 6,
        "series_distance": "dtw",
    }
    write_table(curves_table({}), tmp_path / "none.parquet")
    assert curves_from_table(pq.read_table(tmp_path / "none.parquet")) == {}
    write_table(pa.table({"auc": [1.0]}), tmp_path / "other.parquet")
    with pytest.raises(InputDataError) as err:
        curves_from_table(pq.read_table(tmp_path / "other.parquet"), "other.parquet")
    assert str(err.value) == (
        "other.parquet: no 'mimic_deid' metadata; expected a privacy_curves output"
    )


def test_no_data_and_registry(tmp_path) -> None:
    dis_figures.plot_disagreement_curves(
        None, np.empty((0, 0)), np.empty(0), 30, tmp_path / "n.png"
    )
    empty = np.empty((0, 0))
    dis_figures.plot_disagreement_example(
        empty,
        empty,
        empty,
        empty,
        np.empty(0),
        np.empty(0),
        0.0,
        0.0,
        0,
        None,
        0,
        {},
        tmp_path / "m.png",
    )
    assert (tmp_path / "n.png").is_file() and (tmp_path / "m.png").is_file()
    assert example_target(np.array([np.nan, np.nan])) is None
    names = [i.name for i in stage_items(REPORT_MODULES)]
    assert "disagreement_curves" in names and "disagreement_example" in names
