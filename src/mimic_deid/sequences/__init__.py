"""Markov-model synthesis of medical event sequences (seed 004, Shaked & Rokach 2016).

Pipeline: :mod:`events` (TRANSFERS / CPTEVENTS to records) -> :mod:`split` (sections at a
transition-time gap, §3.3) -> :mod:`lsh` (datasketch MinHash signatures and clusters, §2.2)
-> :mod:`model` (STMM ensembles STE and CTE, §3.1-3.4) -> :mod:`privacy` (the seed's ratio
test, §3.5, which is NOT eps-differential privacy, or a discrete Laplace mechanism with a
sequential-composition budget) -> :mod:`generate` (three phases, §4) -> :mod:`metrics`
(Definition 4 similarity, top-20 2-grams, §5). :mod:`stage` holds the stage's entry points
(config check, source read) and runs one release and the sweep with Friedman tests;
:mod:`attack` measures the verbatim-copy membership attack on a release; :mod:`check` holds
the release's claims (12 and 13), checked before it is published.
"""

from mimic_deid.sequences.attack import membership_attack, sequence_keys, verbatim_shares
from mimic_deid.sequences.check import check_sequence_release
from mimic_deid.sequences.events import (
    CAREUNITS,
    MISSING_TIMES,
    EventLog,
    check_log,
    cpt_events,
    transfer_events,
    vital_events,
)
from mimic_deid.sequences.generate import generate
from mimic_deid.sequences.lsh import cluster_signatures, signatures
from mimic_deid.sequences.metrics import dataset_similarity, top_bigram_intersection
from mimic_deid.sequences.model import CTE_LEVELS, STE_LEVELS, Ensemble, factor_values, fit_ensemble
from mimic_deid.sequences.privacy import (
    MECHANISMS,
    SAMPLERS,
    Budget,
    anonymise,
    component_sensitivity,
    discrete_laplace,
    laplace_counts,
    opendp_scale_epsilon,
    ratio_suppress,
)
from mimic_deid.sequences.split import histogram_gap, split_sections, transition_times
from mimic_deid.sequences.stage import (
    Clustering,
    Settings,
    check_sequences_config,
    cluster_log,
    fit_models,
    fit_release,
    friedman_tests,
    read_source_table,
    release_settings,
    run_sweep,
)

__all__ = [
    "check_sequence_release",
    "CAREUNITS",
    "CTE_LEVELS",
    "MECHANISMS",
    "MISSING_TIMES",
    "SAMPLERS",
    "STE_LEVELS",
    "Budget",
    "Clustering",
    "Ensemble",
    "EventLog",
    "Settings",
    "anonymise",
    "check_log",
    "check_sequences_config",
    "cluster_log",
    "cluster_signatures",
    "component_sensitivity",
    "cpt_events",
    "dataset_similarity",
    "discrete_laplace",
    "factor_values",
    "fit_ensemble",
    "fit_models",
    "fit_release",
    "friedman_tests",
    "generate",
    "histogram_gap",
    "laplace_counts",
    "membership_attack",
    "read_source_table",
    "release_settings",
    "opendp_scale_epsilon",
    "ratio_suppress",
    "run_sweep",
    "sequence_keys",
    "signatures",
    "split_sections",
    "top_bigram_intersection",
    "transfer_events",
    "transition_times",
    "verbatim_shares",
    "vital_events",
]
