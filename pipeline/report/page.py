"""One table or figure of results/<scale>/ as a self-contained HTML page (title, table or PNG, footer) for the report.

Snakemake's HTML report shows an image or an HTML file, but offers a .tsv or .md only as a download; these pages
are what it shows (workflows/rules/report.smk, rule report_page). They are read back from the committed files, so a
fresh clone needs no rebuild, and hold nothing but what those files hold (the same bytes from the same files).
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open
from pipeline.report.table import Table, tsv_parts

STYLE = """body{font-family:"DejaVu Sans",Verdana,sans-serif;margin:1.5rem;color:#111;background:#fff}
h1{font-size:1.1rem;margin:0 0 1rem}
table{border-collapse:collapse;font-size:.85rem;margin-bottom:1rem}
th,td{border:1px solid #cbd5e1;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#e2e8f0}
tbody tr:nth-child(even){background:#f8fafc}
img{max-width:100%;height:auto}
.notes{font-size:.8rem;color:#333;line-height:1.45}
.notes p{margin:0 0 .2rem}
summary{cursor:pointer;font-size:.85rem;margin:1rem 0 .5rem}"""


def display_name(output: str) -> str:
    """'table3' -> 'Table 3', 'fig5' -> 'Figure 5'; any other output name as it is ('length')."""
    found = re.fullmatch(r"(table|fig)(\d+)", output)
    return f"{'Table' if found[1] == 'table' else 'Figure'} {found[2]}" if found else output


def read_tsv(path: str | Path, title: str) -> Table:
    """A table's TSV back as a Table: the header row, the data rows and the '# ' lines as its footer."""
    header, rows, footer = tsv_parts(path)
    if header and header[0].startswith("#"):
        raise PipelineError(f"{path}: expected a header row first, as the table step writes it")
    return Table(title=title, columns=header, rows=rows,
                 footer=[line[2:] if line.startswith("# ") else line[1:] for line in footer])


def markdown_title(path: str | Path) -> str | None:
    """The title of a rendered table: its .md's first line '**...**', None if it has none."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    found = re.fullmatch(r"\*\*(.+)\*\*", lines[0]) if lines else None
    return found[1] if found else None


def _row(tag: str, cells: list[str]) -> str:
    """One <tr> of <th> or <td> cells, their text escaped."""
    return "<tr>" + "".join(f"<{tag}>{html.escape(cell, quote=False)}</{tag}>" for cell in cells) + "</tr>"


def table_html(table: Table) -> str:
    """The table's header and rows as an HTML <table>."""
    body = "\n".join(_row("td", row) for row in table.rows)
    return f'<table class="results">\n<thead>{_row("th", table.columns)}</thead>\n<tbody>\n{body}\n</tbody>\n</table>'


def page_html(table: Table, png: bytes | None = None, source: str = "") -> str:
    """The page: title, the table (or the PNG), the footer (a paragraph a line); a figure's values folded below."""
    notes = "".join(f"<p>{html.escape(line, quote=False)}</p>" for line in table.footer)
    notes = f'<div class="notes">{notes}</div>'
    if png is None:
        body = f"{table_html(table)}\n{notes}"
    else:
        image = base64.b64encode(png).decode("ascii")
        body = (f'<img src="data:image/png;base64,{image}" alt="{html.escape(table.title)}">\n{notes}\n'
                f'<details><summary>the values plotted ({html.escape(source, quote=False)})</summary>\n'
                f'{table_html(table)}\n</details>')
    title = html.escape(table.title, quote=False)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
            f'<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{title}</h1>\n{body}\n</body>\n</html>\n')


def write_page(tsv: str | Path, rendering: str | Path, name: str, output: str | Path) -> None:
    """The page of a table (rendering: its .md, which gives the title) or a figure (rendering: its .png)."""
    rendering = Path(rendering)
    if rendering.suffix not in (".md", ".png"):
        raise PipelineError(f"{rendering}: expected a table's .md or a figure's .png")
    png = rendering.read_bytes() if rendering.suffix == ".png" else None
    title = name if png is not None else markdown_title(rendering) or name
    with atomic_open(output) as handle:
        handle.write(page_html(read_tsv(tsv, title), png, source=str(tsv)))
