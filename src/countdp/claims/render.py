"""The claims table rendered: ``results/claims.md`` (Markdown) and ``results/claims.html`` (a standalone page).

Both come from Jinja2 templates shipped with the package (``countdp/claims/templates/*.j2``).
"""

from __future__ import annotations

import html

import jinja2
import pandas as pd

from countdp.claims.table import CHECK_TABLE_PREFIXES, CLAIM_COLUMNS, VERDICTS


def _escape(value: object) -> str:
    return "" if pd.isna(value) else html.escape(str(value))


def _render(template: str, table: pd.DataFrame, **extra) -> str:
    env = jinja2.Environment(loader=jinja2.PackageLoader("countdp.claims", "templates"), autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(md=lambda value: str(value).replace("|", "\\|").replace("\n", " "), h=_escape,
                       css=lambda verdict: str(verdict).replace(" ", "-"))
    counts = table["verdict"].value_counts()
    rows = [dict(zip(CLAIM_COLUMNS, row, strict=True)) for row in table.itertuples(index=False)]
    return env.get_template(template).render(columns=CLAIM_COLUMNS, rows=rows, verdicts=VERDICTS,
                                             counts={v: counts.get(v, 0) for v in VERDICTS}, **extra)


def claims_markdown(table: pd.DataFrame) -> str:
    """``results/claims.md``: a summary line and the table as Markdown."""
    counts = table["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    return _render("claims.md.j2", table, summary=summary)


def claims_html(table: pd.DataFrame) -> str:
    """``results/claims.html``: a standalone page with the verdict counts and the whole table.

    Shown in the Snakemake report (category "Claims"); ``differs`` rows are highlighted and
    listed at the top with links to their rows.
    """
    differs = list(table.loc[table["verdict"] != "reproduced", "id"])
    return _render("claims.html.j2", table, differs=differs, prefixes=CHECK_TABLE_PREFIXES)
