"""Diagnosis codes (seed 002): the risk audit at MIMIC-III size, GCCens, and the cost of LDA.

The population is the full-size synthetic copy's DIAGNOSES_ICD (46,520 subjects, ~58k
admissions), generated block by block with the generator's own population and diagnosis
code (no event tables are written). The sample is the adult subjects (the cohort's age rule).

* audit: ``dis`` of every sample record through the inverted index, for repeated codes and
  for (ICD, age) trajectories, per subject and per admission (target < 2 min on 2 cores);
  a brute-force containment check on a sub-sample gives the index's speed-up;
* GCCens on the seed's four codes, k in {5, 10, 25}, caps 3;
* LDA: MDAV with A-GS and with Baseline on N trajectories for growing N (k = 5): the wall
  time grows as N^2 and sets the documented cap ``codes.lda.max_trajectories``; the AvgRE
  workload (combinations of up to 4 pairs with support >= 1 %), its size and the time to
  build and estimate it;
* A-GS against Baseline: ILM + ALM of both for N in ``--shape-n``, ``--shape-samples`` sample
  draws and k in {2, 5, 10, 15}: the share of cases where A-GS loses more, the largest
  excess, and the mean of both per k (seed Figures 9-11).

    python benchmarks/bench_codes.py [--subjects 46520] [--lda 100 200 400 800]
        [--shape-n 100 300] [--shape-samples 8]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from common import RESULTS, machine_info, timed

from mimic_deid.codes import (
    MultisetIndex,
    avg_relative_error,
    code_records,
    diagnoses_with_ages,
    gccens_table,
    lda_trajectories,
    mdav,
    query_workload,
    restrict_codes,
    risk_audit,
)
from mimic_deid.core.atomic import write_json
from mimic_deid.core.seeding import derive_rng
from mimic_deid.synthetic import diagnoses
from mimic_deid.synthetic.generator import BLOCK_SUBJECTS
from mimic_deid.synthetic.population import IdState, make_population

OUT = RESULTS / "codes.json"
SEED_CODES = ["250", "272", "401", "724"]
AGES = [2, 4, 8, 16, 32, 64]
SHAPE_K = [2, 5, 10, 15]


def population(subjects: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """ADMISSIONS, PATIENTS and DIAGNOSES_ICD of the synthetic copy, as the generator draws them."""
    ids = IdState.for_subjects(subjects)
    adm, pat, diag = [], [], []
    for b in range(-(-subjects // BLOCK_SUBJECTS)):
        n = min(BLOCK_SUBJECTS, subjects - b * BLOCK_SUBJECTS)
        pop = make_population(derive_rng(seed, b), b * BLOCK_SUBJECTS, n, ids)
        adm.append(
            pd.DataFrame(
                {
                    "hadm_id": pop.a_id,
                    "subject_id": pop.s_id[pop.a_subj],
                    "admittime": pd.to_datetime(pop.a_admit, unit="s"),
                }
            )
        )
        pat.append(
            pd.DataFrame({"subject_id": pop.s_id, "dob": pd.to_datetime(pop.s_dob, unit="s")})
        )
        cols = diagnoses.block_tables(pop, seed, b)["DIAGNOSES_ICD"]
        diag.append(
            pd.DataFrame({k.lower(): v.to_numpy(zero_copy_only=False) for k, v in cols.items()})
        )
    return pd.concat(adm), pd.concat(pat), pd.concat(diag)


def brute_force_rate(diag: pd.DataFrame, sample: np.ndarray, n: int) -> float:
    """Seconds per sample record of dense containment (every population record compared)."""
    rec = code_records(diag, "subject", "category")
    dense = np.zeros((rec.sets.n_records, len(rec.items)), dtype=np.int16)
    np.add.at(dense, (rec.sets.record, rec.sets.item), rec.sets.count)
    rows = rec.sample(sample)[:n]
    t = timed(lambda: [(dense >= dense[r]).all(axis=1).sum() for r in rows])
    return t.wall_s / max(rows.size, 1)


def ags_vs_baseline(d4: pd.DataFrame, adults: np.ndarray, sizes, samples: int) -> dict:
    """ILM + ALM of MDAV with A-GS and with Baseline over sample draws (seeds 1..samples)."""
    cases = []
    for n in sizes:
        for seed in range(1, samples + 1):
            traj, hicd, hage, _ = lda_trajectories(
                d4, adults, "subject", "category", 0, AGES, n, seed
            )
            for k in SHAPE_K:
                lm = {}
                for alignment in ("baseline", "ags"):
                    res = mdav(traj, k, hicd, hage, 0.5, 0.5, alignment)
                    lm[alignment] = res.ilm + res.alm
                cases.append({"n": n, "seed": seed, "k": k, **lm})
    df = pd.DataFrame(cases)
    worse = df[df["ags"] > df["baseline"] + 1e-12]
    summary = {
        "cases": len(df),
        "ags_above_baseline": len(worse),
        "ags_above_baseline_by_n": {
            str(n): int((worse["n"] == n).sum()) for n in sorted(set(df["n"].tolist()))
        },
        "largest_excess": round(float((worse["ags"] - worse["baseline"]).max()), 4)
        if len(worse)
        else 0.0,
        "largest_excess_relative": round(float((worse["ags"] / worse["baseline"] - 1).max()), 4)
        if len(worse)
        else 0.0,
        "worst_case": worse.assign(d=worse["ags"] - worse["baseline"])
        .sort_values("d")
        .iloc[-1:]
        .drop(columns="d")
        .round(4)
        .to_dict("records"),
    }
    means = df.groupby(["n", "k"])[["ags", "baseline"]].mean().round(4).reset_index()
    return {"summary": summary, "mean_by_n_k": means.to_dict("records")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=46_520)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lda", type=int, nargs="+", default=[100, 200, 400, 800])
    parser.add_argument("--shape-n", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--shape-samples", type=int, default=8)
    args = parser.parse_args()
    out: dict = {"machine": machine_info(), "subjects": args.subjects}
    build = timed(population, args.subjects, args.seed)
    adm, pat, raw = build.value
    diag, counts = diagnoses_with_ages(raw, adm, pat)
    adults = np.unique(diag.loc[diag["age"] >= 18, "subject_id"].to_numpy(np.int64))
    adult_adm = np.unique(diag.loc[diag["age"] >= 18, "hadm_id"].to_numpy(np.int64))
    out["data"] = {**counts, "sample_subjects": int(adults.size), "generate_s": build.wall_s}
    print(f"{counts['rows']:,} diagnosis rows, {counts['admissions']:,} admissions")

    audits = {}
    for unit, sample in (("subject", adults), ("admission", adult_adm)):
        t = timed(risk_audit, diag, sample, unit, "category", 5)
        summary = t.value[0]
        audits[unit] = {
            "wall_s": round(t.wall_s, 2),
            "cpu_s": round(t.cpu_s, 2),
            "sample": summary["codes"]["records"],
            "unique_percent_codes": round(summary["codes"]["unique_percent"], 2),
            "unique_percent_trajectories": round(summary["trajectories"]["unique_percent"], 2),
        }
        print(f"audit per {unit}: {audits[unit]}")
    out["audit"] = audits
    rec = code_records(diag, "subject", "category")
    idx = timed(
        lambda: MultisetIndex(rec.sets).distinguishability(rec.sets.take(rec.sample(adults)))
    )
    per_record_index = idx.wall_s / adults.size
    per_record_brute = brute_force_rate(diag, adults, 300)
    out["index_vs_brute_force"] = {
        "index_s_per_record": per_record_index,
        "brute_force_s_per_record": per_record_brute,
        "speed_up": per_record_brute / per_record_index,
    }
    print(f"index vs brute force: {out['index_vs_brute_force']}")

    d4 = restrict_codes(diag, SEED_CODES, "category")
    g = timed(gccens_table, d4, adults, "subject", "category", [5, 10, 25], 3, [3, 5, 10], 5, {})
    out["gccens"] = {"wall_s": round(g.wall_s, 2), "table": g.value.round(4).to_dict("records")}
    print(g.value.round(3).to_string())

    lda = []
    for n in args.lda:
        traj, hicd, hage, info = lda_trajectories(
            d4, adults, "subject", "category", 0, AGES, n, args.seed
        )
        row = {"trajectories": n, "mean_length": round(info["mean_length"], 3)}
        work = timed(query_workload, traj, 0.01, 4)
        workload = work.value
        row["workload"] = {"queries": workload.sizes(), "beyond_bound": workload.beyond_bound}
        row["workload_s"] = round(work.wall_s, 3)
        for alignment in ("baseline", "ags"):
            t = timed(mdav, traj, 5, hicd, hage, 0.5, 0.5, alignment)
            est = timed(avg_relative_error, workload, t.value, hicd, hage)
            row[f"mdav_s_{alignment}"] = round(t.wall_s, 2)
            row[f"mdav_cpu_s_{alignment}"] = round(t.cpu_s, 2)
            row[f"avg_re_s_{alignment}"] = round(est.wall_s, 3)
            row[f"lm_{alignment}"] = round(t.value.ilm + t.value.alm, 4)
            row[f"avg_re_{alignment}"] = {key: round(v, 4) for key, v in est.value.items()}
        lda.append(row)
        print(f"LDA N={n}: {row}")
    out["lda"] = lda
    out["ags_vs_baseline"] = ags_vs_baseline(d4, adults, args.shape_n, args.shape_samples)
    print(f"A-GS vs Baseline: {out['ags_vs_baseline']['summary']}")
    write_json(out, OUT)
    print(f"written {OUT}")


if __name__ == "__main__":
    main()
