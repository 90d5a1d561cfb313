# De-identification stage: duration k-classes, Mondrian feature targets, the release method,
# the pseudonymous release and its privacy check. Paths name exactly the parameters each
# artefact depends on, so a sweep re-runs only what changed.


rule duration_classes:
    input:
        meta=PATHS["meta"],
    output:
        classes=PATHS["duration"],
        summary=PATHS["duration_summary"],
        methods=PATHS["duration_methods"],
        records_lost=PATHS["records_lost"],
    log:
        "logs/{release}/dk{dk}/duration.log",
    benchmark:
        "logs/benchmarks/{release}/dk{dk}/duration.tsv"
    # the critical path first (issue 47; source.smk)
    priority: 50
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        group_by_split=group_by_split,
        outcome_l=outcome_l,
        method=config["duration"]["method"],
    script:
        "../scripts/duration_classes.py"


rule mondrian:
    """Mondrian equivalence classes and feature targets inside demographic cells
    (release.demographics); ℓ-diverse in the labels a release publishes (deid.outcome_l).
    """
    input:
        series=PATHS["series"],
        classes=PATHS["duration"],
        meta=PATHS["meta"],
        demographics=PATHS["cohort_demographics"],
        hierarchies=config["release"]["hierarchies"],
    output:
        targets=PATHS["targets"],
        summary=PATHS["mondrian_summary"],
    log:
        "logs/{release}/dk{dk}/fk{fk}-{heuristic}/mondrian.log",
    benchmark:
        "logs/benchmarks/{release}/dk{dk}/fk{fk}-{heuristic}/mondrian.tsv"
    # the critical path first (issue 47; source.smk)
    priority: 50
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        features=PROTECTED,
        outcome_l=outcome_l,
        demographics=config["release"]["demographics"],
    script:
        "../scripts/mondrian.py"


rule deidentify:
    input:
        series=PATHS["series"],
        classes=PATHS["duration"],
        targets=PATHS["targets"],
        meta=PATHS["meta"],
        variables=config["variables"],
    output:
        perturbed=PATHS["perturbed"],
        per_series=PATHS["method_series"],
        summary=PATHS["method_summary"],
    log:
        f"logs/{{release}}/{POINT}/deidentify.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/deidentify.tsv"
    # the critical path first (issue 47; source.smk)
    priority: 40
    conda:
        "../envs/mimic-deid.yaml"
    # Every method spreads its classes (the genetic optimiser its (class, chunk) tasks) over
    # every core --cores gives (one worker process each; issue 47); the output does not
    # depend on the number.
    threads: WIDE_THREADS
    # at full MIMIC-III size (genetic, stays, two workers; 2026-12-02, benchmarks/README.md):
    # 3.40 GB PSS, 6.04 GB RSS summed over the processes (shared pages counted twice)
    resources:
        mem_mb=8000,
    params:
        features=PROTECTED,
        seed=config["seed"],
        outcome_l=outcome_l,
    script:
        "../scripts/deidentify.py"


rule method_examples:
    """The worst and the median series of a method by unfeasibility (seed Figs 6.2/6.3): the
    private report's worked examples (owner-only: original values of two patients)."""
    input:
        series=PATHS["series"],
        classes=PATHS["duration"],
        perturbed=PATHS["perturbed"],
        targets=PATHS["targets"],
        per_series=PATHS["method_series"],
    output:
        examples=PATHS["method_examples"],
    log:
        f"logs/{{release}}/{POINT}/method_examples.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/method_examples.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        features=DEID["features"],
    script:
        "../scripts/method_examples.py"


rule release:
    input:
        perturbed=PATHS["perturbed"],
        classes=PATHS["duration"],
        meta=PATHS["meta"],
        targets=PATHS["targets"],
        variables=config["variables"],
    output:
        series=PATHS["release_series"],
        index=PATHS["release_index"],
        pseudonyms=PATHS["pseudonyms"],
    log:
        f"logs/{{release}}/{POINT}/release.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/release.tsv"
    # the critical path first (issue 47; source.smk)
    priority: 30
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        seed=config["seed"],
        variables=RELEASED,
        labelled=labelled,
        demographics=config["release"]["demographics"],
        group_by_split=group_by_split,
    script:
        "../scripts/release.py"


rule check_release:
    """Every privacy claim of the staged release, the linkage bound among them: the verdict."""
    input:
        series=PATHS["release_series"],
        index=PATHS["release_index"],
        classes=PATHS["duration"],
        targets=PATHS["targets"],
        pseudonyms=PATHS["pseudonyms"],
        per_series=PATHS["method_series"],
        meta=PATHS["meta"],
        linkage=PATHS["linkage"],
        demographics=PATHS["cohort_demographics"],
        hierarchies=config["release"]["hierarchies"],
        variables=config["variables"],
    output:
        check=PATHS["check"],
    log:
        f"logs/{{release}}/{POINT}/check_release.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/check_release.tsv"
    # the critical path first (issue 47; source.smk)
    priority: 30
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        group_by_split=group_by_split,
        variables=RELEASED,
        labelled=labelled,
        outcome_l=DEID["outcome_l"],
        strict=config["strict"],
        demographics=config["release"]["demographics"],
    script:
        "../scripts/check_release.py"


rule publish_release:
    """The public release: the staged tables, the card and the data dictionary if certified,
    else refused.txt (the verdict) and the card. After release_card (docs/architecture.md,
    "The release folder")."""
    input:
        series=PATHS["release_series"],
        index=PATHS["release_index"],
        check=PATHS["check"],
        card=PATHS["card"],
        variables=config["variables"],
        hierarchies=config["release"]["hierarchies"],
    output:
        public=directory(PATHS["published"]),
    log:
        f"logs/{{release}}/{POINT}/publish_release.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/publish_release.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        staged=["series", "index"],
    script:
        "../scripts/publish_release.py"


rule release_card:
    """The release card: method, promises, attacks with intervals against the bound, verdict
    and (ihm48) utility beside the seed's figures."""
    input:
        unpack(card_input),
    output:
        card=PATHS["card"],
    log:
        f"logs/{{release}}/{POINT}/release_card.log",
    benchmark:
        f"logs/benchmarks/{{release}}/{POINT}/release_card.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=500,
    params:
        outcome_l=outcome_l,
    script:
        "../scripts/release_card.py"


rule tuning_table:
    """Seed Tables 6.1/6.2: 20 series from each of 5 duration classes, Mondrian k=5."""
    input:
        series=path("series", release="stays"),
        classes=path("duration", release="stays"),
    output:
        table=PATHS["tuning_table"],
    log:
        "logs/stays/dk{dk}/tuning/{method}.log",
    benchmark:
        "logs/benchmarks/stays/dk{dk}/tuning/{method}.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    # 2.26 GB peak at full MIMIC-III size (benchmarks/README.md)
    resources:
        mem_mb=3000,
    params:
        features=DEID["features"],
        seed=config["seed"],
        series_per_class=DEID["tuning"]["series_per_class"],
        eligibility=DEID["tuning"]["eligibility"],
    script:
        "../scripts/tuning_table.py"


rule tuning_tables:
    """Seed Tables 6.1/6.2 for every ad-hoc and genetic point, each fitness variant; §6.2's fitness comparison."""
    input:
        tables=[path("tuning_table", dk=DEID["dk"][0], method=m) for m in TUNING_TABLES],
    output:
        tables=path("tuning_tables", dk=DEID["dk"][0]),
        fitness=path("tuning_fitness", dk=DEID["dk"][0]),
    log:
        "logs/stays/tuning_tables.log",
    benchmark:
        "logs/benchmarks/stays/tuning_tables.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        labels=TUNING_TABLES,
    script:
        "../scripts/tuning_tables.py"


rule tuning_sweep:
    """The seed's genetic tuning grid (6.2) on the tuning series: one row per grid point."""
    input:
        tables=[path("tuning_table", dk=DEID["dk"][0], method=m) for m in TUNING_GRID],
    output:
        summary=path("tuning_grid", dk=DEID["dk"][0]),
    log:
        "logs/stays/tuning_sweep.log",
    benchmark:
        "logs/benchmarks/stays/tuning_sweep.tsv"
    conda:
        "../envs/mimic-deid.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        labels=TUNING_GRID,
    script:
        "../scripts/tuning_grid.py"
