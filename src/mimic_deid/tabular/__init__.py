"""Tabular de-identification of MIMIC-III demographics and procedures (seed 003).

The seed's comparator to the series release: the demographics table (§3.1, §6.1.3), its
uniqueness (§3.1, §3.2), generalisation hierarchies (App. B), OLA and Inverse OLA (§4.3, §4.4),
information loss (§5.1), m-concealing (§5.2) and ε-safe LA under DPS (§4.5, §6.2). The
``tabular`` workflow stage (``workflow/rules/tabular.smk``) runs the grids of
:mod:`mimic_deid.tabular.stage`; ``docs/tabular.md`` describes what each method promises.
"""

from mimic_deid.deid.hierarchy import (
    MISSING,
    Encoded,
    Hierarchy,
    build_hierarchy,
    encode,
    hierarchy_name,
    load_hierarchies,
)
from mimic_deid.tabular.anonymity import (
    check_k,
    check_max_sup,
    class_sizes,
    k_within,
    node_classes,
    suppression_budget,
)
from mimic_deid.tabular.check import check_tabular_release
from mimic_deid.tabular.concealing import ConcealingResult, m_concealing
from mimic_deid.tabular.demographics import (
    DEMOGRAPHIC_QIS,
    MISSING_RULES,
    admission_sequences,
    demographics,
    first_admissions,
    pivot_procedures,
    procedure_columns,
)
from mimic_deid.tabular.dps import (
    PENALTY_MODES,
    NodeScores,
    check_beta,
    check_epsilon,
    dps_delta,
    epsilon_prime,
    node_scores,
    parameter_grid,
    selection_probabilities,
    smallest_k,
)
from mimic_deid.tabular.joint import joint_risk
from mimic_deid.tabular.lattice import Lattice, SearchResult, minimal_nodes
from mimic_deid.tabular.loss import METRICS, LossModel, check_metric
from mimic_deid.tabular.ola import (
    InverseResult,
    OlaResult,
    check_max_loss,
    inverse_ola,
    is_k_anonymous,
    ola,
)
from mimic_deid.tabular.stage import (
    SEED_NAMESPACE,
    check_k_values,
    check_tabular_config,
    concealing_grid,
    demographics_table,
    dps_summary,
    epsilon_la_grid,
    inverse_grid,
    ola_grid,
    read_source_tables,
    release_table,
    uniqueness_report,
)
from mimic_deid.tabular.uniqueness import (
    PROCEDURE_VIEWS,
    demographic_uniqueness,
    procedure_uniqueness,
    uniqueness,
)

__all__ = [
    "SEED_NAMESPACE",
    "demographics_table",
    "uniqueness_report",
    "DEMOGRAPHIC_QIS",
    "MISSING_RULES",
    "METRICS",
    "MISSING",
    "PENALTY_MODES",
    "PROCEDURE_VIEWS",
    "ConcealingResult",
    "Encoded",
    "Hierarchy",
    "InverseResult",
    "Lattice",
    "LossModel",
    "NodeScores",
    "OlaResult",
    "SearchResult",
    "admission_sequences",
    "build_hierarchy",
    "check_beta",
    "check_epsilon",
    "check_k",
    "check_k_values",
    "check_tabular_release",
    "check_tabular_config",
    "check_max_loss",
    "check_max_sup",
    "check_metric",
    "class_sizes",
    "concealing_grid",
    "demographic_uniqueness",
    "demographics",
    "dps_delta",
    "dps_summary",
    "encode",
    "epsilon_la_grid",
    "epsilon_prime",
    "first_admissions",
    "hierarchy_name",
    "inverse_grid",
    "inverse_ola",
    "is_k_anonymous",
    "joint_risk",
    "k_within",
    "load_hierarchies",
    "m_concealing",
    "minimal_nodes",
    "node_classes",
    "node_scores",
    "ola",
    "ola_grid",
    "parameter_grid",
    "pivot_procedures",
    "procedure_columns",
    "procedure_uniqueness",
    "release_table",
    "selection_probabilities",
    "smallest_k",
    "suppression_budget",
    "uniqueness",
    "read_source_tables",
]
