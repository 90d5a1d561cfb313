"""The README's results block is the record of a run, rendered (benchmarks/readme_results.py).

The record (``benchmarks/results/readme_results.json``) is made from a finished run of the
default workflow; the workflow test (``test_workflow.py``) recomputes its figures from a tiny
run. Here: the README quotes the record exactly, so a figure cannot be edited by hand, nor the
record re-made without the README following.
"""

from __future__ import annotations

import json
import sys

from workflow_helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import readme_results


def test_the_readme_block_is_the_record_rendered():
    record = json.loads(readme_results.RECORD.read_text())
    block = readme_results.readme_block(readme_results.README.read_text())
    assert block == readme_results.render(record)


def test_the_record_holds_every_release_of_the_readme_run():
    record = json.loads(readme_results.RECORD.read_text())
    rows = {(r["method"], r["release"]) for r in record["figures"]["releases"]}
    methods = ("adhoc", "genetic", "kapra", "pc-kapra")
    assert rows == {(m, r) for m in methods for r in ("stays", "ihm48")}
    # every two releases of the sweep are paired: 8 releases, 28 pairs
    assert len(record["figures"]["pairs"]) == 28


def test_a_record_rewrites_only_the_block():
    text = "before\n" + readme_results.BEGIN + "\nold\n" + readme_results.END + "\nafter\n"
    new = readme_results.replace_block(text, "new block\n")
    assert (
        new
        == "before\n" + readme_results.BEGIN + "\nnew block\n" + readme_results.END + "\nafter\n"
    )
    assert readme_results.readme_block(new) == "new block\n"
