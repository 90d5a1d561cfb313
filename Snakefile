# mimic-deid: de-identification of MIMIC-III ICU time series and evaluation of its cost.
# Run `snakemake --cores all`; parameters live in config/config.yaml (validated on start).
from snakemake.utils import min_version

min_version("8.20")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/source.smk"
include: "workflow/rules/cohort.smk"
include: "workflow/rules/series.smk"
include: "workflow/rules/deid.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/codes.smk"
include: "workflow/rules/sequences_inputs.smk"
include: "workflow/rules/sequences.smk"
include: "workflow/rules/tabular.smk"


rule all:
    default_target: True
    input:
        PATHS["report_index"],
        PATHS["private_report_index"],
        PATHS["sweep_csv"],
        rules.codes.input,
        sequence_outputs(),
        TABULAR_OUTPUTS,
        PATHS["tabular_joint_risk"],


onstart:
    # Patient-level artefacts live below results/private; the directory itself is owner-only,
    # so the subdirectories Snakemake creates for jobs (umask modes) are not reachable by
    # others either.
    make_private_dir(PRIVATE)
    # Logs name files, rows and columns (never values), and are owner-only all the same.
    make_private_dir(LOGS)


onsuccess:
    print(
        f"mimic-deid: done. Report: {Path(PATHS['report_index']).resolve()} "
        "(for the Snakemake HTML report: snakemake --report report.html)"
    )
