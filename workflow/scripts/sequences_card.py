"""Rule sequences_card: the card of a sequence release (mimic_deid.sequences.card)."""

from mimic_deid.core.atomic import read_json, write_json
from mimic_deid.core.logs import run_stage
from mimic_deid.sequences.card import sequence_card

with run_stage(snakemake.rule, snakemake.log[0]):
    card = sequence_card(
        snakemake.wildcards.table,
        read_json(snakemake.input.check),
        read_json(snakemake.input.summary),
        read_json(snakemake.input.attack),
    )
    write_json(card, snakemake.output.card)
