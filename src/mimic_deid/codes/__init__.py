"""Diagnosis codes: re-identification risk audit and the GCCens / LDA comparators (seed 002).

* :mod:`~mimic_deid.codes.data` -- DIAGNOSES_ICD with ages, multiset records per subject or
  admission;
* :mod:`~mimic_deid.codes.index` -- distinguishability through an inverted index;
* :mod:`~mimic_deid.codes.audit` -- k-map audit and the CDF figure (seed Figure 2);
* :mod:`~mimic_deid.codes.gccens` -- Greedy Code Censoring and CUL (Algorithm 1, Tables 1/2);
* :mod:`~mimic_deid.codes.hierarchy` -- ICD-9 and age DGHs, loss metric;
* :mod:`~mimic_deid.codes.lda` -- Baseline, A-GS, MDAV, ILM/ALM (Algorithms 2-3);
* :mod:`~mimic_deid.codes.workload` -- the AvgRE query workload and its estimate (§IV.4.1);
* :mod:`~mimic_deid.codes.stage` -- the workflow stage's library calls;
* :mod:`~mimic_deid.codes.check` -- the claims of the stage's public outputs (C1-C3).
"""

from mimic_deid.codes.audit import dis_summary, plot_dis_cdf, risk_audit
from mimic_deid.codes.check import check_codes_outputs
from mimic_deid.codes.data import (
    Records,
    admission_ages,
    code_records,
    codes_at_level,
    diagnoses_with_ages,
    pair_records,
)
from mimic_deid.codes.gccens import (
    CensoringResult,
    InfeasibleCensoringError,
    cap_vector,
    cul_statistics,
    gccens,
)
from mimic_deid.codes.hierarchy import AGE_90_PLUS, Hierarchy, age_hierarchy, icd9_hierarchy
from mimic_deid.codes.index import MultisetIndex, Multisets, multisets
from mimic_deid.codes.lda import (
    ALIGNMENTS,
    Alignment,
    LdaResult,
    Trajectories,
    ags,
    ags_align,
    ags_matrices,
    baseline,
    baseline_align,
    check_k_anonymous,
    check_weights,
    mdav,
)
from mimic_deid.codes.stage import (
    GCCENS_TABLE_COLUMNS,
    absent_codes,
    check_codes_config,
    gccens_table,
    lda_table,
    lda_trajectories,
    read_source_tables,
    restrict_codes,
    sample_ids,
)
from mimic_deid.codes.workload import (
    QueryWorkload,
    avg_relative_error,
    query_estimates,
    query_workload,
)

__all__ = [
    "ALIGNMENTS",
    "check_codes_outputs",
    "read_source_tables",
    "GCCENS_TABLE_COLUMNS",
    "absent_codes",
    "AGE_90_PLUS",
    "Alignment",
    "CensoringResult",
    "Hierarchy",
    "InfeasibleCensoringError",
    "LdaResult",
    "MultisetIndex",
    "Multisets",
    "QueryWorkload",
    "Records",
    "Trajectories",
    "admission_ages",
    "age_hierarchy",
    "ags",
    "ags_align",
    "ags_matrices",
    "avg_relative_error",
    "baseline",
    "baseline_align",
    "cap_vector",
    "check_codes_config",
    "check_k_anonymous",
    "check_weights",
    "code_records",
    "codes_at_level",
    "cul_statistics",
    "diagnoses_with_ages",
    "dis_summary",
    "gccens",
    "gccens_table",
    "icd9_hierarchy",
    "lda_table",
    "lda_trajectories",
    "mdav",
    "multisets",
    "pair_records",
    "plot_dis_cdf",
    "query_estimates",
    "query_workload",
    "restrict_codes",
    "risk_audit",
    "sample_ids",
]
