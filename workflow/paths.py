"""Every artefact path of the workflow, spelled once (docs/architecture.md, "Artefacts").

Templates use the rules' wildcards: ``{release}`` (stays | ihm48), ``{dk}``, ``{fk}``,
``{heuristic}`` and ``{method}`` (a release-method label). The rule files and the benchmark
scripts both read them from here; no other file spells a results path.
"""

PRIVATE = "results/private"
#: Every rule's log and benchmark record; owner-only like PRIVATE (they name files and rows).
LOGS = "logs"
REPORT = "results/report"
#: The sweep point part of a path: dk, then Mondrian (fk, heuristic), then the method label.
POINT = "dk{dk}/fk{fk}-{heuristic}/{method}"

PATHS = {
    # source (private)
    "synthetic": "resources/synthetic/n{subjects}-s{seed}",
    "raw": f"{PRIVATE}/raw",
    "source_fingerprint": f"{PRIVATE}/source_fingerprint.txt",
    # a real source's secret master seed when config `seed` is null (seeding.master_seed)
    "master_seed": f"{PRIVATE}/master_seed.txt",
    # cohort and series (private)
    "cohort_stays": f"{PRIVATE}/cohort/stays.parquet",
    "cohort_demographics": f"{PRIVATE}/cohort/demographics.parquet",
    "cohort_counts": f"{PRIVATE}/cohort/cohort.json",
    "series": f"{PRIVATE}/series/{{release}}/series.parquet",
    "meta": f"{PRIVATE}/series/{{release}}/meta.parquet",
    "cleaning": f"{PRIVATE}/series/{{release}}/cleaning.json",
    # de-identification
    "duration": f"{PRIVATE}/{{release}}/dk{{dk}}/duration.parquet",
    "duration_summary": "results/{release}/dk{dk}/duration.json",
    # seed §6.1 for every duration method and the hours each series loses (the report's)
    "duration_methods": f"{PRIVATE}/{{release}}/dk{{dk}}/duration_methods.parquet",
    "records_lost": f"{PRIVATE}/{{release}}/dk{{dk}}/records_lost.parquet",
    "targets": f"{PRIVATE}/{{release}}/dk{{dk}}/fk{{fk}}-{{heuristic}}/targets.parquet",
    "mondrian_summary": "results/{release}/dk{dk}/fk{fk}-{heuristic}/mondrian.json",
    "perturbed": f"{PRIVATE}/{{release}}/{POINT}/perturbed.parquet",
    "method_series": f"{PRIVATE}/{{release}}/{POINT}/method.parquet",
    # the method's class summary (from the release's values): owner-only at every point, a
    # refused point publishing nothing computed from its values (the sweep summary withholds
    # a refused release's columns)
    "method_summary": f"{PRIVATE}/{{release}}/{POINT}/method.json",
    # the worst and median series of a method with examples (the private report's GA figures)
    "method_examples": f"{PRIVATE}/{{release}}/{POINT}/examples.json",
    "pseudonyms": f"{PRIVATE}/{{release}}/{POINT}/pseudonyms.parquet",
    # the staged release: private until its check certifies it (deid.check, claims 1-14)
    "release_series": f"{PRIVATE}/{{release}}/{POINT}/staged/series.parquet",
    "release_index": f"{PRIVATE}/{{release}}/{POINT}/staged/index.parquet",
    "check": f"results/{{release}}/{POINT}/check.json",
    # the public release: series.parquet, index.parquet, card.json and the data dictionary
    # when certified, else refused.txt and card.json (rule publish_release, after release_card)
    "published": f"results/{{release}}/{POINT}/release",
    # the release card: promises, attacks against the bound, verdict, utility (evaluate.card)
    "card": f"results/{{release}}/{POINT}/card.json",
    "tuning_table": "results/stays/dk{dk}/tuning/{method}.csv",
    "tuning_grid": "results/stays/dk{dk}/tuning/grid_summary.csv",
    "tuning_tables": "results/stays/dk{dk}/tuning/tables.csv",
    "tuning_fitness": "results/stays/dk{dk}/tuning/fitness.csv",
    # evaluation
    # per-series attack results (one row per attacked series, from its original values) are
    # owner-only at every point; so is a point's class summary of them (a refused point
    # publishes its card and nothing computed from its values; the public report draws
    # certified releases only). The baseline's class summary (original against original) is
    # public.
    "baseline_series": f"{PRIVATE}/{{release}}/dk{{dk}}/baseline/disagreement_series.parquet",
    "baseline_summary": "results/{release}/dk{dk}/baseline/disagreement_summary.parquet",
    "disagreement_series": f"{PRIVATE}/{{release}}/{POINT}/privacy/disagreement_series.parquet",
    "disagreement_summary": f"{PRIVATE}/{{release}}/{POINT}/privacy/disagreement_summary.parquet",
    "linkage": f"results/{{release}}/{POINT}/privacy/linkage.json",
    # every disagreement curve of the report's main class (owner-only: original values)
    "main_curves": f"{PRIVATE}/{{release}}/{POINT}/privacy/main_class_curves.parquet",
    "utility": f"results/ihm48/{POINT}/utility/trust_settings.csv",
    # cross-release pairing of the sweep's releases of one population (evaluate.pairing):
    # every pair, with whether each release is certified (owner-only: a refused release's
    # rates are computed from values never published; the cards read it), and the pairs of
    # two certified releases (public: the sweep summary and the report)
    "cross_release_all": f"{PRIVATE}/cross_release.csv",
    "cross_release": "results/cross_release.csv",
    # the privacy-utility frontier: one row per release of the sweep, from the cards (public:
    # every figure is its card's; evaluate.frontier)
    "frontier": "results/frontier.csv",
    # sequences (seed 004): {table} is transfers | cptevents
    "seq_events": f"{PRIVATE}/sequences/{{table}}/events.parquet",
    "seq_generated": f"{PRIVATE}/sequences/{{table}}/generated.parquet",
    "seq_release": f"{PRIVATE}/sequences/{{table}}/staged/release.parquet",
    # the public sequence release: release.parquet, card.json and the data dictionary when
    # certified, else refused.txt and card.json
    "seq_published": "results/sequences/{table}/release",
    "seq_summary": "results/sequences/{table}/summary.json",
    "seq_attack": "results/sequences/{table}/attack.json",
    "seq_check": "results/sequences/{table}/check.json",
    # the card of a sequence release (sequences.card), copied into its release/ folder
    "seq_card": "results/sequences/{table}/card.json",
    "seq_sweep": "results/sequences/{table}/sweep.csv",
    "seq_friedman": "results/sequences/{table}/friedman.csv",
    # tabular stage (seed 003): raw tables and demographics private, grids public
    "tabular_patients": f"{PRIVATE}/tabular/raw/patients.parquet",
    "tabular_admissions": f"{PRIVATE}/tabular/raw/admissions.parquet",
    "tabular_procedures": f"{PRIVATE}/tabular/raw/procedures.parquet",
    "tabular_demographics": f"{PRIVATE}/tabular/demographics_p{{procedures}}.parquet",
    "tabular_release": f"{PRIVATE}/tabular/release.parquet",
    "tabular_uniqueness": "results/tabular/uniqueness.json",
    "tabular_ola": "results/tabular/ola_grid.csv",
    "tabular_inverse": "results/tabular/inverse_ola.csv",
    "tabular_concealing": "results/tabular/concealing.csv",
    "tabular_dps_grid": "results/tabular/dps_grid.csv",
    "tabular_dps": "results/tabular/dps.json",
    "tabular_epsilon_la": "results/tabular/epsilon_la.csv",
    "tabular_release_summary": "results/tabular/release.json",
    # the OLA release's claims T1-T4 (tabular.check); the release itself stays owner-only
    "tabular_check": "results/tabular/check.json",
    "tabular_joint_risk": "results/tabular/joint_risk_stays.csv",
    # report
    "sweep_csv": f"{REPORT}/sweep_summary.csv",
    "sweep_md": f"{REPORT}/sweep_summary.md",
    "report_index": f"{REPORT}/index.html",
    "report_figure": f"{REPORT}/figures/{{name}}.png",
    "report_table": f"{REPORT}/tables/{{name}}.csv",
    # the private report: figures with original values of individual patients (owner-only)
    "private_report_index": f"{PRIVATE}/report/index.html",
    "private_report_figure": f"{PRIVATE}/report/figures/{{name}}.png",
    # diagnosis codes (seed 002): private extraction, public aggregates
    "codes_diagnoses": f"{PRIVATE}/codes/diagnoses.parquet",
    "codes_extract": f"{PRIVATE}/codes/extract.json",
    "codes_audit": "results/codes/audit.json",
    "codes_cdf": "results/codes/dis_cdf.png",
    "codes_gccens": "results/codes/gccens_cul.csv",
    "codes_lda": "results/codes/lda.csv",
    "codes_lda_info": "results/codes/lda.json",
    "codes_check": "results/codes/check.json",
}


def path(key, **wildcards):
    """The path ``key`` with ``wildcards`` filled in (those not given stay as templates)."""

    class _Keep(dict):
        def __missing__(self, key):
            return "{" + key + "}"

    return PATHS[key].format_map(_Keep(wildcards))


#: Artefacts renamed since an earlier version, by file name: old -> new. A results folder made
#: before a rename is migrated in place at start-up (:func:`migrate_renamed`), so that the
#: renamed outputs are not recomputed.
RENAMED = {"optimiser.parquet": "method.parquet", "optimiser.json": "method.json"}

#: Artefacts once public, now owner-only (issue 45.3), as glob patterns under results/: a
#: results folder made before the move has them moved below results/private at start-up
#: (:func:`migrate_renamed`), the same path below it, so no public copy outlives the move.
MOVED_PRIVATE = (
    "*/dk*/baseline/disagreement_series.parquet",
    "*/dk*/fk*/*/privacy/disagreement_series.parquet",
    "*/dk*/fk*/*/privacy/disagreement_summary.parquet",
    "*/dk*/fk*/*/method.json",
)


def migrate_renamed(root="."):
    """Rename every artefact of :data:`RENAMED` under ``root``/results to its new name, then
    move every artefact of :data:`MOVED_PRIVATE` below ``results/private`` (its modification
    time kept, so Snakemake sees it up to date; a public copy whose private one exists is
    removed); the number renamed or moved."""
    import os
    from pathlib import Path

    done = 0
    results = Path(root) / "results"
    for old, new in RENAMED.items():
        for found in sorted(results.rglob(old)) if results.is_dir() else []:
            target = found.with_name(new)
            if not target.exists():
                os.replace(found, target)
                done += 1
    for pattern in MOVED_PRIVATE:
        for found in sorted(results.glob(pattern)) if results.is_dir() else []:
            if found.relative_to(results).parts[0] == "private":
                continue
            target = results / "private" / found.relative_to(results)
            if target.exists():
                found.unlink()
            else:
                target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.replace(found, target)
            done += 1
    return done
