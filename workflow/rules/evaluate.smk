# Evaluation stage: disagreement and linkage attack (privacy, on `stays`), distortion, and
# utility (in-hospital mortality, length of stay > 7 days) under four trust settings (on `ihm48`).


rule privacy_baseline:
    """Disagreement of the original series (released = original) per duration class."""
    input:
        series=PATHS["series"],
        classes=PATHS["duration"],
    output:
        per_series=PATHS["baseline_series"],
        summary=PATHS["baseline_summary"],
    log:
        "logs/{release}/dk{dk}/privacy_baseline.log",
    benchmark:
        "logs/benchmarks/{release}/dk{dk}/privacy_baseline.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=6000,
    params:
        features=DEID["features"],
        standardise=config["evaluate"]["standardise"],
        block_rows=config["evaluate"]["block_rows"],
        series_distance=config["evaluate"]["series_distance"],
        dtw_window=config["evaluate"]["dtw_window"],
        max_targets=config["evaluate"]["max_targets"],
        seed=config["seed"],
    script:
        "../scripts/privacy_baseline.py"


rule privacy:
    """Disagreement and linkage attacks of the staged release against the original series
    (before its check: the linkage bound is one of its claims)."""
    input:
        series=PATHS["series"],
        classes=PATHS["duration"],
        release_series=PATHS["release_series"],
        release_index=PATHS["release_index"],
        pseudonyms=PATHS["pseudonyms"],
    output:
        per_series=PATHS["disagreement_series"],
        summary=PATHS["disagreement_summary"],
        linkage=PATHS["linkage"],
    log:
        f"logs/{{release}}/{POINT}/privacy.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/privacy.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=6000,
    params:
        features=DEID["features"],
        standardise=config["evaluate"]["standardise"],
        linkage_errors=config["evaluate"]["linkage_errors"],
        seed=config["seed"],
        block_rows=config["evaluate"]["block_rows"],
        series_distance=config["evaluate"]["series_distance"],
        dtw_window=config["evaluate"]["dtw_window"],
        attacker_features=config["evaluate"]["attacker_features"],
        max_targets=config["evaluate"]["max_targets"],
    script:
        "../scripts/privacy.py"


rule privacy_curves:
    """Every disagreement curve of the class closest to 30 h (seed Figs 3.1 and 5.4), with
    the thresholds, features and one variable's values the report draws."""
    input:
        series=PATHS["series"],
        classes=PATHS["duration"],
        release_series=PATHS["release_series"],
        pseudonyms=PATHS["pseudonyms"],
        summary=PATHS["disagreement_summary"],
    output:
        curves=PATHS["main_curves"],
    log:
        f"logs/{{release}}/{POINT}/privacy_curves.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/privacy_curves.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        features=DEID["features"],
        standardise=config["evaluate"]["standardise"],
        series_distance=config["evaluate"]["series_distance"],
        dtw_window=config["evaluate"]["dtw_window"],
    script:
        "../scripts/privacy_curves.py"


rule utility:
    """Logistic regression per task: the owner's baseline and four trust settings, two ways."""
    input:
        series=path("series", release="ihm48"),
        meta=path("meta", release="ihm48"),
        release_series=path("release_series", release="ihm48"),
        release_index=path("release_index", release="ihm48"),
        check=path("check", release="ihm48"),
    output:
        table=PATHS["utility"],
    log:
        f"logs/ihm48/{POINT}/utility.log",
    benchmark:
        f"logs/benchmarks/ihm48/{POINT}/utility.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        C=config["evaluate"]["utility"]["C"],
        bootstrap=config["evaluate"]["utility"]["bootstrap"],
        seed=config["seed"],
    script:
        "../scripts/utility.py"


rule pair_releases:
    """How well two releases of one population pair series to series (evaluate.pairing):
    every pair, from the staged releases, before their checks (issue 47)."""
    input:
        unpack(pair_releases_input),
    output:
        rows=PATHS["cross_release_rows"],
    log:
        "logs/pair_releases.log",
    benchmark:
        "logs/benchmarks/pair_releases.tsv"
    # the critical path first (issue 47; source.smk)
    priority: 30
    conda:
        "../envs/mimic-deid.yaml"
    # its pairs of releases spread over every core --cores gives (issue 47)
    threads: WIDE_THREADS
    resources:
        mem_mb=4000,
    params:
        pairs=cross_release_pairs(),
        methods=cross_release_methods(),
        seed=config["seed"],
    script:
        "../scripts/pair_releases.py"


rule cross_release:
    """The cross-release table: every pair's rows (pair_releases) with whether each release
    is certified, and its pairs of two certified releases."""
    input:
        unpack(cross_release_input),
    output:
        table=PATHS["cross_release_all"],
        public=PATHS["cross_release"],
    log:
        "logs/cross_release.log",
    benchmark:
        "logs/benchmarks/cross_release.tsv"
    priority: 30
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../scripts/cross_release.py"


rule frontier:
    """The privacy-utility frontier: one row per release of the sweep, from its card
    (evaluate.frontier)."""
    input:
        # sweep order, stays before ihm48 at each point: the table's row order
        cards=[
            path("card", release=release, **point)
            for point in sweep_points()
            for release in RELEASES
        ],
    output:
        table=PATHS["frontier"],
    log:
        "logs/frontier.log",
    benchmark:
        "logs/benchmarks/frontier.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        cross=config["evaluate"]["utility"]["cross"],
    script:
        "../scripts/frontier.py"
