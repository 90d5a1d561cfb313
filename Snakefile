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
    frontier,
    codes_check,
    tabular_check,


rule all:
    default_target: True
    input:
        # the stages config `stages` selects (mimic_deid.stages.STAGES)
        all_targets(),


onstart:
    # Patient-level artefacts live below results/private, and logs name files, rows and
    # columns (never values): every file and folder below both is owner-only (common.smk),
    # also what an earlier version or a killed run left there.
    protect_private()
    protect_run_metadata()


onsuccess:
    # again at the end: what Snakemake itself wrote there (job output folders under the
    # umask, the .snakemake_timestamp of a folder output)
    protect_private()
    # the report's path only when this run built the report or depends on it (common.smk)
    print(done_line(workflow))


onerror:
    protect_private()
