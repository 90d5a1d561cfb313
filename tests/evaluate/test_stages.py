"""Every workflow stage function, in memory: DataFrames in, DataFrames and dicts out.

One small release of 60 series with lengths 4-9 h goes through the whole de-identification
and evaluation chain the workflow runs, without parquet files or Snakemake.
"""

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.errors import ConfigError, InputDataError, ReleaseCheckError
from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid import (
    apply_method,
    check_sweep_point,
    class_arrays,
    duration_classes,
    feature_spec,
    iter_class_arrays,
    map_classes,
    mondrian_targets,
    pseudonymous_release,
    run_method,
    tuning_grid_summary,
    tuning_table,
)
from mimic_deid.deid.targets import class_target_matrix
from mimic_deid.evaluate import baseline_disagreement, evaluate_release, released_by_key
from mimic_deid.report import sweep_table
from mimic_deid.report.sweep import sweep_overview

FEATURES = {"heart_rate": ["mean", "var", "min", "max"], "glucose": ["mean"]}
ADHOC = "adhoc-it10-ns0.01"


def make_release(n=60, seed=0):
    rng = np.random.default_rng(seed)
    keys = np.arange(100, 100 + n)
    lengths = rng.integers(4, 10, n)
    rows = []
    for key, L in zip(keys, lengths, strict=True):
        hr = rng.normal(80 + key % 7, 8, L)
        glucose = rng.normal(120, 25, L)
        glucose[rng.random(L) < 0.3] = np.nan
        rows.append(
            pd.DataFrame(
                {
                    "icustay_id": key,
                    "hour": np.arange(L, dtype=np.int32),
                    "heart_rate": hr,
                    "glucose": glucose,
                }
            )
        )
    series = pd.concat(rows, ignore_index=True)
    split = np.where(
        np.arange(n) % 5 == 0, "test", np.where(np.arange(n) % 5 == 1, "validation", "train")
    )
    meta = pd.DataFrame(
        {
            "icustay_id": keys,
            "subject_id": keys + 1000,
            "hadm_id": keys + 2000,
            "length": lengths.astype(np.int32),
            "mortality": (np.arange(n) % 4 == 0).astype(np.int8),
            "long_stay": (np.arange(n) % 3 == 0).astype(np.int8),
            "split": split,
        }
    )
    return series, meta


@pytest.fixture(scope="module")
def point():
    series, meta = make_release()
    durations, duration_summary = duration_classes(meta, dk=10, group_by_split=False)
    classes, dims = class_arrays(series, durations)
    targets, mondrian_summary = mondrian_targets(classes, dims, FEATURES, fk=5, heuristic="range")
    perturbed, per_series, summary = apply_method(
        classes, dims, targets, FEATURES, label=ADHOC, seed=7
    )
    # de-identified as a whole (stays): the index withholds split
    public, index, pseudonyms = pseudonymous_release(
        perturbed, durations, meta, 7, "stays/test", publish_split=False
    )
    return dict(
        series=series,
        meta=meta,
        durations=durations,
        duration_summary=duration_summary,
        classes=classes,
        dims=dims,
        targets=targets,
        mondrian_summary=mondrian_summary,
        perturbed=perturbed,
        per_series=per_series,
        summary=summary,
        public=public,
        index=index,
        pseudonyms=pseudonyms,
    )


def test_duration_classes_hold_dk_series_and_account_for_every_series(point):
    d, s = point["durations"], point["duration_summary"]
    released = d[d["class_length"] > 0]
    assert released.groupby("class_length").size().min() >= 10
    assert (d["class_length"] <= d["length"]).all()
    assert s["series_in"] == 60 and s["released"] + s["suppressed"] == 60
    assert set(d["group"]) == {"all"}


def test_duration_classes_per_split_group_by_split():
    _, meta = make_release()
    d, s = duration_classes(meta, dk=3, group_by_split=True)
    assert (d["group"] == d["split"]).all()
    assert set(s["groups"]) == {"train", "validation", "test"}


def test_mondrian_targets_make_classes_of_fk_series(point):
    t = point["targets"]
    sizes = t.groupby(["class_length", "eq_class"]).size()
    assert sizes.min() >= 5
    assert point["mondrian_summary"]["smallest_equivalence_class"] == sizes.min()
    members = t.groupby("eq_class")["target_heart_rate_mean"].nunique()
    assert (members == 1).all()  # one target per class: the class mean


def test_mondrian_fk_larger_than_a_class_names_the_parameter():
    series, meta = make_release(n=12)
    durations, _ = duration_classes(meta, dk=12, group_by_split=False)
    classes, dims = class_arrays(series, durations)
    L = classes[0].length
    with pytest.raises(ConfigError) as err:
        mondrian_targets(classes, dims, FEATURES, fk=20, heuristic="range")
    assert str(err.value) == (
        f"parameter fk=20 is larger than duration class of length {L} h (group all) with "
        "12 series; use fk <= dk"
    )


def test_apply_method_moves_features_towards_targets_and_keeps_layout(point):
    p = point
    assert list(p["perturbed"].columns) == [
        "group",
        "class_length",
        "icustay_id",
        "hour",
        *p["dims"],
    ]
    assert len(p["perturbed"]) == sum(c.X.shape[0] * c.X.shape[1] for c in p["classes"])
    assert p["summary"]["method"] == ADHOC
    assert p["summary"]["series"] == len(p["per_series"])
    before = (p["targets"]["orig_heart_rate_mean"] - p["targets"]["target_heart_rate_mean"]).abs()
    achieved = p["perturbed"].groupby("icustay_id")["heart_rate"].mean()
    after = (
        achieved.loc[p["targets"]["icustay_id"]].to_numpy() - p["targets"]["target_heart_rate_mean"]
    ).abs()
    assert after.mean() < 0.1 * before.mean()


def test_apply_method_is_deterministic_and_independent_of_worker_count(point):
    p = point
    args = (p["classes"], p["dims"], p["targets"], FEATURES)
    one = apply_method(*args, label=ADHOC, seed=7, threads=1)[0]
    two = apply_method(*args, label=ADHOC, seed=7, threads=2)[0]
    pd.testing.assert_frame_equal(one, two)
    pd.testing.assert_frame_equal(one, p["perturbed"])


GENETIC = (
    "genetic-NA-pop8-tour3-par2-msd3-mp0.2-isd1-pat10-max30-norm0-layseries_dimension-"
    "initmean_shift"
)


def test_genetic_chunks_of_all_classes_give_the_same_release_whatever_threads(point):
    """The genetic method runs (class, chunk) tasks across the workers; the release equals the
    one-class-at-a-time result (run_method with the class's generator) for 1 and 2 threads."""
    p = point
    args = (p["classes"], p["dims"], p["targets"], FEATURES)
    one, series_one, _ = apply_method(*args, label=GENETIC, seed=7, threads=1)
    two, series_two, _ = apply_method(*args, label=GENETIC, seed=7, threads=2)
    pd.testing.assert_frame_equal(one, two)
    pd.testing.assert_frame_equal(series_one, series_two)
    spec = feature_spec(FEATURES, p["dims"])
    cls = p["classes"][0]
    alone = run_method(
        GENETIC,
        cls.X,
        class_target_matrix(p["targets"], cls, spec),
        spec,
        derive_rng(7, GENETIC, cls.group, cls.length),
    )
    rows = one[(one["group"] == cls.group) & (one["class_length"] == cls.length)]
    assert rows[p["dims"]].to_numpy().tobytes() == alone.X.reshape(-1, len(p["dims"])).tobytes()


def test_unknown_method_label_is_refused_before_any_work(point):
    p = point
    with pytest.raises(ConfigError) as err:
        apply_method(p["classes"], p["dims"], p["targets"], FEATURES, label="kmeans-k3", seed=1)
    assert str(err.value) == "method label 'kmeans-k3': unknown release method 'kmeans'"


def test_pseudonymous_release_carries_no_identifiers_and_passes_the_check(point):
    p = point
    assert list(p["public"].columns) == ["pseudonym", "hour", *p["dims"]]
    assert list(p["index"].columns) == ["pseudonym", "duration_class", "label", "long_stay"]
    assert not set(p["index"]["pseudonym"]) & {str(k) for k in p["meta"]["icustay_id"]}
    result = check_sweep_point(
        p["public"], p["index"], p["durations"], p["targets"], p["pseudonyms"],
        dk=10, fk=5, group_by_split=False,
    )  # fmt: skip
    assert result["passed"] and result["checks"]["equivalence_classes"]["smallest"] >= 5


def test_a_release_de_identified_as_a_whole_that_publishes_split_is_refused(point):
    """Its classes hold dk series only over all splits: a published split divides them."""
    p = point
    with_split = (
        p["index"]
        .merge(
            p["pseudonyms"].merge(p["meta"][["icustay_id", "split"]], on="icustay_id"),
            on="pseudonym",
        )
        .drop(columns="icustay_id")
    )
    # the same release with split published: more classes under dk than the release has
    sizes = with_split.groupby(["split", "duration_class"]).size()
    assert (sizes < 10).any() and (p["index"].groupby("duration_class").size() >= 10).all()
    refused = check_sweep_point(
        p["public"], with_split, p["durations"], p["targets"], p["pseudonyms"],
        dk=10, fk=5, group_by_split=False, strict=False,
    )  # fmt: skip
    assert (refused["passed"], refused["verdict"]) == (
        False,
        "refused: duration k: the release index publishes 'split', but the release is "
        "de-identified as a whole, so its duration classes (dk) and demographic cells (fk) "
        "are counted over all splits; expected no 'split' column (a split would divide them "
        "below their k)",
    )


def test_check_sweep_point_refuses_a_release_under_its_claims(point):
    p = point
    with pytest.raises(ReleaseCheckError) as err:
        check_sweep_point(
            p["public"], p["index"], p["durations"], p["targets"], p["pseudonyms"],
            dk=1000, fk=5, group_by_split=False,
        )  # fmt: skip
    assert str(err.value) == (
        "duration class under dk=1000: 5 class(es) with fewer series ((duration_class): size: "
        "4: 12, 5: 14, 7: 14, 8: 10, 9: 10)"
    )


def _linkage(strong_top1: float, k: int, seed_top1: float = 0.05) -> dict:
    from mimic_deid.evaluate.privacy import linkage_bound

    linkage = {
        "release": {"0": {"top1": seed_top1}},
        "strong": {"release": {"0": {"top1": strong_top1, "top1_ci": [0.1, 0.2], "n": 400}}},
    }
    return linkage | {"bound": linkage_bound(linkage, k)}


def test_a_release_above_its_linkage_bound_is_refused_with_the_figures(point):
    p = point
    args = (p["public"], p["index"], p["durations"], p["targets"], p["pseudonyms"])
    kw = dict(dk=10, fk=5, group_by_split=False)
    ok = check_sweep_point(*args, **kw, linkage=_linkage(0.2, 5), strict=False)
    assert (ok["passed"], ok["verdict"]) == (True, "certified")
    assert ok["checks"]["linkage_bound"]["top1"] == 0.2
    # 0.21 > 1/5, though 1/5 + the seed attacker's 0.05 would have passed it
    refused = check_sweep_point(*args, **kw, linkage=_linkage(0.21, 5), strict=False)
    verdict = (
        "linkage bound: strong attacker's top-1 21.0 % > bound 1/5 = 20.0 % (95 % interval "
        "10.0 % to 20.0 %, 400 series)"
    )
    assert (refused["passed"], refused["verdict"]) == (False, f"refused: {verdict}")
    # the claims checked before the failed one keep their figures
    assert refused["checks"]["equivalence_classes"]["smallest"] >= 5
    assert "linkage_bound" not in refused["checks"]
    with pytest.raises(ReleaseCheckError) as err:
        check_sweep_point(*args, **kw, linkage=_linkage(0.21, 5))
    assert str(err.value) == verdict


def test_a_refused_release_is_withheld_and_a_certified_one_published(point, tmp_path):
    from mimic_deid.deid import publish_release

    staged = tmp_path / "staged.parquet"
    staged.write_bytes(b"PAR1 tables")
    public = tmp_path / "release"
    assert publish_release({"passed": True, "verdict": "certified"}, {"series.parquet": staged},
                           public) == ["series.parquet"]  # fmt: skip
    assert (public / "series.parquet").read_bytes() == b"PAR1 tables"
    verdict = "refused: linkage bound: strong attacker's top-1 21.0 % > bound 1/5 = 20.0 %"
    assert publish_release({"passed": False, "verdict": verdict}, {"series.parquet": staged},
                           public) == ["refused.txt"]  # fmt: skip
    assert [q.name for q in public.iterdir()] == ["refused.txt"]
    assert (public / "refused.txt").read_text() == verdict + "\n"


def test_a_release_its_card_refuses_publishes_the_verdict_and_card_only(tmp_path):
    """A release its check certified, refused by its card (a pairing above 1/k), is withheld:
    refused.txt with the card's verdict, and the card; no data, no dictionary."""
    from mimic_deid.core.atomic import write_json
    from mimic_deid.deid import publish_release

    staged = tmp_path / "staged.parquet"
    staged.write_bytes(b"PAR1 tables")
    verdict = (
        "refused: pairing: with stays_50_10_range_adhoc-it50-ns0.01: attacker 'shape' pairs "
        "35.0 % (95 % interval 33.0 to 37.0 %) of the series > bound 1/10 = 10.0 %"
    )
    card = tmp_path / "card.json"
    write_json({"passed": False, "verdict": verdict, "check_passed": True,
                "check_verdict": "certified"}, card)  # fmt: skip
    public = tmp_path / "release"
    names = publish_release({"passed": True, "verdict": "certified"},
                            {"series.parquet": staged}, public, card,
                            {"dictionary.md": "the columns"})  # fmt: skip
    assert names == ["card.json", "refused.txt"]
    assert sorted(q.name for q in public.iterdir()) == ["card.json", "refused.txt"]
    assert (public / "refused.txt").read_text() == verdict + "\n"
    assert (public / "card.json").read_bytes() == card.read_bytes()
    # the card certifies: the data, the dictionary and the card
    write_json({"passed": True, "verdict": "certified"}, card)
    names = publish_release({"passed": True, "verdict": "certified"},
                            {"series.parquet": staged}, public, card,
                            {"dictionary.md": "the columns"})  # fmt: skip
    assert names == ["card.json", "dictionary.md", "series.parquet"]
    # a card without a verdict is named
    write_json({"release": "stays"}, card)
    with pytest.raises(InputDataError) as err:
        publish_release({"passed": True, "verdict": "certified"}, {}, public, card)
    assert str(err.value) == (
        f"card {card}: missing key(s) ['passed', 'verdict']; expected the release's verdict"
    )


def test_map_classes_runs_each_class_once_in_order(point):
    lengths = map_classes(_length, point["classes"], label="test")
    assert lengths == [c.length for c in point["classes"]]
    assert map_classes(_length, point["classes"], label="test", threads=2) == lengths


def _length(cls):
    return cls.length


def test_privacy_evaluation_of_an_unchanged_release_is_the_baseline(point):
    p = point
    base_series, base_summary = baseline_disagreement(p["classes"], p["dims"], FEATURES)
    assert list(base_series.columns) == [
        "group", "class_length", "auc", "first_threshold", "first_disagreement"
    ]  # fmt: skip
    unchanged = released_by_key(
        p["series"].merge(p["pseudonyms"], on="icustay_id").drop(columns="icustay_id"),
        p["pseudonyms"],
        p["durations"],
    )
    unchanged = unchanged[unchanged["hour"] < unchanged["class_length"]]
    released = list(iter_class_arrays(unchanged, p["dims"]))
    assert len(released) == len(p["classes"])


def test_privacy_evaluation_of_the_release(point):
    p = point
    released = released_by_key(p["public"], p["pseudonyms"], p["durations"])
    per_series, summary, linkage = evaluate_release(
        p["classes"],
        list(iter_class_arrays(released, p["dims"])),
        p["pseudonyms"],
        p["dims"],
        FEATURES,
        standardise=False,
        linkage_errors=[0.0, 0.1],
        seed=7,
    )
    assert set(per_series["pseudonym"]) == set(p["index"]["pseudonym"])
    assert linkage["baseline"]["0"]["top1"] == pytest.approx(1.0)
    assert linkage["release"]["0"]["top1"] < 0.6
    assert set(summary["class_length"]) == {c.length for c in p["classes"]}


def test_tuning_table_and_grid_summary(point):
    p = point
    table = tuning_table(p["classes"], p["dims"], FEATURES, label=ADHOC, seed=3)
    assert list(table.columns) == [
        "duration",
        "series",
        "unfeasibility",
        "distortion",
        "iterations",
    ]
    assert table["duration"].iloc[-1] == "All classes"
    grid = tuning_grid_summary(
        [ADHOC, "adhoc-it1-ns0.01"], [table, table.assign(unfeasibility=9.0)]
    )
    assert list(grid["method"]) == [ADHOC, "adhoc-it1-ns0.01"]
    assert grid.columns[:3].tolist() == ["method", "iterations", "noise_sd"]


def test_sweep_table_has_one_row_per_point(point):
    point_wc = {"dk": 10, "fk": 5, "heuristic": "range", "method": ADHOC}
    per_series = pd.DataFrame({"auc": [0.1, 0.2], "first_disagreement": [0.0, 1.0]})
    linkage = {"release": {"0": {"top1": 0.1, "top5": 0.5}}}
    utility = pd.DataFrame(
        {"setting": ["orig. / orig."], "split": ["test"], "roc_auc": [0.8], "pr_auc": [0.4]}
    )
    table = sweep_table(
        [point_wc, dict(point_wc, fk=6)],
        duration={10: point["duration_summary"]},
        baseline={10: per_series},
        method_summary=[point["summary"]] * 2,
        disagreement=[per_series] * 2,
        linkage=[linkage] * 2,
        utility=[utility] * 2,
    )
    assert list(table["fk"]) == [5, 6]
    assert table.loc[0, "release_top1_pct_err0"] == pytest.approx(10.0)
    assert table.loc[0, "test_roc_auc_orig_orig_released"] == 0.8


def test_sweep_overview_shows_the_compared_columns_rounded():
    summary = pd.DataFrame(
        {
            "dk": [50],
            "fk": [10],
            "heuristic": ["range"],
            "method": [ADHOC],
            "records_lost_pct_mean": [12.3456],
            "unfeasibility_mean": [0.012345],
            "distortion_mean": [3.14159],
            "release_top1_pct_err0": [6.66666],
            "release_top1_pct_err5": [4.0],
            "strong_release_top1_pct_err0": [11.9],
            "strong_top1_ci_low_pct": [9.04],
            "strong_top1_ci_high_pct": [15.2],
            "strong_bound_top1_pct": [10.0],
            "verdict_stays": ["refused: linkage bound: ..."],
            "test_roc_auc_orig_orig_all": [0.8813],
            "test_roc_auc_orig_orig_released": [0.8412],
            "test_roc_auc_deid_orig": [0.8012],
            "utility_cross": ["gap_filled"],
            # written by the sweep summary's utility_columns; the overview only shows them
            "delta_roc_auc": [0.8012 - 0.8412],
            "delta_roc_auc_all": [0.8012 - 0.8813],
        }
    )
    out = sweep_overview(summary)
    assert list(out.columns) == [
        "method", "dk", "fk", "heuristic", "records lost %", "unfeasibility", "distortion",
        "re-id top-1 % (seed attacker)", "re-id top-1 % (strong attacker)",
        "strong top-1 95 % interval, low %", "strong top-1 95 % interval, high %",
        "promised bound 1/k %", "verdict (stays)", "ROC-AUC orig./orig., all variables", "ROC-AUC orig./orig., released variables",
        "ROC-AUC de-id. / orig.", "original side of the cross settings",
        "ΔROC-AUC de-id./orig. against orig./orig., released variables",
        "ΔROC-AUC de-id./orig. against orig./orig., all variables",
    ]  # fmt: skip
    assert out.iloc[0].tolist() == [
        ADHOC, 50, 10, "range", 12.3, 0.0123, 3.14, 6.67, 11.9, 9.04, 15.2, 10.0,
        "refused: linkage bound: ...", 0.881, 0.841, 0.801,
        "gap_filled", -0.04, -0.0801,
    ]  # fmt: skip


def test_a_release_missing_a_whole_group_is_refused_first_with_the_sizes(point):
    """Issue 48: a group (here a split of 7 series) of which nothing is published refuses the
    release before any other claim, naming the split, its series, the parameter and what fits;
    check.json carries the groups for the card."""
    p = point
    classes = p["durations"].assign(group="train")
    extra = pd.DataFrame(
        {
            "icustay_id": np.arange(10**8, 10**8 + 7),
            "group": "test",
            "split": "test",
            "length": 30,
            "class_length": 0,
        }
    ).astype(classes.dtypes.to_dict())
    classes = pd.concat([classes, extra], ignore_index=True)
    result = check_sweep_point(
        p["public"], p["index"], classes, p["targets"], p["pseudonyms"],
        dk=10, fk=5, group_by_split=False, strict=False,
    )  # fmt: skip
    reason = (
        "split 'test': 7 series, fewer than deid.dk = 10 (a duration class needs dk series of "
        "one group); the largest dk that fits: 7"
    )
    assert result["passed"] is False
    assert result["verdict"] == f"refused: not formed at the configured sizes: {reason}"
    assert result["unpublished"] == [
        {"group": "test", "series": 7, "parameter": "deid.dk", "value": 10, "largest": 7,
         "reason": reason}
    ]  # fmt: skip
    with pytest.raises(ReleaseCheckError) as err:  # config strict: the run stops, same words
        check_sweep_point(
            p["public"], p["index"], classes, p["targets"], p["pseudonyms"],
            dk=10, fk=5, group_by_split=False,
        )  # fmt: skip
    assert str(err.value) == f"not formed at the configured sizes: {reason}"
