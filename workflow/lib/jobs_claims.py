"""Job of the claims rule: the theory rows and the studies' check tables, written as CSV, Markdown, HTML."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from countdp.mechanisms.artifact import write_csv_atomic, write_text_atomic


def claims(check_tables: Sequence[str], alpha_grid: Sequence[float], n_grid: Sequence[int], solver: str,
           method: str, table_csv: str, markdown: str, html: str, log: str) -> None:
    from countdp.claims.render import claims_html, claims_markdown
    from countdp.claims.table import TheorySettings, claims_table, theory_claims

    theory = theory_claims(TheorySettings(tuple(alpha_grid), tuple(n_grid), solver, method))
    table = claims_table({Path(p).stem: pd.read_csv(p) for p in check_tables}, theory)
    write_csv_atomic(table, table_csv)
    write_text_atomic(markdown, claims_markdown(table))
    write_text_atomic(html, claims_html(table))
    write_text_atomic(log, f"{len(table)} claims: {table['verdict'].value_counts().to_dict()}\n")
