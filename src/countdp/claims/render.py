"""The claims table rendered: ``results/claims.md`` (Markdown) and ``results/claims.html`` (a standalone page)."""

from __future__ import annotations

import html

import pandas as pd

from countdp.claims.table import CHECK_TABLE_PREFIXES, CLAIM_COLUMNS, VERDICTS


def claims_markdown(table: pd.DataFrame) -> str:
    """``results/claims.md``: a summary line and the table as Markdown."""
    counts = table["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)

    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["# Claims of Cormode, Kulkarni, Srivastava (ICDE 2018): what we measured", "",
             f"{len(table)} claims: {summary}. Verdicts are computed from the results by `countdp.claims.table`; "
             "`differs` rows explain the difference.", "",
             "| " + " | ".join(CLAIM_COLUMNS) + " |", "|" + "---|" * len(CLAIM_COLUMNS)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


_HTML_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 13px; margin: 1.2em;
       color: #1f2937; }
h1 { font-size: 1.3em; margin: 0 0 .4em; }
p { max-width: 70em; }
.counts span { display: inline-block; padding: .25em .7em; margin-right: .5em; border-radius: 1em; font-weight: 600; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
th, td { border: 1px solid #d1d5db; padding: .3em .45em; vertical-align: top; text-align: left;
         overflow-wrap: anywhere; }
col.id { width: 7%; } col.source { width: 8%; } col.statement { width: 20%; } col.paper_value { width: 9%; }
col.our_value { width: 18%; } col.test { width: 11%; } col.verdict { width: 10%; } col.explanation { width: 17%; }
th { background: #f3f4f6; position: sticky; top: 0; }
td.id { font-family: ui-monospace, monospace; }
.reproduced { background: #dcfce7; }
.differs { background: #fef3c7; }
.not-checkable { background: #e5e7eb; }
tr.differs td { background: #fffbeb; }
tr.not-checkable td { background: #f3f4f6; }
td.verdict span { padding: .1em .5em; border-radius: .8em; white-space: nowrap; font-weight: 600; }
"""


def claims_html(table: pd.DataFrame) -> str:
    """``results/claims.html``: a standalone page with the verdict counts and the whole table.

    Shown in the Snakemake report (category "Claims"); ``differs`` rows are highlighted and
    listed at the top with links to their rows.
    """
    counts = table["verdict"].value_counts()

    def text(value: object) -> str:
        return "" if pd.isna(value) else html.escape(str(value))

    def css(verdict: object) -> str:
        return str(verdict).replace(" ", "-")

    badges = "".join(f'<span class="{css(v)}">{counts.get(v, 0)} {html.escape(v)}</span>' for v in VERDICTS)
    differs = table[table["verdict"] != "reproduced"]
    links = ", ".join(f'<a href="#{text(i)}">{text(i)}</a>' for i in differs["id"]) or "none"
    head = "".join(f"<th>{html.escape(c.replace('_', ' '))}</th>" for c in CLAIM_COLUMNS)
    rows = []
    for row in table.itertuples(index=False):
        record = dict(zip(CLAIM_COLUMNS, row, strict=True))
        cells = []
        for column in CLAIM_COLUMNS:
            value = text(record[column])
            if column == "id":
                cells.append(f'<td class="id">{value}</td>')
            elif column == "verdict":
                cells.append(f'<td class="verdict"><span class="{css(record[column])}">{value}</span></td>')
            else:
                cells.append(f"<td>{value}</td>")
        rows.append(f'<tr id="{text(record["id"])}" class="{css(record["verdict"])}">{"".join(cells)}</tr>')
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        "<title>Claims of Cormode, Kulkarni, Srivastava (ICDE 2018)</title>",
        f"<style>{_HTML_STYLE}</style>", "</head>", "<body>",
        "<h1>Claims of Cormode, Kulkarni, Srivastava (ICDE 2018): what we measured</h1>",
        f'<p class="counts"><b>{len(table)} claims:</b> {badges}</p>',
        "<p>One row per statement of the paper: the paper's value, the value this pipeline measured, the test "
        "used, and a verdict computed from the results by <code>countdp.claims.table</code>. Rows "
        f"<code>{CHECK_TABLE_PREFIXES['intrinsic_checks']}-*</code> come from the intrinsic studies (Figures 1-9, "
        f"<code>intrinsic_checks.csv</code>), rows <code>{CHECK_TABLE_PREFIXES['extrinsic_findings']}-*</code> "
        "from the extrinsic findings (Figures 10-13, <code>extrinsic_findings.csv</code>), rows "
        f"<code>{CHECK_TABLE_PREFIXES['ext_checks']}-*</code> from the studies beyond the paper "
        "(<code>ext_checks.csv</code>); the others are recomputed from the library. <code>differs</code> rows "
        "explain the difference.</p>",
        f"<p><b>Not reproduced ({len(differs)}):</b> {links}</p>",
        "<table><colgroup>" + "".join(f'<col class="{c}">' for c in CLAIM_COLUMNS) + "</colgroup>",
        f"<thead><tr>{head}</tr></thead><tbody>", *rows, "</tbody></table>",
        "</body>", "</html>", ""])
