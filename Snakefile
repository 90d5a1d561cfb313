# mimic-deid: de-identification of MIMIC-III ICU time series and evaluation of its cost.
# Run `snakemake --cores all`; parameters live in config/config.yaml (validated on start).
from snakemake.utils import min_version

min_version("8.20")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


# every registered stage's rule files, in registry order (mimic_deid.stages.STAGES)
for rule_file in STAGE_RULE_FILES:

    include: f"workflow/rules/{rule_file}"


# File copies, small JSON gatherers and the checks of the comparators' small public files:
# run by the main Snakemake process, never submitted to a cluster (a SLURM job's start-up
# costs more than the work).
localrules:
    publish_release,
    sequences_publish,
    sequences_card,
    release_card,
    sweep_summary,
    codes_check,
    tabular_check,


rule all:
    default_target: True
    input:
        # the stages config `stages` selects (mimic_deid.stages.STAGES)
        all_targets(),


onstart:
    # Patient-level artefacts live below results/private; the directory itself is owner-only,
    # so the subdirectories Snakemake creates for jobs (umask modes) are not reachable by
    # others either.
    make_private_dir(PRIVATE)
    protect_run_metadata()
    # Logs name files, rows and columns (never values), and are owner-only all the same.
    make_private_dir(LOGS)


onsuccess:
    # the report's path only when this run built the report or depends on it (common.smk)
    print(done_line(workflow))
