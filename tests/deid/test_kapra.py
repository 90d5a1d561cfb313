"""KAPRA and PC-KAPRA (seed 001): representations, worked examples, (k,P) invariants, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sax_reference
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from mimic_deid.config import validate_config
from mimic_deid.core.errors import ConfigError, InputDataError, ReleaseCheckError
from mimic_deid.deid import apply_method, class_arrays, feature_spec, sax
from mimic_deid.deid.kapra import (
    check_kp_groups,
    form_k_groups,
    impute,
    integer_centroids,
    kapra_pattern_groups,
    kp_anonymise,
    kp_summary,
    run_kapra,
    split_p_groups,
)
from mimic_deid.deid.methods import method_label, parse_method_label, run_method

ALGORITHMS = ("kapra", "pc-kapra")


def letters_to_codes(*words: str) -> np.ndarray:
    return np.array([[ord(c) - ord("A") for c in w] for w in words])


# --- representations (seed §3.1, §3.4) -------------------------------------------------------


def test_level_4_lookup_table_matches_the_seed_figure():
    table = sax.lookup_table(4)
    # Fig. 3.2: 0.67 and 1.34 (the seed adds the two rounded 0.67s; exact value 1.349)
    expected = np.array(
        [[0, 0, 0.67, 1.34], [0, 0, 0, 0.67], [0.67, 0, 0, 0], [1.34, 0.67, 0, 0]], dtype=float
    )
    np.testing.assert_allclose(table, expected, atol=0.01)
    assert table[0, 3] == pytest.approx(2 * norm.ppf(0.75))


def test_breakpoints_are_the_normal_quantiles_for_every_level():
    for level in range(1, 27):
        expected = norm.ppf(np.arange(1, level) / level)
        np.testing.assert_allclose(sax.breakpoints(level), expected, rtol=0, atol=1e-12)


def test_acad_and_dada_average_to_cbcc():
    codes = letters_to_codes("ACAD", "DADA")
    centroid = integer_centroids(codes, np.array([0, 0]), 1)
    assert sax.words(centroid)[0].upper() == "CBCC"


def test_symbol_midpoints_are_probability_midpoints_inside_their_interval():
    for level in (2, 4, 10, 26):
        t = sax_reference.midpoints(level)
        np.testing.assert_allclose(t, norm.ppf((2 * np.arange(1, level + 1) - 1) / (2 * level)))
        np.testing.assert_array_equal(sax.sax_codes(t, level), np.arange(level))
    np.testing.assert_allclose(
        sax_reference.midpoints(4), [-1.1503, -0.3186, 0.3186, 1.1503], atol=1e-4
    )


def test_paa_is_the_segment_mean_and_weights_straddling_records():
    x = np.array([[1.0, 2, 3, 4, 5, 6], [0, 0, 0, 0, 6, 6]])
    np.testing.assert_allclose(sax.paa(x, 3), [[1.5, 3.5, 5.5], [0, 0, 6]])
    np.testing.assert_allclose(sax.paa(np.array([1.0, 2, 3, 4, 5]), 2), [1.8, 4.2])
    np.testing.assert_allclose(sax.paa(x, 6), x)


def test_znormalise_and_flat_series():
    z = sax.znormalise(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]))
    np.testing.assert_allclose(z[0], [-1.224744871, 0, 1.224744871])
    np.testing.assert_array_equal(z[1], [0, 0, 0])


def test_mindist_squares_the_cells_as_lin_et_al():
    a, b = letters_to_codes("ACAD", "DADA")
    cells = sax.lookup_table(4)[a, b]
    assert sax_reference.mindist(a, b, 4, 16) == pytest.approx(
        np.sqrt(16 / 4) * np.sqrt(np.sum(cells**2))
    )
    assert sax_reference.mindist(a, a, 4, 16) == 0.0
    pairwise = sax_reference.mindist(
        letters_to_codes("ACAD", "DADA")[:, None], letters_to_codes("AAAA"), 4, 8
    )
    assert pairwise.shape == (2, 1)


def test_ivl_tivl_and_tpl_follow_their_equations():
    assert sax.ivl(np.array([0.0, 0.0]), np.array([3.0, 4.0])) == pytest.approx(np.sqrt(12.5))
    x = np.array([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0], [1.0, 3.0]])
    assert sax_reference.tivl(x, np.array([0, 0, 1, 1])) == pytest.approx(
        (np.sqrt(12.5) + np.sqrt(2)) / 2
    )
    orig = np.array([[0, 1], [2, 3]])
    assert sax_reference.tpl(orig, 4, orig, 4) == 0.0
    t4, t1 = sax_reference.midpoints(4), sax_reference.midpoints(1)
    expected = 2 / 2 * np.sum((t1[0] - t4[orig]) ** 2)
    assert sax_reference.tpl(orig, 4, np.zeros_like(orig), 1) == pytest.approx(expected)


# --- algorithm pieces -----------------------------------------------------------------------


def test_kapra_tree_keeps_identical_patterns_in_one_group():
    base = np.sin(np.linspace(0, 3, 12))
    x = np.vstack([base + 0.01 * i for i in range(6)] + [-base + 0.01 * i for i in range(6)])
    groups, codes, levels, orig = kapra_pattern_groups(x, P=3, paa_size=4, max_level=6)
    assert len(np.unique(groups)) == 2
    np.testing.assert_array_equal(groups[:6], groups[0])
    assert (orig[:6] == orig[0]).all() and (codes[:6] == codes[0]).all()
    assert (levels >= 2).all()


def test_top_down_split_gives_p_groups_of_p_to_2p_minus_1():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(37, 5))
    p = split_p_groups(x, np.zeros(37, dtype=np.int64), P=4)
    sizes = np.bincount(p)
    assert sizes.min() >= 4 and sizes.max() <= 7 and sizes.sum() == 37


def test_group_formation_merges_nearest_p_groups():
    x = np.array([[0.0], [0.1], [10.0], [10.1], [0.2], [0.3], [10.2], [10.3], [5.0], [5.1]])
    k_groups = form_k_groups(x, np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4]), k=4)
    # P-groups near 0 and near 10 pair up; the leftover near 5 joins the one it widens least
    low, high = k_groups[0], k_groups[2]
    assert low != high
    np.testing.assert_array_equal(k_groups, [low, low, high, high, low, low, high, high, low, low])


def test_impute_rules():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, np.nan]])
    filled, n = impute(x, "carry", "kapra", "heart_rate")
    np.testing.assert_array_equal(filled, [[1, 1, 3], [2, 2, 2]])
    np.testing.assert_array_equal(n, [1, 2])
    filled, _ = impute(x, "mean", "kapra", "heart_rate")
    np.testing.assert_array_equal(filled, [[1, 2, 3], [1, 2, 3]])


# --- (k,P) invariants (hypothesis) ----------------------------------------------------------


@st.composite
def kp_cases(draw):
    P = draw(st.integers(1, 4))
    k = draw(st.integers(P, 8))
    n = draw(st.integers(k, 40))
    length = draw(st.integers(2, 10))
    paa_size = draw(st.integers(1, length))
    level = draw(st.integers(2, 8))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, length)).cumsum(axis=1) + rng.integers(0, 3, size=(n, 1))
    if draw(st.booleans()):  # ties and flat series
        x = np.round(x)
    return x, k, P, paa_size, level, seed


def assert_kp_anonymous(x, res, k, P):
    k_sizes = np.bincount(res.k_group)
    assert k_sizes.min() >= k
    p_sizes = np.bincount(res.p_group)
    assert p_sizes.min() >= P and (P == 1 or p_sizes.max() < 2 * P)
    frame = pd.DataFrame({"k": res.k_group, "lv": res.levels, "w": sax.words(res.codes)})
    share = frame.groupby(["k", "lv", "w"]).size()
    assert share.min() >= P
    # breach probability of a pattern link: 1 / (series of the k-group with that word) <= 1/P
    assert (1.0 / share).max() <= 1.0 / P
    # every P-group lies in one k-group and publishes one word
    per_p = pd.DataFrame({"p": res.p_group, "k": res.k_group, "w": sax.words(res.codes)})
    assert (per_p.groupby("p")[["k", "w"]].nunique() == 1).all().all()
    # the envelope holds every member and is shared by its k-group
    assert (res.lo <= x).all() and (x <= res.hi).all()
    release = pd.DataFrame(res.release).assign(k=res.k_group)
    assert (release.groupby("k").nunique() == 1).all().all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kp_cases(), st.sampled_from(ALGORITHMS))
def test_every_grouping_is_k_p_anonymous(case, algorithm):
    x, k, P, paa_size, level, seed = case
    res = kp_anonymise(x, k, P, paa_size, level, algorithm, np.random.default_rng(seed))
    assert_kp_anonymous(x, res, k, P)
    assert res.orig_codes.shape == (x.shape[0], paa_size)


@settings(max_examples=25, deadline=None)
@given(kp_cases(), st.sampled_from(ALGORITHMS))
def test_grouping_is_deterministic_with_a_seed(case, algorithm):
    x, k, P, paa_size, level, seed = case
    one = kp_anonymise(x, k, P, paa_size, level, algorithm, np.random.default_rng(seed))
    two = kp_anonymise(x, k, P, paa_size, level, algorithm, np.random.default_rng(seed))
    for field in ("k_group", "p_group", "codes", "levels", "lo", "hi"):
        np.testing.assert_array_equal(getattr(one, field), getattr(two, field))


def test_kapra_does_not_draw_from_the_generator():
    x = np.random.default_rng(0).normal(size=(30, 8))
    one = kp_anonymise(x, 6, 3, 4, 5, "kapra", np.random.default_rng(1))
    two = kp_anonymise(x, 6, 3, 4, 5, "kapra", np.random.default_rng(2))
    np.testing.assert_array_equal(one.k_group, two.k_group)


# --- errors (issue point 8) -----------------------------------------------------------------

X20 = np.random.default_rng(5).normal(size=(20, 8))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(k=3, P=5), "kapra: k (fk) = 3 is smaller than P = 5; (k,P)-anonymity needs k >= P"),
        (dict(P=0), "kapra parameter 'P' must be an integer >= 1, got 0"),
        (
            dict(paa_size=9),
            "kapra parameter 'paa' = 9 exceeds the series length of the duration class of 8 h; "
            "choose paa <= 8",
        ),
        (
            dict(level=27),
            "kapra parameter 'level' (SAX alphabet size) must be in [2, 26] (one letter a-z per "
            "symbol), got 27",
        ),
        (
            dict(level=1),
            "kapra parameter 'level' (SAX alphabet size) must be in [2, 26] (one letter a-z per "
            "symbol), got 1",
        ),
    ],
)
def test_bad_parameters_name_the_parameter(kwargs, message):
    args = dict(k=5, P=2, paa_size=4, level=4) | kwargs
    with pytest.raises(ConfigError) as err:
        kp_anonymise(X20, algorithm="kapra", **args)
    assert str(err.value) == message


def test_class_smaller_than_k_is_an_input_error():
    with pytest.raises(InputDataError) as err:
        kp_anonymise(X20[:4], 5, 2, 4, 4, "pc-kapra", np.random.default_rng(0))
    assert str(err.value) == "pc-kapra: the duration class of 8 h has 4 series, fewer than k = 5"


FEATURES = {"heart_rate": ["mean", "var", "min", "max"], "glucose": ["mean"]}
DIMS = ["heart_rate", "glucose", "height"]


def class_array(n=24, length=8, seed=0, null=False):
    rng = np.random.default_rng(seed)
    X = np.stack(
        [
            80 + rng.normal(0, 8, (n, length)).cumsum(axis=1),
            120 + rng.normal(0, 20, (n, length)),
            np.full((n, length), 170.0),
        ],
        axis=2,
    )
    if null:
        X[3, 2:5, 0] = np.nan
        X[:, :, 1] = np.nan
    return X


def test_null_records_without_an_imputation_rule_name_the_variable():
    spec = feature_spec(FEATURES, DIMS)
    X = class_array(null=True)
    params = dict(k=5, P=2, paa=4, level=6, impute="none")
    with pytest.raises(InputDataError) as err:
        run_kapra(X, np.full((24, spec.n_features), np.nan), spec, params, None)
    assert str(err.value) == (
        "kapra: variable 'heart_rate' of the duration class of 8 h has 3 null record(s) in 1 "
        "series and parameter 'impute' is 'none'; choose 'carry' or 'mean'"
    )


def test_null_records_with_a_rule_are_imputed_counted_and_unobserved_variables_stay_null():
    spec = feature_spec(FEATURES, DIMS)
    X = class_array(null=True)
    params = dict(k=5, P=2, paa=4, level=6, impute="carry")
    res = run_kapra(X, np.full((24, spec.n_features), np.nan), spec, params, None)
    assert res.detail["imputed_heart_rate"].tolist() == [0, 0, 0, 3] + [0] * 20
    assert np.isnan(res.X[:, :, 1]).all()  # glucose never observed in the class
    assert (res.detail["k_group_glucose"] == -1).all()
    np.testing.assert_array_equal(res.X[:, :, 2], X[:, :, 2])  # no feature: untouched


# --- registry, config and check --------------------------------------------------------------


def test_labels_round_trip_with_a_hyphenated_name():
    label = method_label("pc-kapra", dict(P=5, paa=10, level=10, impute="carry"))
    assert label == "pc-kapra-P5-paa10-sax10-carry"
    assert parse_method_label(label) == ("pc-kapra", dict(P=5, paa=10, level=10, impute="carry"))
    assert parse_method_label("kapra-P2-paa4-sax6-none")[0] == "kapra"


def test_run_method_needs_fk_for_a_kp_method():
    spec = feature_spec(FEATURES, DIMS)
    with pytest.raises(ConfigError) as err:
        run_method("kapra-P2-paa4-sax6-none", class_array(), np.zeros((24, 5)), spec, None)
    assert (
        str(err.value) == "release method 'kapra' takes its k from the feature k (fk): none given"
    )


def config_with(methods, fk=(10,)):
    config = yaml.safe_load(open("config/config.yaml"))
    config["deid"]["methods"] = methods
    config["deid"]["fk"] = list(fk)
    return config


@pytest.mark.parametrize(
    ("methods", "message"),
    [
        (
            {"kapra": {"P": [11]}},
            "config parameters 'deid/methods/kapra/P' and 'deid/fk': every P must be <= every fk "
            "(k < P: a k-group is made of whole P-groups), got P [11] and fk [10]",
        ),
        (
            {"pc-kapra": {"P": [0]}},
            "config parameter 'deid/methods/pc-kapra/P/0': 0 is less than the minimum of 1",
        ),
        (
            {"kapra": {"level": [27]}},
            "config parameter 'deid/methods/kapra/level/0': 27 is greater than the maximum of 26",
        ),
        (
            {"kapra": {"level": [1]}},
            "config parameter 'deid/methods/kapra/level/0': 1 is less than the minimum of 2",
        ),
        (
            {"kapra": {"impute": ["zero"]}},
            "config parameter 'deid/methods/kapra/impute/0': 'zero' is not one of "
            "['none', 'carry', 'mean']",
        ),
    ],
)
def test_config_errors_name_the_parameter(methods, message):
    with pytest.raises(ConfigError) as err:
        validate_config(config_with(methods), "config/schema.yaml", variables=False)
    assert str(err.value) == message


def test_config_defaults_follow_the_seed():
    config = validate_config(
        config_with({"kapra": {}, "pc-kapra": {}}), "config/schema.yaml", variables=False
    )
    expected = {"P": [5], "paa": [10], "level": [10], "impute": ["none"]}
    assert config["deid"]["methods"] == {"kapra": expected, "pc-kapra": expected}


def release_of(label, n=30, fk=5, seed=0, threads=1, outcomes=None, ell=1):
    """A two-class release through ``label``: (per_series, public series, pseudonyms)."""
    rng = np.random.default_rng(seed)
    rows = []
    for key in range(n):
        length = 8 if key < n // 2 else 6
        rows.append(
            pd.DataFrame(
                {
                    "icustay_id": 100 + key,
                    "hour": np.arange(length, dtype=np.int32),
                    "heart_rate": 80 + rng.normal(0, 5, length).cumsum(),
                    "glucose": 120 + rng.normal(0, 20, length),
                }
            )
        )
    series = pd.concat(rows, ignore_index=True)
    lengths = series.groupby("icustay_id").size()
    durations = pd.DataFrame(
        {
            "icustay_id": lengths.index,
            "group": "all",
            "split": "train",
            "length": lengths.to_numpy(np.int32),
            "class_length": lengths.to_numpy(np.int32),
        }
    )
    classes, dims = class_arrays(series, durations, fill_missing=True)
    targets = pd.DataFrame({"icustay_id": lengths.index})  # no Mondrian target needed
    spec = feature_spec(FEATURES, dims)
    for name in spec.names:
        targets[f"target_{name}"] = np.nan
    perturbed, per_series, summary = apply_method(
        classes,
        dims,
        targets,
        FEATURES,
        label=label,
        seed=seed,
        fk=fk,
        threads=threads,
        outcomes=outcomes,
        ell=ell,
    )
    pseudonyms = pd.DataFrame(
        {"icustay_id": lengths.index, "pseudonym": [f"p{i}" for i in range(n)]}
    )
    public = perturbed.merge(pseudonyms, on="icustay_id")[["pseudonym", "hour", *dims]]
    return per_series, public, pseudonyms, summary


@pytest.mark.parametrize("label", ["kapra-P2-paa3-sax6-none", "pc-kapra-P2-paa3-sax6-none"])
def test_apply_method_writes_groups_that_the_check_accepts(label):
    per_series, public, pseudonyms, summary = release_of(label)
    assert {"k_group_heart_rate", "word_glucose", "lo_heart_rate"} <= set(per_series.columns)
    assert summary["imputed_records"] == {"heart_rate": 0, "glucose": 0}
    assert set(summary["kp"]["variables"]) == {"heart_rate", "glucose"}
    assert 0.0 <= summary["kp"]["joint_unique_pct"] <= 100.0
    result = check_kp_groups(per_series, public, pseudonyms, k=5, P=2)
    assert result["smallest_k_group"] >= 5 and result["smallest_word_share"] >= 2
    assert result["variables"] == ["glucose", "heart_rate"] and result["breach_bound"] == 0.5


def test_check_fails_on_a_small_k_group_a_rare_word_and_differing_values():
    per_series, public, pseudonyms, _ = release_of("kapra-P2-paa3-sax6-none")
    small = per_series.copy()
    small.loc[0, "k_group_heart_rate"] = 99
    with pytest.raises(ReleaseCheckError) as err:
        check_kp_groups(small, public, pseudonyms, k=5, P=2)
    assert str(err.value) == (
        "(k,P) groups: variable 'heart_rate': 1 k-group(s) under k=5, smallest 1 series"
    )
    rare = per_series.assign(word_glucose="abc", sax_level_glucose=3)
    rare.loc[0, "word_glucose"] = "zzz"
    with pytest.raises(ReleaseCheckError) as err:
        check_kp_groups(rare, public, pseudonyms, k=5, P=2)
    assert str(err.value) == (
        "(k,P) groups: variable 'glucose': 1 pattern word(s) shared by fewer than P=2 series "
        "of their k-group, smallest 1"
    )
    moved = public.copy()
    moved.loc[0, "heart_rate"] += 1.0
    with pytest.raises(ReleaseCheckError) as err:
        check_kp_groups(per_series, moved, pseudonyms, k=5, P=2)
    assert str(err.value) == (
        "(k,P) groups: variable 'heart_rate': series of one k-group publish different values "
        "(the release is not the k-group's envelope midpoint)"
    )
    group = per_series.loc[per_series["k_group_heart_rate"] == 0, ["icustay_id", "class_length"]]
    first = group[group["class_length"] == group["class_length"].iloc[0]]
    members = pseudonyms[pseudonyms["icustay_id"].isin(first["icustay_id"])]["pseudonym"]
    shifted = public.copy()
    shifted.loc[shifted["pseudonym"].isin(members), "heart_rate"] += 1.0
    with pytest.raises(ReleaseCheckError) as err:
        check_kp_groups(per_series, shifted, pseudonyms, k=5, P=2)
    n_values = int(shifted["pseudonym"].isin(members).sum())
    assert str(err.value) == (
        f"(k,P) groups: variable 'heart_rate': {n_values} released value(s) differ from their "
        "k-group's envelope midpoint"
    )


def test_blocked_farthest_pair_and_nearest_centroid_match_the_whole_computation(monkeypatch):
    from mimic_deid.deid.kapra import groups as kapra

    rng = np.random.default_rng(11)
    xs = rng.normal(size=(57, 6))
    d2 = ((xs[:, None, :] - xs[None, :, :]) ** 2).sum(axis=-1)
    whole = np.unravel_index(int(np.argmax(d2)), d2.shape)
    x = rng.normal(size=(60, 12)).cumsum(axis=1)
    before = kp_anonymise(x, 6, 3, 6, 8, "pc-kapra", np.random.default_rng(4))
    monkeypatch.setattr(kapra, "BLOCK_ELEMENTS", 7)
    assert kapra._farthest_pair(xs) == (int(whole[0]), int(whole[1]))
    after = kp_anonymise(x, 6, 3, 6, 8, "pc-kapra", np.random.default_rng(4))
    np.testing.assert_array_equal(before.k_group, after.k_group)
    np.testing.assert_array_equal(before.codes, after.codes)


def test_kp_summary_counts_groups_value_loss_and_joint_uniqueness():
    env = {"lo_a": [[0.0, 0.0]] * 2 + [[1.0, 1.0]] * 2, "hi_a": [[3.0, 4.0]] * 2 + [[2.0, 2.0]] * 2}
    frame = pd.DataFrame({"group": "all", "class_length": 2, "k_group_a": [0, 0, 1, 1], **env})
    frame = frame.assign(lo_b=frame["lo_a"], hi_b=frame["hi_a"])
    crossed = kp_summary(frame.assign(k_group_b=[0, 1, 0, 1]))
    assert crossed["joint_unique_pct"] == 100.0
    assert crossed["variables"]["a"] == {"k_groups": 2, "tivl": (np.sqrt(12.5) + 1.0) / 2}
    aligned = kp_summary(frame.assign(k_group_b=[0, 0, 1, 1]))
    assert aligned["joint_unique_pct"] == 0.0


def test_kapra_suppresses_nothing_the_last_bad_series_borrow_from_a_leaf_that_can_spare():
    ramp = np.arange(8.0)
    x = np.vstack([ramp + i for i in range(6)] + [ramp[::-1], np.abs(ramp - 3.5)])
    groups, codes, levels, orig = kapra_pattern_groups(x, P=3, paa_size=4, max_level=5)
    # the two odd series (< P) and the one ramp nearest their mean form a group of P, whose
    # words agree at level 1 only; the other five ramps keep their word at the top level
    odd = groups == groups[6]
    assert odd[7] and odd.sum() == 3 and (levels[odd] == 1).all() and (codes[odd] == 0).all()
    assert len(set(groups[~odd])) == 1 and (levels[~odd] == 5).all()
    assert (codes[~odd] == orig[0]).all() and (orig[:6] == orig[0]).all()


def test_kapra_bad_series_join_a_leaf_that_cannot_spare_and_generalise_it():
    ramp = np.arange(8.0)
    rises = [ramp + i for i in range(3)]
    falls = [ramp[::-1] + 2 * i for i in range(3)]
    x = np.vstack(rises + falls + [np.abs(ramp - 3.5), np.abs(ramp - 3.5) * -1 + 50])
    groups, _, levels, _ = kapra_pattern_groups(x, P=3, paa_size=4, max_level=5)
    # two leaves of exactly P: neither keeps P after lending one, so the two odd series join
    # the one whose envelope they grow least, and that whole leaf shares a word at level 1 only
    joined = groups == groups[6]
    assert joined[7] and joined.sum() == 5 and (levels[joined] == 1).all()
    assert (levels[~joined] > 1).all() and len(set(groups[~joined])) == 1


def test_release_is_identical_with_one_or_two_worker_processes():
    one = release_of("pc-kapra-P2-paa3-sax6-none", threads=1)
    two = release_of("pc-kapra-P2-paa3-sax6-none", threads=2)
    pd.testing.assert_frame_equal(one[1], two[1])
    pd.testing.assert_frame_equal(one[0], two[0])


def test_k_groups_are_merged_until_each_holds_ell_outcomes():
    """Mutant: without the merge a k-group of one outcome is published."""
    from mimic_deid.deid.kapra import diverse_k_groups, kp_anonymise

    rng = np.random.default_rng(5)
    x = np.cumsum(rng.normal(size=(60, 12)), axis=1)
    plain = kp_anonymise(x, 5, 2, 4, 6).k_group
    outcome = (x[:, -1] > np.quantile(x[:, -1], 0.8)).astype(int)[:, None]  # tied to the values
    per_group = pd.Series(outcome[:, 0]).groupby(plain).nunique()
    assert (per_group < 2).any()  # the plain grouping discloses some outcomes
    merged = diverse_k_groups(x, plain, outcome, 2)
    assert (pd.Series(outcome[:, 0]).groupby(merged).nunique() >= 2).all()
    # merging joins whole k-groups: each former k-group lies in one merged group
    assert (pd.Series(merged).groupby(plain).nunique() == 1).all()
    assert np.bincount(merged).min() >= 5


def test_a_labelled_release_gets_diverse_k_groups_through_apply_method():
    per_series, _, _, _ = release_of("kapra-P2-paa3-sax6-none")
    keys = per_series["icustay_id"].to_numpy()
    labels = pd.DataFrame({"icustay_id": keys, "mortality": (keys % 7 == 0).astype(int)})
    diverse, _, _, _ = release_of("kapra-P2-paa3-sax6-none", outcomes=labels, ell=2)
    frame = diverse.merge(labels, on="icustay_id")
    for column in ("k_group_heart_rate", "k_group_glucose"):
        assert (frame.groupby(["group", "class_length", "cell", column])["mortality"]
                .nunique().min() >= 2), column  # fmt: skip
