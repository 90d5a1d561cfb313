"""The documentation names only files that exist (docs/architecture.md is "the code as it
is"): every code path it spells, relative to the package, the workflow or the repository;
every relative link and anchor resolves; the README stays a front page; the figures it
quotes are checked (issue 44)."""

from __future__ import annotations

import re
import sys

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


@pytest.mark.parametrize(
    "doc",
    [
        "README.md",
        "config/README.md",
        *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
    ],
)
def test_every_code_path_a_doc_names_exists(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    named = set(CODE_PATH.findall(text)) - EXAMPLES
    missing = sorted(p for p in named if not any((base / p).exists() for base in BASES))
    assert missing == [], f"{doc} names files that do not exist: {missing}"


#: The pages of the documentation: the README, every page of docs/, the parameter reference
#: and the benchmarks' records.
PAGES = [
    "README.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
    "config/README.md",
    "benchmarks/README.md",
]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces to
    hyphens, ``-1``, ``-2`` ... after a repeated one."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", FENCE.sub("", text), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def test_anchors_are_githubs():
    text = "# A title\n## Sweeps: a (k,P) test, 3,000 subjects\n## A title\n```\n# not one\n```\n"
    assert anchors(text) == {"a-title", "sweeps-a-kp-test-3000-subjects", "a-title-1"}


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_of_a_page_resolves(page: str) -> None:
    """A link to a file reaches it, and a link to ``#anchor`` a heading of its page."""
    source = ROOT / page
    broken = []
    for target in LINK.findall(FENCE.sub("", source.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        path = (source.parent / file).resolve() if file else source
        if not path.exists():
            broken.append(f"{target} (no file {path.relative_to(ROOT)})")
        elif anchor and path.suffix == ".md":
            if anchor not in anchors(path.read_text(encoding="utf-8")):
                broken.append(f"{target} (no heading #{anchor} in {path.relative_to(ROOT)})")
    assert broken == [], f"{page} links to what does not exist: {broken}"


def test_the_readme_is_a_front_page():
    """Issue 44: at most 250 lines; the rest lives in docs/, linked from its table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    linked = set(LINK.findall(readme))
    for topic in ("configuration", "outputs", "methods", "results", "development"):
        assert f"docs/{topic}.md" in linked, topic
    assert "benchmarks/README.md" in linked


def test_the_quoted_figures_are_their_record_rendered():
    """docs/results.md's block is its machine-readable figures rendered, so no figure of the
    text can be edited by hand; tests/workflow/test_doc_figures.py compares the figures with
    the suite's run of the commit under test."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import doc_figures

    text = doc_figures.DOC.read_text(encoding="utf-8")
    page = doc_figures.quoted(text)
    assert doc_figures.read_block(text) == doc_figures.doc_block(page["config"], page["figures"])
    # no other page carries a figures block of its own
    for other in PAGES:
        if other != "docs/results.md":
            assert doc_figures.BEGIN not in (ROOT / other).read_text(encoding="utf-8"), other
