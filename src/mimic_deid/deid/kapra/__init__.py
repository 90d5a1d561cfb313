"""KAPRA and PC-KAPRA: (k,P)-anonymity release methods (seed 001), by job.

- :mod:`~mimic_deid.deid.kapra.groups`: the algorithm (specified in its docstring) on one
  variable of a class: pattern groups, P-groups, k-groups, ℓ-diverse k-groups;
- :mod:`~mimic_deid.deid.kapra.method`: the release methods ``kapra`` and ``pc-kapra`` (every
  variable of a class grouped on its own), the imputation rules, the method's summary and its
  registry hooks (config rule, summary, recoverable groups);
- :mod:`~mimic_deid.deid.kapra.claim`: claim 11 (:func:`check_kp_groups`) and its hook.
"""

from mimic_deid.deid.kapra.claim import check_kp_groups, claims
from mimic_deid.deid.kapra.groups import (
    ALGORITHMS,
    KMEANS_MAX_ITER,
    KPGrouping,
    diverse_k_groups,
    form_k_groups,
    integer_centroids,
    kapra_pattern_groups,
    kp_anonymise,
    pc_kapra_pattern_groups,
    split_p_groups,
)
from mimic_deid.deid.kapra.method import (
    IMPUTE_RULES,
    check_config,
    impute,
    imputed_records,
    k_groups,
    kp_summary,
    run_kapra,
    run_pc_kapra,
    summarise,
)

__all__ = [
    "ALGORITHMS",
    "IMPUTE_RULES",
    "KMEANS_MAX_ITER",
    "KPGrouping",
    "check_config",
    "check_kp_groups",
    "claims",
    "diverse_k_groups",
    "form_k_groups",
    "impute",
    "imputed_records",
    "integer_centroids",
    "k_groups",
    "kapra_pattern_groups",
    "kp_anonymise",
    "kp_summary",
    "pc_kapra_pattern_groups",
    "run_kapra",
    "run_pc_kapra",
    "split_p_groups",
    "summarise",
]
