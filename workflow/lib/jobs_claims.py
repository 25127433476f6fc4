"""Job of the claims rule: the theory rows and the studies' check tables, written as CSV, Markdown, HTML."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from countdp.services.artifact import write_csv_atomic, write_text_atomic


def claims(check_tables: Sequence[str], designs: Sequence[Sequence], design_paths: Sequence[str], theory: Mapping,
           table_csv: str, markdown: str, html: str, log: str) -> None:
    """``designs``: [mechanism, objective slug, n, alpha spelling] of each of ``design_paths``;
    ``theory``: alphas, ns, solver, method (:class:`countdp.claims.table.TheorySettings`)."""
    from countdp.claims.render import claims_html, claims_markdown
    from countdp.claims.table import TheorySettings, claims_table, theory_claims

    artifacts = {(m, obj, int(n), float(a)): path for (m, obj, n, a), path in zip(designs, design_paths, strict=True)}
    settings = TheorySettings(tuple(theory["alphas"]), tuple(theory["ns"]), theory["solver"], theory["method"],
                              artifacts)
    table = claims_table({Path(p).stem: pd.read_csv(p) for p in check_tables}, theory_claims(settings))
    write_csv_atomic(table, table_csv)
    write_text_atomic(markdown, claims_markdown(table))
    write_text_atomic(html, claims_html(table))
    write_text_atomic(log, f"{len(table)} claims: {table['verdict'].value_counts().to_dict()}\n")
