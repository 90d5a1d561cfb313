"""Rules publish_release, sequences_publish: copy a certified release to its public directory,
or withhold it (refused.txt with the verdict)."""

from pathlib import Path

from mimic_deid.core.atomic import read_json
from mimic_deid.core.logs import run_stage
from mimic_deid.deid import publish_release

with run_stage(snakemake.rule, snakemake.log[0]):
    staged = {
        Path(source).name: source for name, source in snakemake.input.items() if name != "check"
    }
    publish_release(read_json(snakemake.input.check), staged, snakemake.output.public)
