"""The sequences subpackage (seed 004): inputs, splitting, MinHash LSH, STMM ensembles, the two
mechanisms, generation, measures, the sweep, and the shapes the seed reports."""

from __future__ import annotations

import gzip
import hashlib
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from datasketch import MinHash
from scipy.stats import chi2, chisquare
from sequences_reference import lsh_similarity

from mimic_deid.core.errors import ConfigError, InputDataError, ReleaseCheckError
from mimic_deid.sequences import (
    Budget,
    EventLog,
    Settings,
    anonymise,
    check_log,
    cluster_log,
    cluster_signatures,
    component_sensitivity,
    cpt_events,
    dataset_similarity,
    discrete_laplace,
    fit_ensemble,
    fit_models,
    fit_release,
    friedman_tests,
    generate,
    histogram_gap,
    laplace_counts,
    opendp_scale_epsilon,
    ratio_suppress,
    run_sweep,
    signatures,
    split_sections,
    top_bigram_intersection,
    transfer_events,
)
from mimic_deid.sequences.privacy import components
from mimic_deid.sources.csv_source import CsvSource
from mimic_deid.synthetic import generate as synth_generate
from mimic_deid.synthetic import generator as synth_generator

INF = float("inf")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("seq") / "mimic"
    synth_generate(out, subjects=600, seed=11)
    return out


@pytest.fixture(scope="module")
def logs(synth_dir) -> dict[str, EventLog]:
    src = CsvSource(synth_dir)
    return {
        "transfers": transfer_events(src.read_table("transfers")),
        "cptevents": cpt_events(src.read_table("cptevents")),
    }


def make_log(
    seqs: list[list[int]], dt: float = 1.0, table: str = "TEST", n_states: int | None = None
) -> EventLog:
    obj = np.concatenate([np.full(len(s), i) for i, s in enumerate(seqs)]).astype(np.int64)
    state = np.concatenate([np.asarray(s) for s in seqs]).astype(np.int64)
    first = np.r_[True, obj[1:] != obj[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(obj)), 0))
    time = 1_000_000.0 + obj * 100.0 + (np.arange(len(obj)) - start) * dt
    n = n_states or int(state.max()) + 1
    return EventLog(table, obj, time, state, tuple(f"s{i}" for i in range(n)))


# --------------------------------------------------------------------------- synthetic data


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.csv.gz"))
    }


def test_sequence_tables_leave_every_other_table_byte_identical(tmp_path, monkeypatch):
    synth_generate(tmp_path / "with", subjects=150, seed=4)
    monkeypatch.setattr(synth_generator, "sequence_tables", lambda pop, seed, block: {})
    synth_generate(tmp_path / "without", subjects=150, seed=4)
    with_, without = _digests(tmp_path / "with"), _digests(tmp_path / "without")
    assert set(with_) == set(without) == {f"{t}.csv.gz" for t in synth_generator.TABLES}
    # patched out, the two tables are header-only; every other table is unchanged
    for name in without:
        same = with_[name] == without[name]
        assert same != (name in ("TRANSFERS.csv.gz", "CPTEVENTS.csv.gz")), name


def test_transfers_follow_the_icu_stays(synth_dir):
    tr = pd.read_csv(synth_dir / "TRANSFERS.csv.gz")
    icu = pd.read_csv(synth_dir / "ICUSTAYS.csv.gz")
    first = tr.groupby("HADM_ID").head(1)
    last = tr.groupby("HADM_ID").tail(1)
    assert (first["EVENTTYPE"] == "admit").all() and (last["EVENTTYPE"] == "discharge").all()
    assert last["CURR_CAREUNIT"].isna().all() and last["OUTTIME"].isna().all()
    stays = tr.dropna(subset=["ICUSTAY_ID"]).groupby("ICUSTAY_ID")
    merged = icu.set_index("ICUSTAY_ID").join(stays["INTIME"].min().rename("first_in"))
    merged = merged.join(stays["CURR_CAREUNIT"].first().rename("unit0"))
    merged = merged.join(stays["CURR_CAREUNIT"].last().rename("unit1"))
    assert (merged["first_in"] == merged["INTIME"]).all()
    assert (merged["unit0"] == merged["FIRST_CAREUNIT"]).all()
    assert (merged["unit1"] == merged["LAST_CAREUNIT"]).all()
    # about 3.6 rows per admission (MIMIC-III: 261,897 / 58,976 = 4.4; the 100-subject demo
    # 524 / 129 = 4.1)
    assert 3.2 < len(tr) / tr["HADM_ID"].nunique() < 5.0


def test_cptevents_numbered_by_ticket_id_seq(synth_dir):
    cpt = pd.read_csv(synth_dir / "CPTEVENTS.csv.gz", dtype={"CPT_CD": str})
    resp = cpt["COSTCENTER"] == "Resp"  # dated rows without a ticket (real MIMIC-III quirk)
    assert cpt.loc[resp, "TICKET_ID_SEQ"].isna().all() and cpt.loc[resp, "CHARTDATE"].notna().all()
    assert cpt.loc[~resp, "CHARTDATE"].isna().all() and cpt.loc[~resp, "DESCRIPTION"].isna().all()
    cpt = cpt[~resp]
    seq = cpt.groupby("HADM_ID")["TICKET_ID_SEQ"]
    assert (seq.min() == 1).all() and (seq.max() == seq.size()).all()
    assert cpt["CPT_CD"].str.fullmatch(r"\d{5}").all()
    assert 7 < len(cpt) / cpt["HADM_ID"].nunique() < 13  # MIMIC-III: ~9.7 per admission


def test_sources_read_the_sequence_tables(synth_dir):
    src = CsvSource(synth_dir)
    tr = src.read_table("TRANSFERS")
    assert list(tr.columns) == [
        "subject_id", "hadm_id", "icustay_id", "eventtype", "curr_careunit", "curr_wardid",
        "intime", "outtime",
    ]  # fmt: skip
    assert str(tr["intime"].dtype) == "datetime64[s]" and str(tr["icustay_id"].dtype) == "Int64"
    cpt = src.read_table("cptevents")
    assert list(cpt.columns) == [
        "subject_id", "hadm_id", "costcenter", "chartdate", "cpt_cd", "ticket_id_seq"
    ]  # fmt: skip


@pytest.mark.postgres
def test_postgres_reads_the_sequence_tables_like_csv(synth_dir):
    import uuid

    import pg_loader as loader
    import psycopg2
    from test_sources_postgres import DSN

    from mimic_deid.sources.postgres_source import PostgresSource

    try:
        psycopg2.connect(DSN, connect_timeout=3).close()
    except psycopg2.Error as exc:
        pytest.skip(f"PostgreSQL test server not reachable: {exc}")
    schema = f"mimiciii_seq_{uuid.uuid4().hex[:10]}"
    try:
        loader.load_csv_dir(DSN, synth_dir, schema, tables=("transfers", "cptevents"))
        pg, csv = PostgresSource(DSN, schema), CsvSource(synth_dir)
        for table, keys in (
            ("transfers", ["hadm_id", "intime", "eventtype"]),
            ("cptevents", ["hadm_id", "ticket_id_seq"]),
        ):
            a = pg.read_table(table).sort_values(keys, kind="stable").reset_index(drop=True)
            b = csv.read_table(table).sort_values(keys, kind="stable").reset_index(drop=True)
            pd.testing.assert_frame_equal(a, b)
    finally:
        loader.drop_schema(DSN, schema)


# --------------------------------------------------------------------------- inputs


def _transfers(**cols) -> pd.DataFrame:
    base = {
        "subject_id": [1, 1, 1],
        "eventtype": ["admit", "transfer", "discharge"],
        "curr_careunit": [None, "MICU", None],
        "curr_wardid": [4, 50, None],
        "intime": pd.to_datetime(["2100-01-01 00:00", "2100-01-01 05:00", "2100-01-03 00:00"]),
    }
    base.update(cols)
    return pd.DataFrame(base).astype({"curr_careunit": "string", "curr_wardid": "Int64"})


def test_transfer_states_and_times():
    log = transfer_events(_transfers())
    assert log.states == ("MICU", "WARD")
    assert log.state.tolist() == [1, 0]  # discharge rows are not states
    assert np.diff(log.time).tolist() == [5.0]


def test_empty_transfers_is_a_clear_error():
    with pytest.raises(InputDataError) as exc:
        transfer_events(_transfers().iloc[:0])
    assert str(exc.value) == (
        "TRANSFERS: the table has no rows; the sequences stage needs at least one object with "
        "two records (nothing would be released)"
    )


def test_unknown_care_unit_is_named():
    with pytest.raises(InputDataError) as exc:
        transfer_events(_transfers(curr_careunit=[None, "XICU", None]))
    assert str(exc.value) == (
        "TRANSFERS: column 'curr_careunit' holds 1 unknown state(s) (first data rows: 2); "
        "expected one of "
        "['CCU', 'CSRU', 'MICU', 'NICU', 'NWARD', 'SICU', 'TSICU', 'WARD'] (WARD = a "
        "general-ward row)"
    )


def test_missing_intime_is_an_error_or_dropped():
    df = _transfers(intime=pd.to_datetime(["2100-01-01 00:00", None, "2100-01-03 00:00"]))
    with pytest.raises(InputDataError) as exc:
        transfer_events(df)
    assert str(exc.value) == (
        "TRANSFERS: column 'intime' is missing in 1 of 2 rows; every record needs a time (set "
        "sequences.missing_times: drop to drop those rows)"
    )
    with pytest.raises(InputDataError) as exc:
        transfer_events(df, "drop")  # one record left: no sequence
    assert str(exc.value) == (
        "TRANSFERS: no object has two or more records (1 single-record objects); a sequence "
        "needs at least one transition (nothing would be released)"
    )
    with pytest.raises(ConfigError) as exc:
        transfer_events(df, "skip")
    assert str(exc.value) == (
        "sequences: parameter 'missing_times' must be one of ['error', 'drop'], got 'skip'"
    )


def _cpt(**cols) -> pd.DataFrame:
    base = {
        "subject_id": [1, 1, 1, 2],
        "hadm_id": [10, 10, 11, 20],
        "cpt_cd": ["99291", "99232", "94002", "99223"],
        "ticket_id_seq": [2, 1, 1, 1],
        "chartdate": pd.to_datetime([None] * 4),
    }
    base.update(cols)
    return pd.DataFrame(base).astype({"cpt_cd": "string", "ticket_id_seq": "Int64"})


def test_cpt_order_and_fabricated_time():
    log = cpt_events(_cpt())
    assert [log.states[s] for s in log.state] == ["99232", "99291", "94002"]
    assert log.time.tolist() == [0.0, 1.0, 2.0]
    assert log.dropped_short == 1  # subject 2 has one procedure


def test_cpt_bad_code_and_missing_seq_are_named():
    with pytest.raises(InputDataError) as exc:
        cpt_events(_cpt(cpt_cd=["99291", "abc", "94002", "99223"]))
    assert str(exc.value) == (
        "CPTEVENTS: column 'cpt_cd' holds 1 unknown state(s) (first data rows: 2); expected CPT "
        "codes of five characters (four digits and a digit or capital letter)"
    )
    with pytest.raises(InputDataError) as exc:
        cpt_events(_cpt(ticket_id_seq=[1, None, 1, 1]))
    assert str(exc.value) == (
        "CPTEVENTS: column 'ticket_id_seq' is missing in 1 of 4 rows; every record needs a time "
        "(set sequences.missing_times: drop to drop those rows)"
    )
    with pytest.raises(InputDataError) as exc:
        cpt_events(_cpt().drop(columns=["ticket_id_seq"]))
    assert str(exc.value) == (
        "CPTEVENTS: missing column(s) ['ticket_id_seq']; expected at least ['subject_id', "
        "'hadm_id', 'chartdate', 'cpt_cd', 'ticket_id_seq'], got ['subject_id', 'hadm_id', "
        "'cpt_cd', 'chartdate']"
    )


def test_cpt_rows_with_a_chartdate_and_no_ticket_are_dropped_and_counted():
    # real MIMIC-III: COSTCENTER Resp rows carry CHARTDATE and no TICKET_ID_SEQ (18.4 %)
    dated = pd.to_datetime([None, "2150-01-02", None, "2150-01-03", None])
    df = _cpt(
        subject_id=[1, 1, 1, 1, 2],
        hadm_id=[10, 10, 10, 10, 20],
        cpt_cd=["99291", "94003", "99232", "94002", "99223"],
        ticket_id_seq=[2, None, 1, None, 1],
        chartdate=dated,
    )
    log = cpt_events(df)  # the default missing_times: error is not triggered by them
    assert [log.states[s] for s in log.state] == ["99232", "99291"]
    assert log.time.tolist() == [0.0, 1.0]
    assert (log.dropped_unticketed, log.dropped_missing, log.dropped_short) == (2, 0, 1)
    # a row with neither a ticket nor a date has no time: the missing_times rule applies
    df.loc[1, "chartdate"] = pd.NaT
    with pytest.raises(InputDataError) as exc:
        cpt_events(df)
    assert str(exc.value) == (
        "CPTEVENTS: column 'ticket_id_seq' is missing in 1 of 4 rows; every record needs a time "
        "(set sequences.missing_times: drop to drop those rows)"
    )
    log = cpt_events(df, "drop")
    assert (log.dropped_unticketed, log.dropped_missing) == (1, 1)
    with pytest.raises(InputDataError) as exc:
        cpt_events(_cpt(ticket_id_seq=[None] * 4, chartdate=pd.to_datetime(["2150-01-02"] * 4)))
    assert str(exc.value) == (
        "CPTEVENTS: none of the 4 rows has a TICKET_ID_SEQ (all carry a CHARTDATE only); the "
        "sequences stage orders procedures by TICKET_ID_SEQ (seed 004 §5), so nothing would be "
        "released"
    )


def test_sequences_shorter_than_two_are_refused():
    log = make_log([[0, 1], [1]])
    with pytest.raises(InputDataError) as exc:
        check_log(log)
    assert str(exc.value) == (
        "TEST: 1 sequence(s) of length < 2; every object needs at least two records (one "
        "transition)"
    )
    with pytest.raises(InputDataError) as exc2:
        fit_release(log, Settings(), seed=1)
    assert str(exc2.value) == str(exc.value)  # the same check guards the pipeline


def test_settings_refuse_bad_epsilon_and_mechanism():
    with pytest.raises(ConfigError) as exc:
        Settings(epsilon=0)
    assert str(exc.value) == "sequences: epsilon must be > 0 (inf: no privacy test), got 0"
    with pytest.raises(ConfigError) as exc:
        Settings(epsilon=-0.5)
    assert str(exc.value) == "sequences: epsilon must be > 0 (inf: no privacy test), got -0.5"
    with pytest.raises(ConfigError) as exc:
        Settings(mechanism="exponential")
    assert str(exc.value) == (
        "sequences: mechanism must be one of ['seed_ratio', 'laplace'], got 'exponential'"
    )


# --------------------------------------------------------------------------- splitting and LSH


def test_histogram_gap_finds_the_end_of_the_regular_mass():
    rng = np.random.default_rng(0)
    dt = np.r_[rng.exponential(50.0, 5000), rng.uniform(20_000, 30_000, 20)]
    gap = histogram_gap(dt, bins=50, sample=25_000, drop=0.01)
    assert 200 < gap < 2000
    assert histogram_gap(np.zeros(0)) == INF


def test_bad_lsh_and_histogram_parameters_are_named():
    with pytest.raises(ConfigError) as exc:
        signatures(np.array([0, 1]), np.array([0, 2]), num_perm=1, w=1)
    assert str(exc.value) == "sequences: number of hash functions must be an integer >= 2, got 1"
    with pytest.raises(ConfigError) as exc:
        signatures(np.array([0, 1]), np.array([0, 2]), num_perm=16, w=0)
    assert str(exc.value) == "sequences: shingle size must be an integer >= 1, got 0"
    with pytest.raises(ConfigError) as exc:
        histogram_gap(np.ones(3), bins=1)
    assert str(exc.value) == (
        "sequences.split: histogram_bins must be >= 2, histogram_sample >= 1 and drop_fraction "
        "in (0, 1), got 1, 25000, 0.01"
    )
    with pytest.raises(ConfigError) as exc:
        cluster_signatures(np.zeros((3, 4), np.uint64), fraction=0.0)
    assert str(exc.value) == (
        "sequences.lsh: cluster_fraction must be in (0, 1] and threshold in (0, 1), got 0.0, 0.5"
    )


def test_split_sections_at_the_gap():
    log = EventLog(
        "T",
        np.array([0, 0, 0, 1, 1]),
        np.array([0.0, 5.0, 500.0, 0.0, 10.0]),
        np.zeros(5, np.int64),
        ("a",),
    )
    assert split_sections(log, 100.0).tolist() == [0, 0, 1, 2, 2]
    assert split_sections(log, INF).tolist() == [0, 0, 0, 1, 1]
    with pytest.raises(ConfigError) as exc:
        split_sections(log, 0.0)
    assert str(exc.value) == "sequences.split: gap_hours must be > 0, got 0.0"


def test_signatures_are_datasketch_minhashes_of_the_shingles():
    codes = np.array([0, 1, 2, 3, 0, 1, 2, 4])
    sig = signatures(codes, np.array([0, 4, 8]), num_perm=128, w=2)
    ref = []
    for seq in ([0, 1, 2, 3], [0, 1, 2, 4]):
        m = MinHash(num_perm=128, seed=1, scheme="affine32")
        m.update_batch([f"{a},{b}".encode() for a, b in zip(seq[:-1], seq[1:], strict=True)])
        ref.append(m)
    assert np.array_equal(sig[0], ref[0].hashvalues) and np.array_equal(sig[1], ref[1].hashvalues)
    # Eq. 2 estimates the Jaccard similarity of the shingle sets (2 of 4 shared)
    assert abs(lsh_similarity(sig[0], sig[1]) - ref[0].jaccard(ref[1])) < 1e-12
    assert abs(lsh_similarity(sig[0], sig[1]) - 0.5) < 0.15


def test_clusters_are_fifteen_percent_of_the_sequences():
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 12, rng.integers(2, 9)).tolist() for _ in range(400)]
    codes = np.concatenate(seqs)
    starts = np.r_[0, np.cumsum([len(s) for s in seqs])]
    sig = signatures(codes, starts, num_perm=64, w=1)
    labels = cluster_signatures(sig, 0.15, 0.5)
    assert labels.max() + 1 == 60 and set(labels) == set(range(60))
    assert np.array_equal(labels, cluster_signatures(sig, 0.15, 0.5))
    # identical sequences share a cluster
    dup = signatures(np.r_[codes, codes], np.r_[starts, starts[1:] + len(codes)], 64, 1)
    lab = cluster_signatures(dup, 0.15, 0.5)
    assert np.array_equal(lab[:400], lab[400:])


# --------------------------------------------------------------------------- models


def test_stmm_counts_times_and_neighbours():
    # two sequences: 0 -> 1 -> 1 (times 0, 2, 6) and 0 -> 1 (times 0, 4)
    seq = np.array([0, 0, 0, 1, 1])
    state = np.array([0, 1, 1, 0, 1])
    time = np.array([0.0, 2.0, 6.0, 0.0, 4.0])
    ens = fit_ensemble("STE", seq, state, time, 2, ("all",), {}, np.array([6.0, 4.0]))
    assert ens.start[["state", "count"]].values.tolist() == [[0, 2]]
    assert ens.start["length_mean"].tolist() == [5.0] and ens.start["length_sd"].tolist() == [1.0]
    t = ens.trans.set_index(["a", "b"])
    assert t.loc[(0, 1), "count"] == 2 and t.loc[(0, 1), "time_mean"] == 3.0
    assert t.loc[(0, 1), "time_sd"] == 1.0 and t.loc[(1, 1), "count"] == 1
    assert ens.neighbour.values.tolist() == [[0, 1, 2], [1, 0, 2]]


def test_ste_has_the_four_support_levels(logs):
    c = cluster_log(logs["transfers"], Settings())
    ste, cte, days = fit_models(logs["transfers"], c)
    assert set(ste.models["level"]) == {"cluster&factor", "factor", "cluster", "all"}
    assert set(cte.models["level"]) == {"factor", "all"}
    n_trans = len(logs["transfers"].obj) - (c.section.max() + 1)
    per_level = ste.trans.merge(ste.models, on="model").groupby("level")["count"].sum()
    # every transition once per model it belongs to: once at all/cluster, per factor otherwise
    assert per_level.to_dict() == {
        "all": n_trans, "cluster": n_trans, "factor": 3 * n_trans, "cluster&factor": 3 * n_trans,
    }  # fmt: skip
    assert days["objects"].sum() == logs["transfers"].n_objects
    # 15 % of the sections, or fewer when there are fewer distinct signatures (w = 1: the
    # signature of a section is that of its set of states)
    lg = logs["transfers"]
    starts = np.r_[0, np.flatnonzero(np.diff(c.section)) + 1, len(lg.state)]
    distinct = len(np.unique(signatures(lg.state, starts, 100, 1), axis=0))
    assert c.n_clusters == min(round(0.15 * (c.section.max() + 1)), distinct)


# --------------------------------------------------------------------------- seed ratio test


def test_seed_worked_example():
    # 3 of 10 transitions a -> b: (3/10) / (2/9) = 1.35 passes eps = 0.4, fails eps = 0.3
    counts = np.array([3, 7])
    groups = np.array([0, 0])
    assert ratio_suppress(counts, groups, 0.4).tolist() == [True, True]
    assert ratio_suppress(counts, groups, 0.3).tolist() == [False, True]
    assert ratio_suppress(np.array([1, 5]), groups, INF).tolist() == [True, True]


def test_ratio_test_iterates_to_a_stable_release():
    rng = np.random.default_rng(1)
    counts = rng.integers(1, 30, 500)
    groups = rng.integers(0, 40, 500)
    keep = ratio_suppress(counts, groups, 0.2)
    # stable: the survivors, renormalised over themselves, all pass
    again = ratio_suppress(np.where(keep, counts, 0), groups, 0.2)
    assert np.array_equal(again, keep)
    total = pd.Series(np.where(keep, counts, 0)).groupby(groups).transform("sum").to_numpy()
    c, n = counts[keep], total[keep]
    ratio = np.where(c == n, 1.0, (c / n) / ((c - 1) / (n - 1)))
    assert (ratio <= math.exp(0.2)).all()
    # monotone in eps
    assert (ratio_suppress(counts, groups, 0.5) >= keep).all()


def test_ratio_test_refuses_nonpositive_epsilon():
    with pytest.raises(ConfigError) as exc:
        ratio_suppress(np.array([3]), np.array([0]), 0.0)
    assert str(exc.value) == "sequences: epsilon must be > 0 (inf: no privacy test), got 0.0"


# --------------------------------------------------------------------------- Laplace mechanism


def test_discrete_laplace_scale():
    scale = 4.0
    x = discrete_laplace(scale, 200_000, np.random.default_rng(5))
    q = math.exp(-1 / scale)
    assert abs(x.mean()) < 0.05
    assert abs(x.var() / (2 * q / (1 - q) ** 2) - 1) < 0.02
    # OpenDP's privacy map: scale = sensitivity / eps certifies eps
    assert abs(opendp_scale_epsilon(3, 3 / 0.25) - 0.25) < 1e-9


def test_opendp_sampler_has_the_same_scale():
    cells, vals, scale = laplace_counts(
        np.array([0]), np.array([1000]), 20_000, 2, 0.5, np.random.default_rng(0), sampler="opendp"
    )
    assert scale == 4.0
    q = math.exp(-1 / scale)
    # zero cells released with probability q / (1 + q)
    assert abs((len(cells) - 1) / 19_999 - q / (1 + q)) < 0.02


def test_sparse_zero_cells_match_the_dense_distribution():
    rng = np.random.default_rng(2)
    scale, domain = 3.0, 50_000
    cells, vals, _ = laplace_counts(np.array([7]), np.array([500]), domain, 3, 1.0, rng)
    q = math.exp(-1 / scale)
    zero = cells != 7
    assert abs(zero.sum() / (domain - 1) - q / (1 + q)) < 0.01
    # positive noise is geometric: mean 1 / (1 - q)
    assert abs(vals[zero].mean() - 1 / (1 - q)) < 0.1
    assert len(np.unique(cells)) == len(cells) and cells.max() < domain


def test_budget_is_split_and_never_exceeded(logs):
    s = Settings(mechanism="laplace", epsilon=1.0)
    _, summary = fit_release(logs["cptevents"], s, seed=3)
    comps = summary["components"]
    assert len(comps) == 4 * 3 + 2 * 3  # STE levels x (start, hour, trans) + CTE
    assert abs(sum(c["eps"] for c in comps) - 1.0) < 1e-12
    assert summary["budget"] == {"total": 1.0, "spent": pytest.approx(1.0)}
    for c in comps:
        assert c["scale"] == pytest.approx(c["sensitivity"] / c["eps"])
        assert c["opendp_eps"] == pytest.approx(c["eps"])  # OpenDP's privacy map agrees
    sens = {c["name"]: c["sensitivity"] for c in comps}
    # STE factors weekday and hour (duration has no bounded sensitivity); CTE weekday, month, year
    assert sens["STE/all/trans"] == 3 and sens["STE/factor/trans"] == 6
    assert sens["CTE/factor/start"] == 6 and sens["STE/cluster/hour"] == 2
    assert sens["STE/cluster&factor/start"] == 4 and sens["CTE/factor/trans"] == 9
    assert component_sensitivity("trans", "cluster&factor", 3) == 9


def test_budget_refuses_to_exceed_the_total():
    b = Budget(0.5)
    b.spend("STE/all/trans", 0.3)
    with pytest.raises(ReleaseCheckError) as exc:
        b.spend("STE/all/start", 0.25)
    assert str(exc.value) == (
        "privacy budget: component 'STE/all/start' asks eps=0.25 but only 0.2 of the total 0.5 "
        "is left; refusing to exceed the configured budget"
    )
    with pytest.raises(ReleaseCheckError) as exc:
        b.spend("STE/all/trans", 0.1)
    assert str(exc.value) == "privacy budget: component 'STE/all/trans' was already released"
    assert b.used == 0.3


def test_anonymise_refuses_a_larger_split_than_the_budget(logs):
    c = cluster_log(logs["transfers"], Settings())
    ste, _, _ = fit_models(logs["transfers"], c)
    budget = Budget(1.0)
    each = 1.0 / (len(components(ste)) - 1)  # one component too many
    with pytest.raises(ReleaseCheckError) as exc:
        anonymise(ste, "laplace", 1.0, np.random.default_rng(0), budget, each)
    assert "refusing to exceed the configured budget" in str(exc.value)
    assert str(exc.value).startswith("privacy budget: component 'STE/all/trans' asks eps=0.0909091")


# --------------------------------------------------------------------------- generation


def test_generation_is_deterministic(logs):
    for mech in ("seed_ratio", "laplace"):
        s = Settings(mechanism=mech, epsilon=0.65)
        a, sa = fit_release(logs["transfers"], s, seed=9)
        b, sb = fit_release(logs["transfers"], s, seed=9)
        pd.testing.assert_frame_equal(a, b)
        assert sa == sb
        c, _ = fit_release(logs["transfers"], s, seed=10)
        assert not a.equals(c)


def _only_levels(ens, levels: tuple[str, ...]):
    """``ens`` reduced to the models of ``levels`` (the generator then mixes only those)."""
    keep = ens.models["level"].isin(levels).to_numpy()
    return replace(
        ens,
        levels=levels,
        start=ens.start[keep[ens.start["model"]]],
        hour=ens.hour[keep[ens.hour["model"]]],
        trans=ens.trans[keep[ens.trans["model"]]],
    )


def test_inverse_support_weighting_and_neighbour_repair():
    # cluster 0 -> every sequence 0 -> 1 -> ...; the 'all' model and the cluster model agree
    # except for sequences of cluster 1 (10 of them: 0 -> 2).
    seqs = [[0, 1]] * 90 + [[0, 2]] * 10
    log = make_log(seqs, n_states=3)
    c = cluster_log(log, Settings(cluster_fraction=0.02))
    assert c.n_clusters == 2
    ste, cte, days = fit_models(log, c)
    ste = _only_levels(ste, ("cluster", "all"))
    gen = generate(ste, cte, days, 4000, np.random.default_rng(1))
    second = gen[gen["position"] == 1]
    in_rare = second["cluster"] == c.cluster[90]
    # a section of the rare cluster mixes its model (support 10, weight 1/10) with 'all'
    # (support 100, weight 1/100): P(0 -> 2) = (10/11) * 1 + (1/11) * 0.1 = 0.918
    share = (second.loc[in_rare, "state"] == 2).mean()
    assert abs(share - (10 / 11 + 0.1 / 11)) < 0.03
    # repair: with every transition out of 0 suppressed, neighbours (1 and 2) are used
    cut = replace(ste, trans=ste.trans.iloc[:0])
    gen = generate(cut, cte, days, 2000, np.random.default_rng(2))
    nxt = gen.loc[gen["position"] == 1, "state"]
    assert len(nxt) > 0 and set(nxt) <= {1, 2}
    assert abs((nxt == 2).mean() - 0.1) < 0.03  # neighbour counts 90 : 10


def _markov_log() -> EventLog:
    """800 sequences of 8 states of a homogeneous 3-state Markov chain, 1 h apart."""
    rng = np.random.default_rng(4)
    p = np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.4, 0.4, 0.2]])
    seqs = []
    for _ in range(800):
        s = [int(rng.integers(3))]
        for _ in range(7):
            s.append(int(rng.choice(3, p=p[s[-1]])))
        seqs.append(s)
    log = make_log(seqs)
    return log


def test_generated_transitions_match_a_markov_source():
    # a homogeneous Markov chain: at eps = inf the generator reproduces its transitions
    log = _markov_log()
    gen, summary = fit_release(log, Settings(epsilon=INF, shingles=2), seed=1)
    assert summary["suppressed"] == 0 and summary["suppression_rate"] == 0.0
    src = _transition_counts(log.obj, log.state, 3)
    code = gen["state"].str[1:].astype(int).to_numpy()
    out = _transition_counts(gen["object"].to_numpy() * 1000 + gen["section"].to_numpy(), code, 3)
    assert _conditional_chi2_p(src, out) > 0.01


def _transition_counts(obj: np.ndarray, state: np.ndarray, n: int) -> np.ndarray:
    same = obj[1:] == obj[:-1]
    out = np.zeros((n, n))
    np.add.at(out, (state[:-1][same], state[1:][same]), 1)
    return out


def _conditional_chi2_p(src: np.ndarray, gen: np.ndarray) -> float:
    """p of the summed chi-square of each state's generated next states against the source's
    conditional frequencies (on the cells the source has)."""
    stat, dof = 0.0, 0
    for a in range(len(src)):
        cells = src[a] > 0
        if gen[a].sum() == 0 or cells.sum() < 2:
            continue
        exp = src[a][cells] / src[a].sum() * gen[a][cells].sum()
        stat += chisquare(gen[a][cells], exp).statistic
        dof += int(cells.sum()) - 1
    return float(chi2.sf(stat, dof))


def _slow_entry_log() -> EventLog:
    """The Markov chain of :func:`_markov_log`, entering state 2 in 12 h and every other state
    in 1 h."""
    log = _markov_log()
    first = np.r_[True, log.obj[1:] != log.obj[:-1]]
    t = np.cumsum(np.where(first, 0.0, np.where(log.state == 2, 12.0, 1.0)))
    origin = np.maximum.accumulate(np.where(first, t, -np.inf))
    return replace(log, time=1_000_000.0 + log.obj * 1000.0 + t - origin)


def test_sections_keep_the_transition_that_reaches_their_end():
    # a section stops at its sampled end time; had it dropped the transition crossing the end,
    # the slow ones (-> 2) would be under-generated: p = 1e-43 with that rule, 0.46 with this
    log = _slow_entry_log()
    s = Settings(epsilon=INF, gap_hours=500.0)  # one section per object
    src = _transition_counts(log.obj, log.state, 3)
    out = np.zeros((3, 3))
    for rep in range(3):
        gen, _ = fit_release(log, s, seed=1, rep=rep)
        code = gen["state"].str[1:].astype(int).to_numpy()
        out += _transition_counts(
            gen["object"].to_numpy() * 1000 + gen["section"].to_numpy(), code, 3
        )
        last = gen.groupby(["object", "section"])["time"].agg(["min", "max"])
        # every generated section holds at least one transition and overshoots by < one step
        assert (last["max"] > last["min"]).mean() > 0.95
    assert _conditional_chi2_p(src, out) > 0.01
    share = out[:, 2].sum() / out.sum()
    assert abs(share - src[:, 2].sum() / src.sum()) < 0.02


def _generated_counts(gen: pd.DataFrame, lg: EventLog, states_are_labels: bool) -> np.ndarray:
    """Transition counts of generated sections over the source vocabulary (n_states, n_states)."""
    code = gen["state"].to_numpy()
    if states_are_labels:
        code = np.searchsorted(np.array(lg.states), code.astype(str))
    key = gen["object"].to_numpy() * 1000 + gen["section"].to_numpy()
    return _transition_counts(key, code, len(lg.states))


@pytest.mark.parametrize("table", ["transfers", "cptevents"])
def test_one_stmm_reproduces_the_synthetic_transitions(logs, table):
    # the end rule on the shipped synthetic data: with the STE reduced to its single 'all'
    # STMM, three generations at eps = inf match the source's transition frequencies
    # (TRANSFERS p = 0.61; 3e-10 with a rule that dropped the transition crossing the end)
    lg = logs[table]
    c = cluster_log(lg, Settings(epsilon=INF))
    ste, cte, days = fit_models(lg, c)
    one = _only_levels(ste, ("all",))
    src = _transition_counts(c.section, lg.state, len(lg.states))
    out = sum(
        _generated_counts(
            generate(one, cte, days, lg.n_objects, np.random.default_rng(r)), lg, False
        )
        for r in (1, 2, 3)
    )
    assert _conditional_chi2_p(src, out) > 0.01


@pytest.mark.xfail(
    strict=True,
    reason="measured, inherent to the seed's ensemble (§3.2, §4): at eps = inf nothing is "
    "suppressed, but a section's transitions come from its cluster's and factor values' small "
    "STMMs, weighted 1/support, and its length from an independent time budget, so the "
    "generated mix of clusters and factor cells per state is not the source's: pooled over "
    "5 repetitions p = 9e-8 (TRANSFERS), 8e-5 (CPTEVENTS); one STMM alone passes "
    "(docs/sequences.md)",
)
@pytest.mark.parametrize("table", ["transfers", "cptevents"])
def test_generated_transitions_match_the_synthetic_source(logs, table):
    lg = logs[table]
    c = cluster_log(lg, Settings(epsilon=INF))
    src = _transition_counts(c.section, lg.state, len(lg.states))
    out = np.zeros_like(src)
    for rep in range(5):  # the sweep's repetitions: one release is too small to see the bias
        gen, summary = fit_release(lg, Settings(epsilon=INF), seed=1, rep=rep, clustering=c)
        assert summary["suppressed"] == 0 and summary["suppression_rate"] == 0.0
        out += _generated_counts(gen, lg, True)
    assert _conditional_chi2_p(src, out) > 0.01


# --------------------------------------------------------------------------- measures and sweep


def test_similarity_and_bigrams_of_a_dataset_with_itself(logs):
    lg = logs["cptevents"]
    rng = np.random.default_rng(0)
    assert dataset_similarity(lg.obj, lg.state, lg.obj, lg.state, 64, 2, 10_000, rng) == 1.0
    assert dataset_similarity(lg.obj, lg.state, lg.obj, lg.state, 64, 2, 50, rng) == 1.0  # sampled
    # a generated set of one object, the first source object reversed: its best match
    first = lg.state[lg.obj == 0]
    one = dataset_similarity(
        lg.obj, lg.state, np.zeros(len(first), np.int64), first[::-1], 64, 1, 5, rng
    )
    assert one == 1.0  # w = 1: the set of states is unchanged by reversal
    assert top_bigram_intersection(lg.obj, lg.state, lg.obj, lg.state, len(lg.states)) == 1.0
    other = (lg.state + 1) % len(lg.states)
    assert top_bigram_intersection(lg.obj, lg.state, lg.obj, other, len(lg.states)) < 1.0


GRID = {
    "mechanisms": ["seed_ratio"],
    "epsilons": [0.05, 0.35, 0.65, INF],
    "hashes": [100],
    "shingles": [1],
    "repetitions": 2,
}


@pytest.fixture(scope="module")
def sweeps(logs) -> dict[str, pd.DataFrame]:
    return {t: run_sweep(lg, Settings(), GRID, seed=2020) for t, lg in logs.items()}


@pytest.mark.parametrize("table", ["transfers", "cptevents"])
def test_suppression_falls_and_vanishes_with_epsilon(sweeps, table):
    by_eps = sweeps[table].groupby("epsilon")[["suppression_rate", "mean_support"]].mean()
    assert by_eps["suppression_rate"].is_monotonic_decreasing
    assert by_eps.loc[INF, "suppression_rate"] == 0.0 and by_eps.iloc[0]["suppression_rate"] > 0.5
    assert by_eps["mean_support"].is_monotonic_decreasing  # seed Fig. 5


_SIMILARITY_FALLS = pytest.mark.xfail(
    strict=True,
    reason="measured, inherent to Definition 4 on this data: it scores each generated object by "
    "its nearest source object, so the suppression at small eps, which leaves only the common "
    "states, raises it: TRANSFERS 0.985 / 0.980 / 0.972 / 0.947 at eps = 0.05 / 0.35 / 0.65 / "
    "inf (CPTEVENTS rises: 0.855 / 0.879 / 0.897 / 0.903; docs/sequences.md)",
)


@pytest.mark.parametrize("table", [pytest.param("transfers", marks=_SIMILARITY_FALLS), "cptevents"])
def test_similarity_does_not_fall_with_epsilon(sweeps, table):
    # the seed's Fig. 2: non-decreasing in eps (up to 0.01 per step) and higher at eps = inf
    sim = sweeps[table].groupby("epsilon")["similarity"].mean()
    assert (np.diff(sim.to_numpy()) >= -0.01).all() and sim.iloc[-1] > sim.iloc[0]


def test_friedman_across_lsh_settings():
    rng = np.random.default_rng(0)
    rows = []
    for h, w in ((100, 1), (100, 2), (100, 3)):
        for e in (0.05, 0.35):
            for r in range(5):
                rows.append(
                    {"table": "T", "mechanism": "seed_ratio", "epsilon": e, "repetition": r, "hashes": h,
                     "shingles": w, "similarity": 0.9 - 0.1 * w + 0.01 * rng.random(),
                     "top20_intersection": 0.5, "mean_support": 1.0 + rng.random(),
                     "suppression_rate": 0.1 * rng.random()}
                )  # fmt: skip
    out = friedman_tests(pd.DataFrame(rows)).set_index("measure")
    assert out.loc["similarity", "significant"] and out.loc["similarity", "p_value"] < 1e-3
    assert out.loc["top20_intersection", "note"] == "identical across settings"
    few = friedman_tests(pd.DataFrame(rows).query("shingles < 3"))
    assert (few["note"] == "needs >= 3 LSH settings and >= 2 blocks").all()


def test_release_summary_has_the_seed_measures(logs):
    gen, s = fit_release(logs["transfers"], Settings(epsilon=0.35), seed=1)
    assert {"similarity", "top20_intersection", "mean_support", "suppression_rate"} <= set(s)
    assert 0 < s["similarity"] <= 1 and 0 <= s["top20_intersection"] <= 1
    assert s["generated_objects"] == s["source_objects"]
    assert set(gen["state"]) <= set(logs["transfers"].states)
    assert (
        gen.groupby(["object", "section"])["time"].apply(lambda t: t.is_monotonic_increasing).all()
    )


def test_gzip_of_new_tables_is_reproducible(tmp_path):
    synth_generate(tmp_path / "a", subjects=120, seed=2)
    synth_generate(tmp_path / "b", subjects=120, seed=2, chunk_subjects=100)
    for name in ("TRANSFERS.csv.gz", "CPTEVENTS.csv.gz"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert gzip.decompress((tmp_path / "a" / name).read_bytes()).count(b"\n") > 100


def test_laplace_refuses_a_release_that_would_be_noise():
    with pytest.raises(ReleaseCheckError) as exc:
        laplace_counts(
            np.array([0]), np.array([3]), 20_000_000, 9, 1 / 18, np.random.default_rng(0),
            name="STE/cluster&factor/trans",
        )  # fmt: skip
    assert str(exc.value) == (
        "sequences.laplace: component 'STE/cluster&factor/trans' has 20,000,000 cells; at "
        "eps=0.05556 (scale 162) about 9,969,135 empty cells would be released as noise (limit "
        "5,000,000); raise sequences.epsilon or lower sequences.lsh.cluster_fraction"
    )
    with pytest.raises(ReleaseCheckError) as exc:
        laplace_counts(
            np.array([0]), np.array([3]), 100, 3, 1.0, None, "opendp", max_cells=50, name="x"
        )
    assert str(exc.value) == (
        "sequences.laplace: sampler 'opendp' draws every cell and component 'x' has 100 > 50 "
        "cells; use sampler 'seeded'"
    )


def test_sweep_keeps_a_refused_point_as_a_row(logs, monkeypatch):
    from mimic_deid.sequences import privacy

    monkeypatch.setattr(privacy, "MAX_CELLS", 10)
    monkeypatch.setattr(privacy.laplace_counts, "__defaults__", ("seeded", 10, "counts"))
    grid = {
        "mechanisms": ["seed_ratio", "laplace"],
        "epsilons": [0.5],
        "hashes": [50],
        "shingles": [1],
        "repetitions": 1,
    }
    sw = run_sweep(logs["transfers"], Settings(), grid, seed=1)
    assert sw["note"].iloc[0] == "" and sw["similarity"].notna().iloc[0]
    assert sw["note"].iloc[1].startswith("refused: sequences.laplace: component 'STE/")
    assert math.isnan(sw["similarity"].iloc[1])


def _level_l1(a, b, stat: str) -> dict[str, float]:
    """L1 distance per support level between the ``stat`` counts of two ensembles."""

    def keyed(ens):
        t = getattr(ens, stat).copy()
        t["code"] = ens.model_key_codes()[t["model"].to_numpy()]
        t["level"] = ens.models["level"].to_numpy()[t["model"].to_numpy()]
        keys = (
            ["code", "a", "b"]
            if stat == "trans"
            else ["code", "state" if stat == "start" else "hour"]
        )
        return t.set_index(keys)[["count", "level"]]

    ka, kb = keyed(a), keyed(b)
    both = ka.merge(kb, how="outer", left_index=True, right_index=True, suffixes=("_a", "_b"))
    both["level"] = both["level_a"].fillna(both["level_b"])
    diff = (both["count_a"].fillna(0) - both["count_b"].fillna(0)).abs()
    return diff.groupby(both["level"]).sum().to_dict()


@pytest.mark.parametrize("factors", [("weekday", "hour"), ("weekday", "hour", "duration")])
def test_one_record_changes_each_level_within_its_sensitivity(factors):
    from mimic_deid.sequences.model import STE_LEVELS, factor_values

    rng = np.random.default_rng(8)
    lengths = rng.integers(3, 8, 12)
    seq = np.repeat(np.arange(12), lengths)
    state = rng.integers(0, 4, len(seq))
    time = 1e6 + np.cumsum(rng.exponential(7.0, len(seq)))
    cluster = rng.integers(0, 3, 12)

    def fit(keep):
        s, st, t = seq[keep], state[keep], time[keep]
        first = np.r_[True, s[1:] != s[:-1]]
        last = np.r_[s[1:] != s[:-1], True]
        dur = t[last] - t[first]
        vals = {f: factor_values(f, t, dur[s]) for f in factors}
        return fit_ensemble("STE", s, st, t, 4, STE_LEVELS, vals, dur, cluster)

    full = fit(np.ones(len(seq), bool))
    worst: dict[str, float] = {}
    for j in range(len(seq)):  # remove each record in turn (sections keep >= 2 records)
        keep = np.ones(len(seq), bool)
        keep[j] = False
        for stat in ("trans", "start", "hour"):
            for level, l1 in _level_l1(full, fit(keep), stat).items():
                bound = component_sensitivity(stat, level, len(factors))
                worst[f"{level}/{stat}"] = max(worst.get(f"{level}/{stat}", 0), l1 / bound)
    if "duration" in factors:
        # the last record sets the section's duration: its removal moves whole sections
        assert worst["factor/trans"] > 1 and worst["cluster&factor/trans"] > 1
    else:
        assert max(worst.values()) <= 1, worst


def test_report_items_state_what_each_mechanism_promises(tmp_path, sweeps):
    from mimic_deid.report.sequences import GUARANTEE, plot_sequences, sequences_table

    sweep = pd.concat(sweeps.values(), ignore_index=True)
    info = plot_sequences(sweep, tmp_path / "seq.png")
    assert (tmp_path / "seq.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [a["title"] for a in info["axes"]] == [
        "Definition 4 similarity", "top-20 2-gram intersection (%)",
        "mean support of released counts", "suppressed share of the counts (%)",
    ]  # fmt: skip
    assert info["axes"][2]["yscale"] == "log"
    table = sequences_table(sweep)
    assert list(table["epsilon"].unique()) == ["0.05", "0.35", "0.65", "inf"]
    # shares in percent, as in every other section of the report
    assert {"top20_intersection_pct", "suppressed_pct"} <= set(table.columns)
    assert "suppression_rate" not in table.columns
    means = sweep.groupby(["table", "mechanism", "epsilon"], sort=True)["suppression_rate"]
    np.testing.assert_allclose(table["suppressed_pct"], 100 * means.mean().to_numpy())
    assert table["suppressed_pct"].max() > 1  # not a fraction
    assert (table["guarantee"] == GUARANTEE["seed_ratio"]).all()
    assert GUARANTEE["seed_ratio"].startswith("NOT eps-DP")
    assert sequences_table(pd.DataFrame())["note"].tolist() == ["no sequences sweep in this run"]


def test_vital_signs_become_hourly_sax_states():
    from mimic_deid.sequences import vital_events

    series = pd.DataFrame(
        {
            "icustay_id": [7, 7, 7, 7, 9, 9, 9, 5],
            "hour": [0, 1, 2, 3, 0, 1, 3, 0],
            "heart_rate": [60.0, 80.0, 100.0, 120.0, 70.0, 70.0, 70.0, 90.0],
        }
    )
    series.loc[len(series)] = [9, 2, np.nan]  # an hour without a value is not a record
    log = vital_events(series, "heart_rate", level=4)
    assert log.table == "VITALS" and log.dropped_short == 1  # stay 5 has one hour
    assert log.states == ("a", "b", "c", "d")
    # stay 7: z = -1.34, -0.45, 0.45, 1.34 -> one symbol per quartile; stay 9 is flat (z = 0 -> c)
    assert [log.states[c] for c in log.state] == ["a", "b", "c", "d", "c", "c", "c"]
    assert log.time.tolist() == [0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 3.0]
    with pytest.raises(InputDataError) as exc:
        vital_events(series, "glucose")
    assert str(exc.value) == (
        "VITALS (stays series): missing column(s) ['glucose']; expected at least ['icustay_id', "
        "'hour', 'glucose'], got ['icustay_id', 'hour', 'heart_rate']"
    )
    with pytest.raises(ConfigError) as exc:
        vital_events(series, "heart_rate", level=1)
    assert str(exc.value) == "sequences.vitals: level must be an integer in [2, 26], got 1"
