# Report stage: the seed's figures and tables regenerated from this run, a table with a row
# per sweep point, and a static index page. Figures are also in `snakemake --report`.

FIGURES = [
    "duration_classes",
    "records_lost",
    "summary_disagreement_mean",
    "summary_disagreement_min",
    "summary_disagreement_normalised",
    "first_disagreement_cdf",
    "linkage",
    "trust_settings",
    "ga_example_high",
    "ga_example_low",
]
TABLES = ["optimiser_adhoc", "optimiser_genetic", "trust_settings_train", "trust_settings_test"]


def primary_point():
    """The sweep point the figures show: the first of the sweep."""
    return sweep_points()[0]


def genetic_point():
    """The first sweep point that uses the genetic optimiser, or None."""
    return next((p for p in sweep_points() if p["opt"].startswith("genetic")), None)


def first_opt(kind):
    return next((o for o in OPTIMIZERS if o.startswith(kind)), None)


def sweep_summary_input(wildcards):
    return {
        "duration": [f"results/stays/dk{dk}/duration.json" for dk in DK],
        "optimiser": point_paths("results/stays/" + POINT + "/optimiser.json"),
        "disagreement": point_paths(
            "results/stays/" + POINT + "/privacy/disagreement_series.parquet"
        ),
        "baseline": [
            f"results/stays/dk{dk}/baseline/disagreement_series.parquet" for dk in DK
        ],
        "linkage": point_paths("results/stays/" + POINT + "/privacy/linkage.json"),
        "utility": point_paths("results/ihm48/" + POINT + "/utility/trust_settings.csv"),
    }


rule sweep_summary:
    input:
        unpack(sweep_summary_input),
    output:
        csv=report(
            "results/report/sweep_summary.csv",
            caption="../report/sweep_summary.rst",
            category="Sweep",
        ),
        md="results/report/sweep_summary.md",
    params:
        points=sweep_points(),
    log:
        "logs/report/sweep_summary.log",
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../scripts/sweep_summary.py"


def report_input(wildcards):
    p = primary_point()
    inputs = {
        "meta": f"{PRIVATE}/series/stays/meta.parquet",
        "classes": f"{PRIVATE}/stays/dk{p['dk']}/duration.parquet",
        "baseline_summary": f"results/stays/dk{p['dk']}/baseline/disagreement_summary.parquet",
        "baseline_series": f"results/stays/dk{p['dk']}/baseline/disagreement_series.parquet",
        "summary": f"results/stays/{POINT.format(**p)}/privacy/disagreement_summary.parquet",
        "per_series": f"results/stays/{POINT.format(**p)}/privacy/disagreement_series.parquet",
        "linkage": f"results/stays/{POINT.format(**p)}/privacy/linkage.json",
        "utility": f"results/ihm48/{POINT.format(**p)}/utility/trust_settings.csv",
        "sweep": "results/report/sweep_summary.csv",
    }
    for kind in ("adhoc", "genetic"):
        opt = first_opt(kind)
        if opt:
            inputs[f"tuning_{kind}"] = f"results/stays/dk{p['dk']}/tuning/{opt}.csv"
    g = genetic_point()
    if g:
        inputs["ga_series"] = f"{PRIVATE}/series/stays/series.parquet"
        inputs["ga_classes"] = f"{PRIVATE}/stays/dk{g['dk']}/duration.parquet"
        inputs["ga_perturbed"] = f"{PRIVATE}/stays/{POINT.format(**g)}/perturbed.parquet"
        inputs["ga_targets"] = (
            f"{PRIVATE}/stays/dk{g['dk']}/fk{g['fk']}-{g['heuristic']}/targets.parquet"
        )
        inputs["ga_optimiser"] = f"{PRIVATE}/stays/{POINT.format(**g)}/optimiser.parquet"
    return inputs


rule report:
    input:
        unpack(report_input),
    output:
        index="results/report/index.html",
        figures=[
            report(
                f"results/report/figures/{name}.png",
                caption=f"../report/{name}.rst",
                category="Figures",
            )
            for name in FIGURES
        ],
        tables=[
            report(
                f"results/report/tables/{name}.csv",
                caption=f"../report/{name}.rst",
                category="Tables",
            )
            for name in TABLES
        ],
    params:
        point=primary_point(),
        genetic_point=genetic_point(),
        features=config["deid"]["features"],
    log:
        "logs/report/report.log",
    threads: 1
    resources:
        mem_mb=4000,
    script:
        "../scripts/report.py"
