"""The tabular library (seed 003): hierarchies, OLA / Inverse OLA against brute force,
information loss, m-concealing, D(k, beta, eps) against a direct binomial sum, the
demographics table, uniqueness, epsilon-safe LA, and bad input."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from synthetic_tabular_reference import tabular_sources
from tabular_reference import (
    brute_force_inverse,
    brute_force_ola,
    epsilon_safe_la,
    exponential_mechanism,
)

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.core.seeding import derive_rng
from mimic_deid.tabular import (
    DEMOGRAPHIC_QIS,
    Encoded,
    Lattice,
    LossModel,
    check_k_values,
    class_sizes,
    concealing_grid,
    demographic_uniqueness,
    demographics,
    dps_delta,
    dps_summary,
    encode,
    epsilon_la_grid,
    inverse_grid,
    inverse_ola,
    joint_risk,
    k_within,
    load_hierarchies,
    m_concealing,
    minimal_nodes,
    node_classes,
    node_scores,
    ola,
    ola_grid,
    procedure_columns,
    procedure_uniqueness,
    release_table,
    selection_probabilities,
    smallest_k,
    uniqueness,
)

ROOT = Path(__file__).resolve().parents[2]
HIERARCHIES = ROOT / "config" / "hierarchies.yaml"


# --------------------------------------------------------------------------- fixtures


def random_table(rng: np.random.Generator, n: int, q: int) -> tuple[pd.DataFrame, dict]:
    """A random categorical table and hierarchies of 1-3 steps per column (last: suppress)."""
    hier, cols = {}, {}
    for j in range(q):
        nv = int(rng.integers(2, 7))
        values = [f"v{j}_{i}" for i in range(nv)]
        labels, steps = values, []
        for d in range(int(rng.integers(0, 3))):
            ng = max(1, len(labels) // 2)
            groups: dict[str, list[str]] = {}
            for i, label in enumerate(labels):
                groups.setdefault(f"g{j}_{d}_{i % ng}", []).append(label)
            steps.append({"kind": "groups", "body": groups})
            labels = sorted(groups)
        steps.append({"kind": "suppress", "body": "*"})
        hier[f"c{j}"] = steps
        cols[f"c{j}"] = rng.choice(values, n, p=rng.dirichlet(np.ones(nv)))
    return pd.DataFrame(cols), hier


def synthetic_sources(subjects: int = 1500, seed: int = 3) -> dict[str, pd.DataFrame]:
    """PATIENTS / ADMISSIONS / PROCEDURES_ICD as the synthetic generator draws them."""
    return tabular_sources(subjects, seed)


@pytest.fixture(scope="module")
def sources() -> dict[str, pd.DataFrame]:
    return synthetic_sources()


@pytest.fixture(scope="module")
def hierarchies() -> dict:
    return load_hierarchies(HIERARCHIES)


# --------------------------------------------------------------------------- hierarchies


def test_shipped_hierarchies_follow_appendix_b(hierarchies):
    table = pd.DataFrame(
        {
            "yob": [1940, 1965, 1990, 2010],
            "insurance": ["Private", "Medicaid", "Self Pay", "Government"],
            "marital_status": ["MARRIED", "LIFE PARTNER", "WIDOWED", "UNKNOWN (DEFAULT)"],
            "proc_1": ["3893", "966", "0040", "9604"],
        }
    )
    enc = encode(table, list(table.columns), hierarchies)
    assert list(enc.heights) == [2, 2, 2, 2]
    assert enc.labels([1, 1, 1, 1]).to_dict("list") == {
        "yob": ["Silent generation", "Baby boomer", "Millennial", "Generation Z"],
        "insurance": ["Not public", "Public", "Not public", "Public"],
        "marital_status": ["Has partner", "Has partner", "No partner", "?"],
        "proc_1": ["3", "9", "0", "9"],
    }
    assert enc.labels([2, 2, 2, 2]).iloc[0].tolist() == [
        "Date of birth",
        "Insurance",
        "Marital status",
        "Procedure",
    ]


def test_value_not_covered_names_column_and_row_not_value(hierarchies):
    table = pd.DataFrame({"insurance": ["Private", "Crowdfunded"]})
    with pytest.raises(InputDataError) as err:
        encode(table, ["insurance"], hierarchies)
    assert str(err.value) == (
        "table, row 2: column 'insurance': a value is not covered by step 1 of hierarchy "
        "'insurance' (values are never shown in messages); the step covers '?', 'Government', "
        "'Medicaid', 'Medicare', 'Private', 'Self Pay'"
    )
    with pytest.raises(InputDataError) as err:
        encode(pd.DataFrame({"yob": [1950, 3001]}), ["yob"], hierarchies, "demographics")
    assert str(err.value) == (
        "demographics, row 2: column 'yob': a value is not covered by step 1 of hierarchy "
        "'yob' (values are never shown in messages); the step "
        "covers 'Silent generation [0, 1950]', 'Baby boomer [1951, 1980]', "
        "'Millennial [1981, 2000]', 'Generation Z [2001, 3000]'"
    )


def test_missing_qi_column_and_hierarchy_are_named(hierarchies):
    with pytest.raises(InputDataError) as err:
        encode(pd.DataFrame({"gender": ["F"]}), ["gender", "religion"], hierarchies, "demographics")
    assert str(err.value) == (
        "demographics: missing quasi-identifier column(s) ['religion']; it has ['gender']"
    )
    with pytest.raises(ConfigError) as err:
        encode(pd.DataFrame({"eye": ["blue"]}), ["eye"], {"gender": []})
    assert str(err.value) == (
        "quasi-identifier 'eye' has no hierarchy 'eye'; the hierarchies file defines ['gender']"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: {steps: []}", "hierarchy 'a' needs a non-empty list 'steps'"),
        ("a: {steps: [{cut: 1}]}", "hierarchy 'a', step 1: expected a mapping with one key of "
         "['groups', 'ranges', 'prefix', 'suppress'], got {'cut': 1}"),
        ("a: {steps: [{prefix: 0}]}", "hierarchy 'a', step 1: prefix needs an integer >= 1, got 0"),
        ("a: {steps: [{groups: {x: [1, 2], y: [2]}}]}",
         "hierarchy 'a', step 1: value '2' is in both group 'x' and group 'y'"),
        ("a: {steps: [{suppress: A}, {ranges: {x: [0, 1]}}]}",
         "hierarchy 'a', step 2: ranges are allowed on the first step only"),
        ("a: {steps: [{ranges: {x: [0, 5], y: [5, 9]}}]}",
         "hierarchy 'a', step 1: ranges 'x' and 'y' overlap"),
        ("a: {steps: [{ranges: {x: [5, 0]}}]}",
         "hierarchy 'a', step 1: range 'x' must be [low, high] with low <= high, got [5, 0]"),
    ],
)  # fmt: skip
def test_malformed_hierarchies_file(tmp_path, text, message):
    path = tmp_path / "h.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_hierarchies(path)
    assert str(err.value) == f"hierarchies file {path}: {message}"


# --------------------------------------------------------------------------- k-check, lattice


def test_class_sizes_match_a_groupby():
    rng = np.random.default_rng(0)
    for cards in ([3, 4], [50, 60, 70], [2**40, 2**30, 5]):
        codes = np.column_stack([rng.integers(0, min(c, 30), 500) for c in cards])
        inverse, sizes = class_sizes(codes, cards)
        ref = pd.DataFrame(codes).groupby(list(range(len(cards))))[0].transform("size")
        np.testing.assert_array_equal(sizes[inverse], ref.to_numpy())
        assert sizes.sum() == 500


def test_k_within_is_the_largest_k_within_budget():
    rng = np.random.default_rng(1)
    for _ in range(200):
        sizes = rng.integers(1, 12, rng.integers(1, 15))
        budget = int(rng.integers(0, sizes.sum() + 1))
        brute = max(k for k in range(1, sizes.max() + 1) if sizes[sizes < k].sum() <= budget)
        assert k_within(sizes, budget) == brute


def test_minimal_nodes_of_random_monotone_predicates():
    rng = np.random.default_rng(2)
    for _ in range(200):
        lattice = Lattice(rng.integers(1, 4, rng.integers(1, 5)))
        gens = lattice.nodes[rng.choice(lattice.size, rng.integers(1, 4))]
        sat = np.array([np.any(np.all(n >= gens, axis=1)) for n in lattice.nodes])
        sat[-1] = True
        below = np.all(lattice.nodes[:, None, :] <= lattice.nodes[None, :, :], axis=2)
        minimal = [
            i
            for i in range(lattice.size)
            if sat[i] and not np.any(sat & below[:, i] & (np.arange(lattice.size) != i))
        ]
        result = minimal_nodes(lattice, lambda n, s=sat, lat=lattice: bool(s[lat.index(n)]))
        assert result.minimal == minimal
        assert result.checked <= lattice.size
        # the reversed search finds the maximal nodes of the complement (plus the bottom)
        low = ~sat
        low[0] = True
        maximal = [
            i
            for i in range(lattice.size)
            if low[i] and not np.any(low & below[i, :] & (np.arange(lattice.size) != i))
        ]
        assert (
            minimal_nodes(
                lattice, lambda n, s=low, lat=lattice: bool(s[lat.index(n)]), reverse=True
            ).minimal
            == maximal
        )


# --------------------------------------------------------------------------- OLA, Inverse OLA


@pytest.mark.parametrize("metric", ["prec", "dm_star", "entropy"])
def test_ola_is_k_anonymous_and_optimal_against_brute_force(metric):
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(5, 60))
        table, hier = random_table(rng, n, int(rng.integers(1, 5)))
        enc = encode(table, list(table.columns), hier)
        k = int(rng.integers(1, n + 1))
        max_sup = float(rng.choice([0, 1, 5, 10, 20, 50]))
        result = ola(enc, k, max_sup, metric)
        _, sizes = node_classes(enc, result.node)
        assert sizes[sizes < k].sum() == result.suppressed <= math.floor(max_sup / 100 * n)
        _, best = brute_force_ola(enc, k, max_sup, metric)
        assert result.loss == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("metric", ["prec", "dm_star", "entropy"])
def test_inverse_ola_reaches_the_brute_force_k(metric):
    rng = np.random.default_rng(4)
    for _ in range(40):
        n = int(rng.integers(5, 60))
        table, hier = random_table(rng, n, int(rng.integers(1, 5)))
        enc = encode(table, list(table.columns), hier)
        max_loss = float(rng.choice([0.0, 0.2, 0.5, 0.8, 1.0]))
        max_sup = float(rng.choice([0, 10, 50]))
        result = inverse_ola(enc, max_loss, max_sup, metric)
        assert result.loss_normalised <= max_loss + 1e-12
        assert result.k == brute_force_inverse(enc, max_loss, max_sup, metric)


def test_k_minimal_set_is_fresh_per_call():
    """The same call gives the same answer after calls with other k (no shared state)."""
    rng = np.random.default_rng(5)
    table, hier = random_table(rng, 60, 4)
    enc = encode(table, list(table.columns), hier)
    first = ola(enc, 3, 0)
    for k in (1, 20, 60, 2):
        ola(enc, k, 10)
    again = ola(enc, 3, 0)
    assert (again.node, again.k_minimal, again.checked) == (
        first.node,
        first.k_minimal,
        first.checked,
    )


def test_loss_metrics_by_hand():
    table = pd.DataFrame({"a": ["x", "x", "y", "z"], "b": ["p", "q", "q", "q"]})
    hier = {
        "a": [
            {"kind": "groups", "body": {"xy": ["x", "y"], "z": ["z"]}},
            {"kind": "suppress", "body": "*"},
        ],
        "b": [{"kind": "suppress", "body": "*"}],
    }
    losses = LossModel(encode(table, ["a", "b"], hier))
    assert losses.raw("prec", [1, 1]) == 1.5 and losses.normalised("prec", [1, 1]) == 0.75
    # classes at [1, 0]: (xy, p) x1, (xy, q) x2, (z, q) x1 -> 6; original: 1+1+1+1 = 4
    assert losses.raw("dm_star", [1, 0]) == 2.0
    # a at level 1: x (2 of 3 xy) twice, y (1 of 3) once, z (1 of 1): -(2 log2(2/3) + log2(1/3))
    assert losses.raw("entropy", [1, 0]) == pytest.approx(
        -(2 * math.log2(2 / 3) + math.log2(1 / 3))
    )
    assert losses.normalised("entropy", [2, 1]) == 1.0


# --------------------------------------------------------------------------- m-concealing


def test_m_concealing_reduces_to_k_anonymity():
    rng = np.random.default_rng(6)
    codes = rng.integers(0, 3, (80, 4))
    known = [1.0, 1.0, 0.0, 0.0]
    _, sizes = class_sizes(codes[:, :2], [3, 3])
    result = m_concealing(codes, known)
    assert result.inverse_m == pytest.approx(sizes.min())
    assert result.states == 1


def test_m_concealing_against_direct_enumeration():
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 3, (40, 3))
    probs = [1.0, 0.3, 0.05]
    risk = np.zeros(40)
    for s1 in (0, 1):
        for s2 in (0, 1):
            weight = (0.3 if s1 else 0.7) * (0.05 if s2 else 0.95)
            cols = [0] + ([1] if s1 else []) + ([2] if s2 else [])
            keys = pd.DataFrame(codes[:, cols]).astype(str).agg("-".join, axis=1)
            risk += weight / keys.map(keys.value_counts()).to_numpy()
    result = m_concealing(codes, probs, inclusion=0.5)
    np.testing.assert_allclose(result.risk, risk)
    assert result.m == pytest.approx(0.5 * risk.max())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0.5, 1.2],), "parameter 'probabilities' must lie in [0, 1], got 1.2"),
        (([0.5],), "parameter 'probabilities' must give one probability per column (2), got 1"),
        (([0.5, 0.5], 0.0), "parameter 'inclusion' must lie in (0, 1], got 0.0"),
    ],
)
def test_m_concealing_bad_parameters(args, message):
    with pytest.raises(ConfigError) as err:
        m_concealing(np.zeros((3, 2), dtype=np.int64), *args)
    assert str(err.value) == message


# --------------------------------------------------------------------------- DPS


def direct_delta(k: int, beta: float, eps: float, n_rows: int) -> float:
    gamma = (math.exp(eps) - 1 + beta) / math.exp(eps)
    lo = max(1, math.ceil(k / gamma - 1))
    return max(
        sum(binom.pmf(j, n, beta) for j in range(math.floor(gamma * n) + 1, n + 1))
        for n in range(lo, n_rows + 1)
    )


@pytest.mark.parametrize(
    ("k", "beta", "eps", "n_rows"),
    [
        (5, 0.5, 0.5, 120),
        (20, 0.1, 0.3, 300),
        (50, 0.75, 1.0, 400),
        (10, 0.9, 2.0, 150),
        (3, 0.3, 0.05, 200),
    ],
)
def test_delta_matches_a_direct_binomial_sum(k, beta, eps, n_rows):
    delta, n_max = dps_delta(k, beta, eps, n_rows)
    assert delta == pytest.approx(direct_delta(k, beta, eps, n_rows), rel=1e-9)
    assert n_max >= math.ceil(k / ((math.exp(eps) - 1 + beta) / math.exp(eps)) - 1)


def test_seed_621_k50_is_the_smallest_round_k():
    """Seed §6.2.1: over its grid (beta 0.01 .. 0.6, eps 0.1 .. 2, eps' >= 0), k = 50 is the
    smallest of the k tried with delta <= 1e-4 everywhere (the smallest integer is 45)."""
    betas = [0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    epsilons = [0.1, 0.25, 0.5, 1.0, 1.5, 2.0]
    grid, summary = dps_summary(betas, epsilons, [5, 10, 25, 50, 100], 23_236, 1e-4)
    assert summary["smallest_k_candidates"] == 50
    assert summary["smallest_k"] == 45
    assert (grid["delta_k25"] > 1e-4).any() and (grid["delta_k50"] <= 1e-4).all()
    assert (grid["epsilon_prime"] >= 0).all()
    # an admissible beta of 0.8 (eps = 2 leaves eps' = 0.39) would need k = 62
    assert smallest_k([0.8], [2.0], 23_236, 1e-4) == 62


def test_exponential_mechanism_in_log_space():
    rng = np.random.default_rng(8)
    utility = np.array([0.0, -1.0, -2.0])
    _, prob = exponential_mechanism(utility, 1e-6, 1.0, rng)  # exp(5e5) would overflow
    np.testing.assert_allclose(prob, [1.0, 0.0, 0.0])
    _, prob = exponential_mechanism(utility, 0.5, 1.0, rng)
    np.testing.assert_allclose(prob, np.exp(utility) / np.exp(utility).sum())


def test_epsilon_safe_la_penalties_and_release():
    rng = np.random.default_rng(9)
    table, hier = random_table(rng, 200, 3)
    enc = encode(table, list(table.columns), hier)
    scores = node_scores(enc, 5, 5)
    prob, sens = selection_probabilities(scores, 0.5, "kanonymity", 1.0)
    assert sens == 0.5
    expected = np.exp(-(scores.prec + 0.5 * ~scores.k_anonymous) * 1.0 / (2 * 0.5))
    np.testing.assert_allclose(prob, expected / expected.sum())
    prob, sens = selection_probabilities(scores, 0.1, "suppression", 1.0)
    assert sens == pytest.approx(0.1 * 5 / 200)
    result = epsilon_safe_la(enc, 5, 0.75, 1.0, 0.04, "suppression", 5, derive_rng(1, "la"))
    released = Encoded(enc.columns, enc.codes[result.released], enc.hierarchies)
    _, sizes = node_classes(released, result.node)
    assert sizes.min() >= 5
    assert not (result.released & ~result.sampled).any()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e: ola(e, 0, 5), "parameter 'k' must be an integer in [1, 30] (the rows of the table), got 0"),
        (lambda e: ola(e, 31, 5), "parameter 'k' must be an integer in [1, 30] (the rows of the table), got 31"),
        (lambda e: ola(e, 2, 101), "parameter 'max_sup' must be a percentage in [0, 100], got 101"),
        (lambda e: ola(e, 2, -1), "parameter 'max_sup' must be a percentage in [0, 100], got -1"),
        (lambda e: ola(e, 2, 5, "gini"), "parameter 'metric' must be one of ['prec', 'dm_star', 'entropy'], got 'gini'"),
        (lambda e: inverse_ola(e, 1.5, 5), "parameter 'max_loss' must be a normalised loss in [0, 1], got 1.5"),
        (lambda e: dps_delta(5, 0.5, 0.0, 30), "parameter 'epsilon' must be a finite number > 0, got 0.0"),
        (lambda e: dps_delta(5, 1.0, 1.0, 30), "parameter 'beta' must lie in the open interval (0, 1), got 1.0"),
        (lambda e: dps_delta(5, 0.0, 1.0, 30), "parameter 'beta' must lie in the open interval (0, 1), got 0.0"),
        (lambda e: selection_probabilities(node_scores(e, 2, 5), 0.1, "other", 1.0),
         "parameter 'mode' must be one of ['suppression', 'kanonymity'], got 'other'"),
        (lambda e: check_k_values([5, 31], 30, "tabular/ola/k"),
         "config parameter 'tabular/ola/k': k = 31 must lie in [1, 30] (the rows of the demographics table); "
         "lower it, or for a cohort of about 100 subjects run with --configfile config/presets/demo.yaml "
         "(docs/cohort-sizes.md)"),
    ],
)  # fmt: skip
def test_bad_parameters_are_named(call, message):
    rng = np.random.default_rng(10)
    table, hier = random_table(rng, 30, 2)
    with pytest.raises(ConfigError) as err:
        call(encode(table, list(table.columns), hier))
    assert str(err.value) == message


# --------------------------------------------------------------------------- demographics


def test_demographics_table_is_built_as_the_seed_says():
    patients = pd.DataFrame({"subject_id": [1, 2, 3, 4], "gender": ["F", "M", "F", None]})
    admissions = pd.DataFrame(
        {
            "subject_id": [1, 1, 2, 3, 4],
            "hadm_id": [11, 10, 20, 30, 40],
            "admittime": pd.to_datetime(
                ["2101-05-01", "2101-01-01", "2100-01-01", "2100-01-01", "2100-01-01"]
            ),
            "insurance": ["Private", "Medicare", "Medicaid", "Private", "Private"],
            "language": ["ENGL", "SPAN", "ENGL", None, "ENGL"],
            "religion": ["JEWISH", "CATHOLIC", "OTHER", "OTHER", "OTHER"],
            "marital_status": ["SINGLE", "MARRIED", "SINGLE", "SINGLE", "SINGLE"],
        }
    )
    procedures = pd.DataFrame(
        {
            "subject_id": [1, 1, 1, 1, 2, 2],
            "hadm_id": [10, 10, 10, 11, 20, 20],
            "seq_num": [2, 1, 3, 1, 1, 3],
            "icd9_code": ["966", "3893", "0040", "9999", "9604", "331"],
        }
    )
    rng = np.random.default_rng(11)
    draws = np.rint(np.random.default_rng(11).normal(1980, 33, 4)).astype(np.int64)
    table = demographics(patients, admissions, procedures, 0, rng, missing="drop")
    # subject 3 (no language) and 4 (no gender) dropped; subject 1's first admission is 10
    assert table["subject_id"].tolist() == [1, 2]
    assert table["hadm_id"].tolist() == [10, 20]
    assert table["insurance"].tolist() == ["Medicare", "Medicaid"]
    assert table["yob"].tolist() == draws[:2].tolist()
    # the default: a missing demographic value is the category "?", the row is kept
    kept = demographics(patients, admissions, procedures, 0, np.random.default_rng(11))
    assert kept["subject_id"].tolist() == [1, 2, 3, 4]
    assert kept["language"].tolist() == ["SPAN", "ENGL", "?", "ENGL"]
    assert kept["gender"].tolist()[3] == "?"
    assert kept["yob"].tolist() == draws.tolist()
    with pytest.raises(ConfigError) as exc:
        demographics(patients, admissions, procedures, 0, rng, missing="impute")
    assert str(exc.value) == (
        "parameter 'missing' must be one of ['category', 'drop'], got 'impute'"
    )
    with3 = demographics(patients, admissions, procedures, 3, np.random.default_rng(11))
    # subject 2 lacks SEQ_NUM 2: dropped; subject 1 keeps the draw it had without procedures
    assert with3[procedure_columns(3)].to_numpy().tolist() == [["3893", "966", "0040"]]
    assert with3["yob"].tolist() == draws[:1].tolist()


def test_uniqueness_counts():
    values = np.array([["a", "x"], ["a", "x"], ["b", "x"], ["c", "y"]])
    assert uniqueness(values) == {
        "rows": 4,
        "classes": 3,
        "mean_class_size": 4 / 3,
        "unique": 2,
        "unique_percent": 50.0,
    }


def test_uniqueness_reports_on_synthetic_sources(sources):
    table = demographics(sources["patients"], sources["admissions"], None, 0, derive_rng(1, "yob"))
    report = demographic_uniqueness(table, 5, lambda r: derive_rng(1, "u", r))
    assert report["rows"] == len(table) and report["draws"] == 5
    normal = report["normal"]["unique"]
    assert normal["min"] <= normal["mean"] <= normal["max"] <= len(table)
    assert report["without_yob"]["mean_class_size"] > report["normal"]["mean_class_size"]["mean"]
    procs = procedure_uniqueness(sources["procedures"])
    # more positions single out more admissions; unordered sets fewer than sequences
    assert procs["first_three"]["unique_percent"] > procs["first_two"]["unique_percent"]
    assert procs["first_three_unordered"]["unique"] <= procs["first_three"]["unique"]
    assert procs["first_and_fifth"]["rows"] < procs["first_three"]["rows"]


def test_stage_grids_on_synthetic_sources(sources, hierarchies):
    p = sources
    tables = {
        n: demographics(p["patients"], p["admissions"], p["procedures"], n, derive_rng(1, "y"))
        for n in (1, 2)
    }
    table = tables[1]
    qis = [*DEMOGRAPHIC_QIS, "proc_1"]
    grid = ola_grid(table, hierarchies, qis, [2, 10], [0, 10], ["prec", "entropy"])
    assert len(grid) == 8 and (grid["suppressed_percent"] <= grid["max_sup"] + 1e-9).all()
    inv = inverse_grid(
        table, hierarchies, {"all": qis, "reduced": ["yob", "gender", "proc_1"]}, [0.5], [0, 50]
    )
    assert inv["k"].min() >= 1 and (inv["loss_normalised"] <= 0.5 + 1e-12).all()
    conc = concealing_grid(tables, hierarchies, {"A": [0.01], "B": [0.05, 0.05]}, [0.5], [10])
    assert set(conc["model"]) == {"A", "B"}
    assert (conc["inverse_m"] <= conc["k"] + 1e-9).all()
    la = epsilon_la_grid(
        table,
        hierarchies,
        ["yob", "gender"],
        5,
        0.75,
        5,
        [0.0, 0.1],
        [1.0],
        2,
        1,
    )
    assert set(la["mode"]) == {"uniform", "suppression", "kanonymity"}
    assert ((la["p_good"] >= 0) & (la["p_good"] <= 1 + 1e-12)).all()
    release, summary = release_table(table, hierarchies, qis, 3, 10, "prec")
    assert summary["smallest_class"] >= 3 and len(release) == summary["rows_released"]
    assert not {"subject_id", "hadm_id"} & set(release.columns)


def test_a_k_above_the_tables_rows_is_kept_as_not_computable(sources, hierarchies):
    """Issue 48: the shipped k = 100 on a cohort of 100 subjects: the grid keeps its points,
    without figures and with the reason, and computes the others as before."""
    from mimic_deid.report.tabular import nodes_checked_table

    p = sources
    table = demographics(p["patients"], p["admissions"], p["procedures"], 1, derive_rng(1, "y"))
    qis = [*DEMOGRAPHIC_QIS, "proc_1"]
    rows = len(table)
    big = rows + 1
    grid = ola_grid(table, hierarchies, qis, [2, big], [0, 10], ["prec"])
    alone = ola_grid(table, hierarchies, qis, [2], [0, 10], ["prec"])
    reason = (
        f"not computable: k = {big} exceeds the {rows} rows of the demographics table (config "
        f"parameter 'tabular/ola/k'; the largest k that fits: {rows})"
    )
    assert grid["not_computable"].tolist() == ["", "", reason, reason]
    pd.testing.assert_frame_equal(grid.iloc[:2], alone)
    assert (
        grid.iloc[2:].drop(columns=["k", "max_sup", "metric", "not_computable"]).isna().all().all()
    )
    nodes = nodes_checked_table({"ola": grid})
    assert nodes["not computable"].tolist() == ["", reason.removeprefix("not computable: ")]
    assert nodes["max_sup 0"].isna().tolist() == [False, True]
    # epsilon-safe LA at a k above the rows: every row says why, none has a figure
    la = epsilon_la_grid(table, hierarchies, ["yob", "gender"], big, 0.75, 5, [0.0], [1.0], 2, 1)
    assert set(la["not_computable"]) == {reason.replace("tabular/ola/k", "tabular/epsilon/la_k")}
    assert len(la) == 3 and la["p_good"].isna().all() and (la["samples"] == 0).all()
    fits = epsilon_la_grid(table, hierarchies, ["yob", "gender"], 5, 0.75, 5, [0.0], [1.0], 2, 1)
    assert list(fits.columns) == list(la.columns) and set(fits["not_computable"]) == {""}
    assert fits[["mode", "penalty", "epsilon_prime"]].equals(
        la[["mode", "penalty", "epsilon_prime"]]
    )


def test_synthetic_procedures_are_zipf_like(sources):
    procs = sources["procedures"]
    per_adm = procs.groupby("hadm_id").size()
    n_adm = len(sources["admissions"])
    assert 0.6 < (per_adm >= 2).sum() / n_adm < 0.85
    assert 0.25 < (per_adm >= 5).sum() / n_adm < 0.5
    seq = procs.groupby("hadm_id")["seq_num"].agg(["min", "max", "size"])
    assert (seq["min"] == 1).all() and (seq["max"] == seq["size"]).all()
    freq = procs["icd9_code"].value_counts().to_numpy()
    # Zipf-like: rank-frequency log-log slope near -1
    top = freq[:100]
    slope = np.polyfit(np.log(np.arange(1, 101)), np.log(top), 1)[0]
    assert -1.4 < slope < -0.6


def test_joint_risk_of_stays_and_demographics(hierarchies):
    demo = pd.DataFrame(
        {
            "subject_id": [1, 2, 3, 4],
            "yob": [1950, 1950, 1990, 1991],
            "gender": ["F", "F", "M", "M"],
            "insurance": ["Private"] * 4,
            "language": ["ENGL"] * 4,
            "religion": ["OTHER"] * 4,
            "marital_status": ["SINGLE"] * 4,
        }
    )
    stays = pd.DataFrame({"icustay_id": [10, 11, 12, 13, 14, 15], "subject_id": [1, 2, 3, 4, 4, 5]})
    duration = pd.DataFrame(
        {"icustay_id": [10, 11, 12, 13, 14, 15], "class_length": [24, 24, 24, 48, 0, 48]}
    )
    table = joint_risk(duration, stays, demo, hierarchies, 2, 0).set_index("view")
    # released and with demographics: stays 10-13 (14 suppressed, 15 has no demographics)
    assert table.loc["duration class", "stays"] == 4
    assert table.loc["duration class", "unique"] == 1  # the only 48 h stay
    assert table.loc["demographics", "unique"] == 2  # yob 1990 and 1991
    assert table.loc["duration class x demographics", "unique"] == 2
    assert table.loc["released stays without demographics", "stays"] == 1
    generalised = [v for v in table.index if v.startswith("demographics at OLA k=2")]
    assert len(generalised) == 1 and table.loc[generalised[0], "smallest_class"] == 2
    # the recipient of a series release holds its index: duration class and published
    # demographics (strings), one class per distinct combination
    index = pd.DataFrame(
        {
            "pseudonym": ["Pa", "Pb", "Pc", "Pd", "Pe"],
            "duration_class": [24, 24, 24, 48, 48],
            "split": "train",
            "age": ["60+", "60+", "<60", "Age", "Age"],
            "gender": ["F", "F", "F", "Gender", "Gender"],
        }  # fmt: skip
    )
    table = joint_risk(
        duration, stays, demo, hierarchies, 2, 0, release_index=index, release_name="adhoc-x"
    )
    row = table.set_index("view").loc["release index: duration class x age x gender (adhoc-x)"]
    assert (row["stays"], row["classes"], row["unique"], row["smallest_class"]) == (5, 3, 1, 1)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"ola": {"k": [1]}}, "config parameter 'tabular/ola/k/0': 1 is less than the minimum of 2"),
        ({"ola": {"max_sup": [101]}},
         "config parameter 'tabular/ola/max_sup/0': 101 is greater than the maximum of 100"),
        ({"inverse": {"max_sup": [-1]}},
         "config parameter 'tabular/inverse/max_sup/0': -1 is less than the minimum of 0"),
        ({"epsilon": {"epsilon": [0]}},
         "config parameter 'tabular/epsilon/epsilon/0': 0 is less than or equal to the minimum of 0"),
        ({"epsilon": {"beta": [1.0]}},
         "config parameter 'tabular/epsilon/beta/0': 1.0 is greater than or equal to the maximum of 1"),
        ({"epsilon": {"la_beta": 0}},
         "config parameter 'tabular/epsilon/la_beta': 0 is less than or equal to the minimum of 0"),
        ({"release": {"k": 1}}, "config parameter 'tabular/release/k': 1 is less than the minimum of 2"),
    ],
)  # fmt: skip
def test_bad_tabular_config_names_the_parameter(section, message):
    import yaml

    from mimic_deid.config import validate_config

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["tabular"] = section
    with pytest.raises(ConfigError) as err:
        validate_config(config, ROOT / "config" / "schema.yaml")
    assert str(err.value) == message
