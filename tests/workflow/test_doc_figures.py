"""Every figure docs/results.md quotes is the suite's own run of this commit (issue 44).

The page quotes the tiny run (``conftest.tiny_run``, made once per session from
``workflow_helpers.TINY_CONFIG``) between the markers ``benchmarks/doc_figures.py`` writes,
with a machine-readable copy of every figure. Here the figures are recomputed from the run of
the commit under test and compared with the page's, one by one: a figure that moved fails the
test with its name, the page's value and the run's. (``tests/test_docs.py`` checks that the
page's text is its figures rendered.)
"""

from __future__ import annotations

import copy
import sys

from workflow_helpers import ROOT, TINY_CONFIG

sys.path.insert(0, str(ROOT / "benchmarks"))
import doc_figures

REGENERATE = "python benchmarks/doc_figures.py --write"


def test_the_docs_quote_the_figures_of_this_commits_run(tiny_run):
    workdir, _ = tiny_run
    page = doc_figures.quoted(doc_figures.DOC.read_text(encoding="utf-8"))
    assert page["config"] == TINY_CONFIG, (
        f"docs/results.md quotes a run of another configuration than the suite's tiny run; "
        f"regenerate it with `{REGENERATE}`"
    )
    differ = doc_figures.differences(page["figures"], doc_figures.run_figures(workdir))
    assert not differ, (
        f"docs/results.md quotes {len(differ)} figures this commit's run does not give; "
        f"regenerate them with `{REGENERATE}` and re-read the page:\n" + "\n".join(differ)
    )


def _figures() -> dict:
    return doc_figures.quoted(doc_figures.DOC.read_text(encoding="utf-8"))["figures"]


def test_a_figure_that_moved_is_named_with_both_values():
    page = _figures()
    run = copy.deepcopy(page)
    row = run["releases"][0]
    row["strong_top1_pct"] = row["strong_top1_pct"] + 0.1
    name = f"release {row['method']} {row['release']} / strong_top1_pct"
    assert doc_figures.differences(page, run) == [
        f"{name}: the page says {page['releases'][0]['strong_top1_pct']!r}, "
        f"the run gives {row['strong_top1_pct']!r}"
    ]
    assert doc_figures.differences(page, page) == []


def test_a_figure_the_run_no_longer_gives_or_the_page_lacks_is_named():
    page = _figures()
    run = copy.deepcopy(page)
    gone = run["pairs"].pop()
    name = f"pair {gone['a']} ~ {gone['b']}"
    lines = doc_figures.differences(page, run)
    assert lines == [
        f"{name} / {key}: the page says {value!r}, the run has no such figure"
        for key, value in sorted(
            {
                "chance_pct": gone["chance_pct"],
                "ci_pct / high": gone["ci_pct"][1],
                "ci_pct / low": gone["ci_pct"][0],
                "rate_pct": gone["rate_pct"],
            }.items()
        )
    ]
    assert doc_figures.differences(run, page)[0] == (
        f"{name} / chance_pct: the page does not quote it, the run gives {gone['chance_pct']!r}"
    )


def test_a_write_rewrites_only_the_block():
    text = "before\n" + doc_figures.BEGIN + "\nold\n" + doc_figures.END + "\nafter\n"
    new = doc_figures.replace_block(text, "new block\n")
    assert new == "before\n" + doc_figures.BEGIN + "\nnew block\n" + doc_figures.END + "\nafter\n"
    assert doc_figures.read_block(new) == "new block\n"
