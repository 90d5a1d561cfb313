"""Every artefact path of the workflow, spelled once (docs/architecture.md, "Artefacts").

This module holds the roots of the results folders and the series pipeline's own paths; each
comparator stage declares its artefacts in its own package, relative to the roots
(``Stage.public_paths`` below ``results/``, ``Stage.private_paths`` below ``results/private/``),
and :data:`PATHS` composes them all (:func:`compose_paths`). Templates use the rules'
wildcards: ``{release}`` (stays | ihm48), ``{dk}``, ``{fk}``, ``{heuristic}`` and ``{method}``
(a release-method label), a stage's own (``{table}``, ``{procedures}``). The rule files and the
benchmark scripts both read them from here; no other file spells ``results/``.
"""

from mimic_deid.stages import STAGES

#: The public results folder (what anyone may read) and the owner-only one below it.
RESULTS = "results"
PRIVATE = f"{RESULTS}/private"
#: Every rule's log and benchmark record; owner-only like PRIVATE (they name files and rows).
LOGS = "logs"
REPORT = f"{RESULTS}/report"
#: The sweep point part of a path: dk, then Mondrian (fk, heuristic), then the method label.
POINT = "dk{dk}/fk{fk}-{heuristic}/{method}"

#: The series pipeline's artefacts (stage ``series``), the source's and the report's.
SERIES_PATHS = {
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
    # the pairing rows of every pair before the checks (rule pair_releases, owner-only like
    # the table they make): the pairing needs the staged releases only, so it runs beside
    # the attacks and checks (issue 47)
    "cross_release_rows": f"{PRIVATE}/cross_release_rows.parquet",
    "cross_release": "results/cross_release.csv",
    # the privacy-utility frontier: one row per release of the sweep, from the cards (public:
    # every figure is its card's; evaluate.frontier)
    "frontier": "results/frontier.csv",
    # report
    "sweep_csv": f"{REPORT}/sweep_summary.csv",
    "sweep_md": f"{REPORT}/sweep_summary.md",
    "report_index": f"{REPORT}/index.html",
    "report_figure": f"{REPORT}/figures/{{name}}.png",
    "report_table": f"{REPORT}/tables/{{name}}.csv",
    # the private report: figures with original values of individual patients (owner-only)
    "private_report_index": f"{PRIVATE}/report/index.html",
    "private_report_figure": f"{PRIVATE}/report/figures/{{name}}.png",
}


def compose_paths(own, stages):
    """Every artefact path: ``own`` (full paths) and each stage's declared artefacts below
    :data:`RESULTS` (``public_paths``) or :data:`PRIVATE` (``private_paths``).

    Parameters
    ----------
    own : mapping
        Artefact key -> path template of this module (:data:`SERIES_PATHS`).
    stages : sequence of Stage
        The registered stages (``mimic_deid.stages.STAGES``), in list order.

    Returns
    -------
    dict of str to str
        Artefact key -> path template: ``own``'s, then each stage's, public before private.

    Raises
    ------
    ValueError
        A key declared twice, naming the key and both declarers.
    """
    paths = dict(own)
    owner = dict.fromkeys(own, "workflow/paths.py")
    for stage in stages:
        for root, declared in ((RESULTS, stage.public_paths), (PRIVATE, stage.private_paths)):
            for key, relative in declared.items():
                if key in paths:
                    raise ValueError(
                        f"artefact key {key!r} is declared twice: by {owner[key]} and by stage "
                        f"{stage.name!r}; give each artefact its own key"
                    )
                paths[key] = f"{root}/{relative}"
                owner[key] = f"stage {stage.name!r}"
    return paths


#: Every artefact path of the workflow, by key (:func:`compose_paths` over :data:`STAGES`).
PATHS = compose_paths(SERIES_PATHS, STAGES)


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
