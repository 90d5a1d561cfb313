"""The documentation names only files that exist (docs/architecture.md is "the code as it
is"): every code path it spells, relative to the package, the workflow or the repository."""

from __future__ import annotations

import re

import pytest
from workflow_helpers import ROOT

#: Where a path of the docs may start: the package's parts, the workflow and the repository.
BASES = (ROOT / "src" / "mimic_deid", ROOT / "workflow", ROOT)
#: A code path: a folder of the package or the repository, then a file of code or text.
CODE_PATH = re.compile(
    r"`((?:core|sources|synthetic|pipeline|deid|evaluate|codes|sequences|tabular|report|rules"
    r"|scripts|workflow|tests|benchmarks|docs|config|src)/[A-Za-z0-9_./-]+\.(?:py|smk|md|yaml))`"
)
#: Files the docs name on purpose though they do not exist (the worked examples' new method
#: and new stage).
EXAMPLES = {
    "src/mimic_deid/deid/noise.py",
    "docs/notes.md",
    "report/notes.py",
    "workflow/rules/notes.smk",
}


@pytest.mark.parametrize("doc", ["docs/architecture.md", "README.md", "config/README.md"])
def test_every_code_path_a_doc_names_exists(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    named = set(CODE_PATH.findall(text)) - EXAMPLES
    assert named, doc
    missing = sorted(p for p in named if not any((base / p).exists() for base in BASES))
    assert missing == [], f"{doc} names files that do not exist: {missing}"
