"""`make report` (workflows/report.sh): Snakemake's HTML report holds every table and figure in results/, each on
its own page (the table's rows or the figure's PNG, the footer under it), grouped by paper, with a caption naming it:
from a fresh copy's committed results (no Snakemake metadata), and after a toy build of a table and a figure."""
import base64
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from workspace import ROOT, make_workspace, paper_targets, project_params, run, toy_zhang2018_params

pytestmark = pytest.mark.slow
PROFILE = ["--profile", "workflows/profiles/local"]


class Page(HTMLParser):
    """What a report page shows: its <h1>, its table rows (header first), its notes and its images."""

    def __init__(self, text: str):
        super().__init__()
        self.title, self.rows, self.notes, self.images = "", [], [], []
        self._open, self._text, self._in_notes = None, "", False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "div" and ("class", "notes") in attrs:
            self._in_notes = True
        elif tag == "img":
            self.images.append(dict(attrs)["src"])
        if tag in ("th", "td", "h1", "p"):
            self._open, self._text = tag, ""

    def handle_data(self, data):
        if self._open:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "div":
            self._in_notes = False
        if tag != self._open:
            return
        if tag in ("th", "td"):
            self.rows[-1].append(self._text)
        elif tag == "h1":
            self.title = self._text
        elif self._in_notes:
            self.notes.append(self._text)
        self._open = None


def script_json(html: str, script: str):
    """The JSON that Snakemake's report template assigns in its <script id="..."> block."""
    found = re.search(rf'<script id="{script}">\s*var \w+ = (.*?);\n\s*</script>', html, flags=re.S)
    assert found, f"no <script id={script!r}> in the report"
    return json.loads(found[1])


def decoded(data_uri: str) -> bytes:
    """The bytes of a base64 data: URI."""
    assert data_uri.startswith("data:") and ";base64," in data_uri, data_uri[:80]
    return base64.b64decode(data_uri.split(";base64,", 1)[1])


def tsv_parts(path: Path) -> tuple[list[list[str]], list[str]]:
    """(header and data rows, footer lines) of a results TSV, read independently of the page module."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
    return rows, [line.removeprefix("#").removeprefix(" ") for line in lines if line.startswith("#")]


def check_entry(ws: Path, report: dict, categories: dict, target: str) -> None:
    """One table or figure in the report: grouped by paper, labelled, captioned, its page showing the result."""
    paper, output = Path(target).parent.name, Path(target).stem
    tsv = ws / target
    figure = (ws / f"results/tiny/{paper}/{output}.png").exists()
    path = f"artifacts/tiny/report/{paper}/{output}.html"
    assert path in report, (target, sorted(report))
    entry = report[path]
    assert path in categories[paper]["Figures" if figure else "Tables"]
    number = re.fullmatch(r"(?:table|fig)(\d+)", output)
    name = f"{'Figure' if figure else 'Table'} {number[1]}" if number else output
    assert entry["labels"] == {"name": name}
    assert f"{paper} {name}" in entry["caption"] and f"results/tiny/{paper}/{output}.tsv" in entry["caption"]
    assert entry["mime_type"] == "text/html" and entry["job_properties"]["rule"] == "report_page"

    page = Page(decoded(entry["data_uri"]).decode("utf-8"))
    rows, footer = tsv_parts(tsv)
    assert page.rows == rows, target               # header and every row, cell by cell
    assert page.notes == footer and footer, target  # the footer, line by line
    if figure:
        assert page.title == f"{paper} {name}"
        assert [decoded(src) for src in page.images] == [(ws / f"results/tiny/{paper}/{output}.png").read_bytes()]
    else:
        title = (ws / f"results/tiny/{paper}/{output}.md").read_text(encoding="utf-8").splitlines()[0]
        assert f"**{page.title}**" == title and not page.images


def test_a_fresh_copy_reports_every_committed_table_and_figure(tmp_path):
    shared, papers = project_params()
    ws = make_workspace(tmp_path / "ws", shared, papers)
    shutil.copytree(ROOT / "results", ws / "results")   # as a fresh clone has them: no .snakemake metadata
    assert not (ws / ".snakemake").exists()
    made = run(["bash", "workflows/report.sh", "out/report.html"], ws)
    html = (ws / "out/report.html").read_text(encoding="utf-8")
    report, categories = script_json(html, "results"), script_json(html, "categories")

    targets = [t for paper in papers for t in paper_targets(paper)]
    built = [t for t in targets if (ws / t).exists()]
    assert len(built) >= 32 and set(categories) == {Path(t).parent.name for t in built}
    for target in built:
        check_entry(ws, report, categories, target)
    assert len(report) == len(built)
    for target in set(targets) - set(built):   # a paper defined before its results are committed: named, left out
        assert f"report: {target} is not built" in made.stderr
    assert "footers say which scale built them" in script_json(html, "workflow-desc")


def test_a_toy_build_then_the_report_holds_what_it_built(tmp_path):
    ws = make_workspace(tmp_path / "ws", *toy_zhang2018_params())
    built = ["results/tiny/zhang2018/table3.tsv", "results/tiny/zhang2018/fig3.tsv"]
    run(["snakemake", *PROFILE, "--", *built], ws, timeout=900)
    made = run(["bash", "workflows/report.sh"], ws)
    html = (ws / "artifacts/report.html").read_text(encoding="utf-8")
    report, categories = script_json(html, "results"), script_json(html, "categories")
    assert set(report) == {"artifacts/tiny/report/zhang2018/table3.html", "artifacts/tiny/report/zhang2018/fig3.html"}
    for target in built:
        check_entry(ws, report, categories, target)
    for target in set(paper_targets("zhang2018")) - set(built):
        assert f"report: {target} is not built" in made.stderr
    # the build's own jobs are in the report's statistics (Snakemake's metadata of that run)
    assert {"train", "table", "figure", "report_page"} <= {job["rule"] for job in script_json(html, "runtimes")
                                                           ["data"]["values"]}

    # a rebuilt table is rendered again; nothing else is rebuilt by the report
    (ws / built[0]).write_text((ws / built[0]).read_text(encoding="utf-8").replace("RNMT", "RNMT (edited)"),
                               encoding="utf-8")
    again = run(["bash", "workflows/report.sh"], ws)
    assert not re.search(r"^localrule (table|figure|train)", again.stdout + again.stderr, flags=re.M)
    page = Page(decoded(script_json((ws / "artifacts/report.html").read_text(encoding="utf-8"), "results")
                        ["artifacts/tiny/report/zhang2018/table3.html"]["data_uri"]).decode("utf-8"))
    assert "RNMT (edited)" in [row[0] for row in page.rows]
