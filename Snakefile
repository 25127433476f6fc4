# countdp: reproduce "Constrained Differential Privacy for Count Data" (Cormode, Kulkarni,
# Srivastava, ICDE 2018).  `snakemake --cores all` builds every figure, table and the claims.
from snakemake.utils import min_version

min_version("8.10")


configfile: "config/config.yaml"
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/targets.smk"
include: "workflow/rules/targets_objectives.smk"
include: "workflow/rules/design.smk"
include: "workflow/rules/figures_intrinsic.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/figures_extrinsic.smk"
include: "workflow/rules/extensions.smk"
include: "workflow/rules/companions.smk"
include: "workflow/rules/claims.smk"


rule all:
    input:
        design_targets(),  # every design sweep's manifest: a deleted artifact reruns its sweep
        intrinsic_targets(),
        extrinsic_targets(),
        extensions_targets(),
        companion_targets(),
        claims_targets(),
    default_target: True
