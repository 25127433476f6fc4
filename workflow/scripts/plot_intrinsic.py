"""Render one intrinsic figure (rule params.plot names the function in countdp.plots.figures)."""

from pathlib import Path

from countdp.plots import figures as plots

snakemake = globals()["snakemake"]  # injected by Snakemake's `script:` directive
draw = getattr(plots, snakemake.params.plot)
draw(dict(snakemake.input.items()), list(snakemake.output), title=snakemake.params.title)
Path(snakemake.log[0]).write_text("".join(f"{path}\n" for path in snakemake.output))
