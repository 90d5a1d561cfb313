"""The report's static index page: one self-contained HTML file (inline CSS, no scripts).

Nothing is fetched from the network. Figures are referenced by their path relative to the
page (``embed_images=True`` inlines them as ``data:`` URIs instead, so the page alone carries
everything); tables are rendered as HTML tables from a DataFrame, the CSV file next to the page
or, failing both, the Markdown text. All text is HTML-escaped.

The files this module reads are the page's own output only: the figures and tables the report
itself wrote below the page's folder in the same job (``base / item["path"]``), read back to
render or inline them. It never reads a report input; those are read once, by
:mod:`mimic_deid.report.inputs`.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from mimic_deid.core.atomic import write_text
from mimic_deid.core.errors import InputDataError
from mimic_deid.report.tables import round_table

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0;
       color: #222; background: #fafafa; line-height: 1.45; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5em 2em 4em; background: #fff; }
h1 { font-size: 1.7em; border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { font-size: 1.35em; margin-top: 2em; border-bottom: 1px solid #eee; padding-bottom: .2em; }
h3 { font-size: 1.05em; margin: 1.2em 0 .4em; }
nav.toc { background: #f3f5f7; border: 1px solid #e1e4e8; padding: .6em 1.2em; }
nav.toc ol { margin: .3em 0; }
figure { margin: 1.2em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e5e5e5; }
figcaption, p.caption { font-size: .92em; color: #444; margin-top: .4em; }
div.table-scroll { max-width: 100%; overflow-x: auto; }
table.data { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
table.data th { overflow-wrap: anywhere; }
table.data th, table.data td { border: 1px solid #d0d7de; padding: .3em .7em; text-align: right; }
table.data th { background: #f3f5f7; }
table.data td:first-child, table.data th:first-child { text-align: left; }
.missing { color: #b00; font-style: italic; }
p.note { color: #555; font-style: italic; border-left: 3px solid #bbb; padding-left: .6em; }
section.decision p { font-size: 1.08em; }
ul.decisions { list-style: none; padding: 0; margin: .8em 0; }
ul.decisions li { border-left: 5px solid #999; padding: .4em .8em; margin: .5em 0;
                  background: #f6f8fa; overflow-wrap: anywhere; }
ul.decisions li.certified { border-color: #1a7f37; }
ul.decisions li.refused { border-color: #cf222e; }
a.download { font-size: .85em; }
"""

KINDS = ("figure", "table")


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def _paragraphs(text: str | None) -> str:
    if not text:
        return ""
    blocks = [b.strip() for b in str(text).split("\n\n") if b.strip()]
    return "\n".join(f"<p>{_e(' '.join(b.split()))}</p>" for b in blocks)


def _href(path: str) -> str:
    """A relative URL for ``path`` (forward slashes, unsafe characters quoted)."""
    return quote(Path(path).as_posix(), safe="/._-~")


def _table_html(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in df.columns)
    body = []
    for row in df.itertuples(index=False, name=None):
        cells = "".join(f"<td>{_e('' if pd.isna(v) else v)}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    # wrapped: a table wider than the page scrolls inside its box, the page keeps its width
    return (
        f'<div class="table-scroll"><table class="data"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _split_markdown_row(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells, cur, i = [], [], 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            cur.append(line[i + 1])
            i += 2
            continue
        if ch == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    cells.append("".join(cur).strip())
    return cells


def markdown_table_to_frame(markdown: str) -> pd.DataFrame | None:
    """Parse a pipe table (as written by ``tables.to_markdown``) into a string DataFrame."""
    lines = [ln for ln in markdown.splitlines() if ln.strip().startswith("|")]
    if len(lines) < 2:
        return None
    header = _split_markdown_row(lines[0])
    rows = [_split_markdown_row(ln) for ln in lines[2:]]
    width = len(header)
    rows = [(r + [""] * width)[:width] for r in rows]
    return pd.DataFrame(rows, columns=header)


def _read_csv_table(path: Path) -> pd.DataFrame:
    """A table the report wrote beside its page (its own output, read back to render it)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _decisions_html(lines: Sequence[Mapping[str, Any]]) -> str:
    """The first screen's sentences, one list item each, marked certified or refused."""
    if not lines:
        return ""
    items = "".join(
        f'<li class="{_e(line.get("status", ""))}">{_e(line.get("text", ""))}</li>'
        for line in lines
    )
    return f'<ul class="decisions">{items}</ul>'


def _figure_html(item: Mapping[str, Any], base: Path, embed: bool) -> str:
    rel = str(item["path"])
    caption = item.get("caption", "")
    if item.get("note"):  # not drawn (a refused release): say why instead of the image
        return (
            f'<figure><p class="note">{_e(item["note"])}</p>'
            f"<figcaption>{_e(caption)}</figcaption></figure>"
        )
    target = base / rel
    if embed:
        if not target.is_file():
            img = f'<p class="missing">figure not found: {_e(rel)}</p>'
        else:
            data = base64.b64encode(target.read_bytes()).decode("ascii")
            img = f'<img src="data:image/png;base64,{data}" alt="{_e(caption or rel)}">'
    else:
        img = f'<img src="{_e(_href(rel))}" alt="{_e(caption or rel)}" loading="lazy">'
        if not target.is_file():
            img += f'<p class="missing">figure not found: {_e(rel)}</p>'
    return f"<figure>{img}<figcaption>{_e(caption)}</figcaption></figure>"


def _table_item_html(item: Mapping[str, Any], base: Path) -> str:
    rel = item.get("path")
    frame: pd.DataFrame | None = None
    data = item.get("data")
    if isinstance(data, pd.DataFrame):
        frame = round_table(data.reset_index() if _has_named_index(data) else data)
    elif rel and str(rel).lower().endswith(".csv") and (base / str(rel)).is_file():
        frame = _read_csv_table(base / str(rel))
    elif item.get("markdown"):
        frame = markdown_table_to_frame(str(item["markdown"]))
    parts = []
    if item.get("caption"):
        parts.append(f'<p class="caption">{_e(item["caption"])}</p>')
    if item.get("note"):  # not drawn (a refused release): say why instead of the table
        parts.append(f'<p class="note">{_e(item["note"])}</p>')
    elif frame is not None:
        parts.append(_table_html(frame))
    elif item.get("markdown"):
        parts.append(f"<pre>{_e(item['markdown'])}</pre>")
    else:
        parts.append(f'<p class="missing">table not available: {_e(rel or "")}</p>')
    if rel:
        parts.append(f'<a class="download" href="{_e(_href(str(rel)))}">{_e(rel)}</a>')
    return '<div class="table">' + "".join(parts) + "</div>"


def _has_named_index(df: pd.DataFrame) -> bool:
    return not (isinstance(df.index, pd.RangeIndex) and df.index.name is None)


def render_index(
    title: str,
    sections: Sequence[Mapping[str, Any]],
    base_dir: str | os.PathLike = ".",
    embed_images: bool = False,
) -> str:
    """The HTML text of the index page; see :func:`write_index`."""
    base = Path(base_dir)
    toc, body, lead = [], [], []
    for i, section in enumerate(sections, start=1):
        if "title" not in section:
            raise InputDataError(f"report index: section {i} has no 'title'")
        sid = f"section-{i}"
        items = section.get("items") or []
        sub = []
        css = f' class="{_e(section["class"])}"' if section.get("class") else ""
        parts = [f'<section id="{sid}"{css}><h2>{_e(section["title"])}</h2>']
        parts.append(_paragraphs(section.get("text")))
        parts.append(_decisions_html(section.get("decisions") or []))
        for j, item in enumerate(items, start=1):
            kind = item.get("kind")
            if kind not in KINDS:
                raise InputDataError(
                    f"report index: section {section['title']!r} item {j}: kind {kind!r}, "
                    f"expected one of {KINDS}"
                )
            if kind == "figure" and not item.get("path"):
                raise InputDataError(
                    f"report index: section {section['title']!r} item {j}: a figure needs a 'path'"
                )
            iid = f"{sid}-{j}"
            heading = item.get("title")
            parts.append(f'<div class="item" id="{iid}">')
            if heading:
                parts.append(f"<h3>{_e(heading)}</h3>")
                sub.append(f'<li><a href="#{iid}">{_e(heading)}</a></li>')
            if kind == "figure":
                parts.append(_figure_html(item, base, embed_images))
            else:
                parts.append(_table_item_html(item, base))
            parts.append("</div>")
        parts.append("</section>")
        # a lead section (the first screen's decision) comes before the contents
        (lead if section.get("lead") else body).append("\n".join(p for p in parts if p))
        nested = f"<ol>{''.join(sub)}</ol>" if sub else ""
        toc.append(f'<li><a href="#{sid}">{_e(section["title"])}</a>{nested}</li>')
    out = io.StringIO()
    out.write("<!DOCTYPE html>\n")
    out.write('<html lang="en">\n<head>\n<meta charset="utf-8">\n')
    out.write('<meta name="viewport" content="width=device-width, initial-scale=1">\n')
    out.write(f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n")
    out.write(f"<h1>{_e(title)}</h1>\n")
    if lead:
        out.write("\n".join(lead) + "\n")
    out.write(f'<nav class="toc"><strong>Contents</strong><ol>{"".join(toc)}</ol></nav>\n')
    out.write("\n".join(body))
    out.write("\n</main>\n</body>\n</html>\n")
    return out.getvalue()


def write_index(
    out_path: str | os.PathLike,
    title: str,
    sections: Sequence[Mapping[str, Any]],
    embed_images: bool = False,
) -> str:
    """Write the report's static index page atomically and return its HTML text.

    Parameters
    ----------
    out_path : path
        The HTML file; item paths are relative to its directory.
    title : str
        Page title and heading.
    sections : list of dict
        ``{"title": str, "text": str (optional, blank lines separate paragraphs),
        "class": str (optional, the section's CSS class), "lead": bool (optional: shown
        above the table of contents, the first screen), "decisions": [{"status":
        "certified" | "refused", "text": str}] (optional, the first screen's sentences),
        "items": [{"kind": "figure" | "table", "path": str (relative to the page),
        "caption": str, "title": str (optional, listed in the contents),
        "markdown": str (tables, optional), "data": DataFrame (tables, optional), "note": str
        (optional: the item was not drawn, and why; shown instead of the figure or table)}]}``.
        A table is rendered from ``data``, else the CSV at ``path``, else ``markdown``.
    embed_images : bool
        Inline the PNGs as ``data:`` URIs (a single portable file) instead of linking them.

    The page has a table of contents, no scripts and no external resources; all text is
    escaped. A figure or table file that does not exist is reported on the page, not raised.
    """
    base = Path(out_path).parent
    text = render_index(title, sections, base_dir=base, embed_images=embed_images)
    write_text(text, out_path)
    return text
