"""Every tuning constant of the design engine, in one frozen object that is passed in.

None of these changes what is proven: every answer is checked by the independent weak-duality
routine of :mod:`countdp.design.optimality` and the exact DP test of the released weights.  They
choose which path answers and how fast.  **No limit is wall-clock.**  Every limit counts work:
simplex iterations (:attr:`SolverTuning.guided_simplex_iterations`,
:attr:`TemplateTuning.template_simplex_iterations`, :attr:`ChainTuning.support_dual_iterations`,
:attr:`ChainTuning.completion_iterations`), iterations times rows
(:attr:`SolverTuning.quick_vertex_work`, :attr:`TemplateTuning.template_simplex_work`,
:attr:`TemplateTuning.dual_simplex_work`), Clarabel's iterations (its own ``max_iter``, 200), or
rounds (the template widths tried, the dual repair tiers, the refinement steps).  So the path
taken, the design and its certificate are the same on any machine and under any load; the
seconds recorded in a design's ``extra`` are for the record and decide nothing.  The one
wall-clock limit is the caller's own, at the top (``design_lp(..., time_limit=...)``,
``countdp design --time-limit``, :mod:`countdp.design.watch`): it is not a setting, and without
it nothing stops on time.  :attr:`SolverTuning.progress_seconds`, in seconds, paces the progress
lines and decides nothing else.  :attr:`SolverTuning.memory_bound` bounds the general path's memory
by its estimate (:mod:`countdp.design.memory`).  Why each
value is what it is, with the measurements behind it, is in ``docs/performance.md`` and
``docs/tuning.md``.

The constants are grouped by the part of the engine they tune: :class:`SolverSettings` holds a
:class:`SolverTuning` (``solver``), a :class:`TemplateTuning` (``template``), a
:class:`ChainTuning` (``chains``) and a :class:`ProofTuning` (``proof``); a field keeps its name
in its group (``settings.template.template_min_n``), and :data:`FIELD_GROUPS` says which group
holds each name.  Tests and benchmarks build their own, by group or by field name
(``SolverSettings.of(template_min_n=10_000)``), and pass it to
:func:`countdp.design.designer.design_lp` or the planner, instead of changing module globals;
every sub-solve of a request gets the settings its caller passed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields, replace


@dataclass(frozen=True)
class SolverTuning:
    """The solvers: which algorithm ``method="auto"`` runs, Clarabel's and HiGHS's tolerances and
    work limits, the guided simplex from Clarabel's basis, and whether the solvers print."""

    auto_min_n: int = 16
    """``design_lp(backend="auto")`` uses the reduced model from this ``n``; smaller models go to
    the plain cvxpy model, whose vertex choice the small-n figures were made with."""
    ipm_min_nnz: int = 8_000
    """From this many constraint non-zeros ``method="auto"`` leaves dual simplex for an interior
    point (L0) or the guided simplex (the other objectives)."""
    large_method: str = "clarabel"
    """The interior point method ``auto`` uses on large L0 models."""
    clarabel_tol: float = 1e-12
    """Clarabel's gap and feasibility tolerances on the reduced model."""
    clarabel_direct_method: str = "qdldl"
    """Clarabel's sparse LDL^T factorisation of the KKT system (faster than its default here)."""
    guide_clarabel_tol: float = 1e-14
    """Clarabel's tolerances for a point that may be proven as it is (its duals must be accurate)."""
    template_clarabel_tol: float = 1e-12
    """Clarabel's tolerances for the point that only seeds an L1 or L2 template's simplex."""
    refine_max_residual: float = 1e-11
    """A stalled ('AlmostSolved') point with at most this relative primal residual is solved again
    with iterative refinement; above it refinement stalls too and is skipped."""
    highs_tol: float = 1e-10
    """HiGHS primal and dual feasibility tolerances (its smallest allowed)."""
    tight_row_scales: tuple[float, ...] = (1e3, 1e6)
    """Row scale factors of the tightened re-solves of a vertex whose DP repair kept its
    certificate open, tried in turn."""
    col_scale_floor: float = 1e-3
    """Smallest column scale (HiGHS's dual tolerance acts on scale times reduced cost)."""
    warm_edge_weights: int = 1
    """HiGHS's dual edge weight strategy from a given basis: Devex (steepest edge first computes
    every row's exact weight, which dominates a warm start)."""
    guess_tail: float = 1e-8
    """Entries of an interior point below this (scaled) are completed by structure in the basis guess."""
    quick_vertex_work: tuple[float, float] = (7.5e7, 3e7)
    """Work (iterations times rows) of the dual, then the primal simplex from Clarabel's basis
    before Clarabel's point is offered to the proof, below :attr:`TemplateTuning.template_min_n`."""
    guided_simplex_iterations: int = 6000
    """Iterations of each simplex from Clarabel's basis (a good guess needs a few pivots)."""
    memory_bound: int = 2 * 2**30
    """Bytes the general path (a full-size LP: :data:`countdp.design.planner.GENERAL_PATH`) may use, by
    its estimate (:func:`countdp.design.memory.general_path_bytes`); a general strategy whose
    estimate is above it is not run (the fast paths are not bounded by it: their estimate is a
    fraction of the general one)."""
    fast_path_share: float = 0.5
    """Under the caller's time limit, where the general path does not fit :attr:`memory_bound` and the
    design within the bound applies (:mod:`countdp.design.strategies.square_bound`), the fraction of
    the limit the fast paths before it may use; the rest is left for that design, which a fast path
    still running at the limit would otherwise leave to the closed-form fallback."""
    progress_seconds: float = 1.0
    """Shortest time between two progress lines of one solve: Clarabel's (its primal and dual objectives
    and their gap, each iteration) and HiGHS's (an iteration and objective of its log, a dual bound while
    rows are broken; its interior point logs every iteration).  A line due sooner is held back, and the
    last one held is said when the solve ends.  It changes what is printed only, never the path."""
    verbose: bool = False
    """Let the solvers print their own output: HiGHS's once-per-process banner (on standard error,
    if the process's first HiGHS model is made under these settings) and HiGHS's, Clarabel's and
    cvxpy's logs (where they write them, standard output).  Off, the library prints nothing of theirs."""


@dataclass(frozen=True)
class TemplateTuning:
    """The templates: the guide template of the general LP, the large-n template (its widths, its
    restricted dual and support dual) and the square-corner template."""

    template_min_n: int = 160
    """Smallest ``n`` guided by a template or answered by the large-n template path."""
    guide_decay: float = 1e-2
    """The guide template's corner width ``W`` is at least ``log(guide_decay) / log(alpha)``."""
    guide_min_width_fraction: float = 0.2
    """The guide template's ``W`` is at least this fraction of ``n``."""
    guide_max_template_fraction: float = 0.7
    """No guide template when it would exceed this fraction of ``n`` (alpha near 1)."""
    template_simplex_work: tuple[float, float] = (5e8, 3e7)
    """Work of the dual, then the primal simplex of the guide template's own solve."""
    template_simplex_iterations: int = 5000
    """Iterations of each dual simplex at ``n`` from the guide template's guess."""
    face_alpha: float = 0.9
    """L0,d (``d >= 1``) gets no guide template from this alpha (its optimal face is large)."""
    corner_decay: float = 0.25
    """L0's large-n template width: the smallest multiple of 4 with ``alpha^W`` at most this."""
    min_width: int = 16
    """The narrowest large-n template width."""
    widening: float = 1.5
    """When the first large-n width does not close, one this much wider is tried."""
    support_corner_decay: float = 0.05
    """:attr:`corner_decay` for the support dual of the other objectives."""
    support_widths: tuple[int, ...] = (16,)
    """Large-n template widths tried for the objectives other than L0."""
    dual_simplex_work: float = 5e8
    """Work of HiGHS's primal simplex on the large-n restricted dual."""
    dual_simplex_rows: int = 4000
    """Restricted duals with more rows than this go to Clarabel first."""
    support_tol: float = 1e-9
    """A template multiplier below this fraction of the largest counts as zero."""
    max_pinned: int = 8
    """Most surplus support rows the support dual pins by seeded random rows."""
    support_refinements: int = 3
    """Steps of iterative refinement of the support dual's sparse solve."""
    square_width_factor: float = 1.4
    """The square-corner template's corner width for L0 with S: ``ceil(k / (1 - alpha))`` plus
    :attr:`square_width_margin` (its corners are about ``1.3 / (1 - alpha)`` wide: at alpha = 0.99
    the restricted optimum is the full one from ``W = 136``, above it at ``W = 120``)."""
    square_width_margin: int = 2
    """Added to the square-corner template's width rule."""
    square_min_width: int = 36
    """The square-corner template is tried from this corner width (alpha from about 0.959, with the
    width rule above); below it the three-width large-n template is as fast."""
    square_slack_tol: float = 1e-6
    """A row whose slack at the square-corner primal exceeds this fraction of its magnitude is slack:
    its class gets no multiplier in the restricted dual (complementary slackness)."""


@dataclass(frozen=True)
class ChainTuning:
    """The relaxed large-n template: its width rules, the template-size dual whose support it copies,
    the chain elimination that solves that dual on the full LP, and the support's completion."""

    relaxed_width_log_factors: tuple[tuple[str, float], ...] = (("L1", 1.25), ("L2", 2.1))
    """The relaxed template's corner width for these objectives: ``ceil(k ln(1 - alpha) / ln alpha)``
    plus :attr:`relaxed_width_margin` (their corners hold ``alpha^W`` down to about ``(1 - alpha)^k``)."""
    relaxed_width_linear_factors: tuple[tuple[str, float], ...] = (("L0", 1.5), ("L0d", 1.5))
    """The relaxed template's corner width for these objectives: ``ceil(k / (1 - alpha))`` plus
    :attr:`relaxed_width_margin` (their corners are about ``1.3 / (1 - alpha)`` wide)."""
    relaxed_width_margin: int = 2
    """Added to the relaxed template's width rule."""
    relaxed_max_template_n: tuple[tuple[str, int], ...] = (("L0d", 160), ("L1", 240), ("L2", 180))
    """The relaxed large-n template is tried, for each objective, only up to this template size
    ``3 W + 4``: its vertex at template size is a general LP whose simplex grows steeply with its
    size, more steeply for L2 (20 s at 172 wide, alpha 0.91, and over 300 s at 235, alpha 0.93,
    ``docs/tuning.md``) than for L1 (232 wide at 0.95)."""
    relaxed_widening: float = 1.35
    """Where the certificate of the rule's width does not close, the width this much wider is tried
    once (if its template fits): at some alpha the template's vertex at the rule's width is not yet
    the one of every larger size (L1 on WM at alpha 0.91 closes from ``W = 46``, the rule giving 34)."""
    relaxed_objectives: tuple[str, ...] = ("L0d", "L1", "L2")
    """Objectives the relaxed large-n template tries (L0 has its own copied dual)."""
    folded_template_objectives: tuple[str, ...] = ("L0d",)
    """Objectives whose relaxed template is solved with S kept at template size (the LP folded by
    the mirror, half the unknowns) and its dual averaged with its mirror image: a symmetric dual of
    the LP without S.  For L0,d, whose full-size point is the restricted primal's anyway, the
    vertex took 1.9 s against 25 s on CM at alpha 0.97 (``docs/tuning.md``); L2's symmetric support
    does not single out its full-size vertex."""
    support_dual_methods: tuple[str, ...] = ("guided", "simplex")
    """The methods of the template-size dual whose support the relaxed template copies, tried in
    turn until one answers with a vertex (an interior point's dual carries every degenerate tight
    row, too many for the support); ``guided`` (the simplex from Clarabel's basis) is the fastest."""
    support_dual_iterations: int = 50_000
    """Iterations of each simplex of :attr:`support_dual_methods` (the one from Clarabel's basis,
    then the cold dual simplex) on the template-size LP whose vertex the relaxed template copies.
    L2 on WM at alpha 0.91 (172 wide) needs about 20,000 from Clarabel's basis (20 s), where the
    solver-wide :attr:`SolverTuning.guided_simplex_iterations` stopped it and the cold simplex
    took minutes."""
    closure_objectives: tuple[str, ...] = ("L2",)
    """Objectives whose relaxed-template vertex is proven by its DP closure at once: the UM repair
    of its rounding costs its weight times UM's loss (~n^2/6 for L2), more than the gap allows."""
    chain_refinements: int = 2
    """Steps of iterative refinement of the chain solve of the relaxed template's support dual."""
    chain_dense_max_bytes: int = 2**28
    """The chain solve's system (:mod:`countdp.design.template.chain_support`) is factorised as a
    dense array (LAPACK) where that array takes at most this many bytes, and sparse (SuperLU) beyond.
    Narrow corners give a nearly full system of about ``N`` paths, whose normal equations LAPACK
    forms in 0.1 s where the sparse product took 0.7 s (L2 on WM, alpha 0.9, n = 1024); wide ones
    add a path per slack DP edge, and the dense array grows as their square."""
    completion_tol: float = 1e-8
    """A path condition of the chain solve left unmet by more than this fraction of the largest
    marks the copied support as short of rows, to be completed from the rows tight at the
    template's vertex (:mod:`countdp.design.template.support_completion`); the completion offers
    rows whose largest path sum is above this fraction of its terms' size, and keeps those whose
    multiplier is above this fraction of the largest."""
    cm_break_tol: float = 1e-7
    """The relaxed template's vertex breaking CM by more than this fraction of its largest entry has
    the template solved with CM kept too, once the relaxation's certificate has not closed, to see
    whether the relaxation is strictly better; the square corners' relaxed primal breaking CM by
    more has them solved with CM kept (:func:`countdp.design.template.square_chain.with_primal`)."""
    cm_kept_with: tuple[str, ...] = ("RH",)
    """Targets with CM and any of these properties have the square corners solved with CM kept at once,
    without the relaxed primal first (:func:`countdp.design.template.square_chain.kept_first`): on RH+CM
    that primal breaks CM (docs/design.md, 2c), and solving it was a third of the design's time."""
    relaxation_gap_tol: float = 1e-9
    """The template's optimum with CM kept above the relaxed one by more than this (relative) marks
    the relaxation as strictly better: the template is then the one with CM kept (where only the
    relaxation's optimal face is larger, the two agree to rounding)."""
    completion_tight_tol: float = 1e-9
    """A template row counts as tight at the template's vertex (a candidate of the completion) when
    its slack is at most this fraction of its terms' size."""
    completion_iterations: int = 20_000
    """Simplex iterations of the completion LP (:mod:`countdp.design.template.support_completion`),
    past which the support is left as copied."""
    square_chain_objectives: tuple[str, ...] = ("L1", "L2")
    """Objectives the square corners with the chain dual try (:mod:`countdp.design.template.square_chain`;
    L0d's optimum leaves whole regions of DP edges slack, too many paths for the chain)."""
    square_chain_width_factors: tuple[tuple[str, float], ...] = (("L1", 1.1), ("L2", 2.1))
    """The square corners' width for the chain dual: ``ceil(k ln(1 - alpha) / ln alpha)`` plus
    :attr:`relaxed_width_margin`.  L1's corners are narrower than the relaxed template's rule
    (1.25) gives: on WM at n = 1024 they close at W = 67, 89 and 129 for alpha 0.95, 0.96 and 0.97
    (and not at 115 for 0.97, nor at 60 for 0.95), in 9 to 17 s, where the rule's 146 took 28 s."""
    square_chain_min_width: int = 40
    """The square corners with the chain dual are tried from this corner width
    (:attr:`square_chain_width_factors`: L2 from alpha about 0.885, L1 from 0.927); below it the
    relaxed template is as fast.  At 48 (L2, alpha 0.9) the square corners prove RH+CM+WH+S where
    the relaxed template's degenerate vertex may not close, depending on the CPU."""
    square_chain_max_unknowns: int = 25_000
    """The widest square corners tried for the chain dual, in the unknowns of its smallest primal (the
    trimmed square's, :attr:`square_chain_trim`, where set: :func:`countdp.design.policy.square_unknowns`),
    and for the design within the memory bound (:mod:`countdp.design.strategies.square_bound`), in the
    full square's ``(W + 1)^2 + 1``:
    Clarabel took 14 s at 15,877 (L2, alpha 0.95), 20 s at 19,882 (L1, 0.97) and 57 s at 59,050;
    HiGHS's interior point and crossover 25 s at 24,965 (L2, 0.97)."""
    square_chain_trim: tuple[float, float, float] | None = (2.0, 0.6, 0.4)
    """The trimmed square's free cells (:mod:`countdp.design.template.square_trim`), tried before the full
    square: the rows up to ``T``, the ``B`` cells left of the diagonal and the first ``C + 1`` columns,
    these factors times ``1 / -ln alpha``; ``None``: the full square only.  On WM, L2, 0.97 the
    optimum's slack steps end at rows 1.6, columns 0.34 and bands 0.5 of it; the trimmed square took
    11 s where the full one took 211 to 345 s, to the same optimum."""
    square_chain_primals: tuple[str, ...] = ("vertex", "clarabel")
    """The square corners' primal, tried in turn until the certificate closes: ``vertex`` (HiGHS's
    interior point with crossover, the exact vertex of its basis) and ``clarabel`` (Clarabel's
    interior point).  The vertex closed on every request measured, and in about the same time where
    Clarabel's point closed too; on L2 at 0.95 with RH Clarabel's point left 36,000 to 55,000 DP
    edges slack."""
    square_chain_tight_tols: tuple[float, ...] = (1e-7, 1e-9)
    """A row counts as tight at the square-corner primal (an interior point) when its slack is at most
    this fraction of its terms' size; each is tried in turn until the certificate closes."""
    square_chain_max_breaks: int = 16_384
    """Most DP edges left slack at the square-corner primal: each breaks a path and adds a row to the
    chain's system (:mod:`countdp.design.template.chain_support`, factorised sparse where it is large),
    so more are refused before it is built; L2 at alpha 0.98 leaves about 10,000 (docs/design.md, 2c)."""


@dataclass(frozen=True)
class ProofTuning:
    """The proofs: the closed forms' checks, the CM relaxation's optimal face and the dual repair."""

    check_closed_form_max_n: int = 128
    """Up to this ``n`` a closed form is also checked by an LP dual when its explicit dual does
    not close; above it the theorem alone stands (recorded as unchecked)."""
    gm_tol: float = 1e-12
    """Largest property violation of a closed form's matrix accepted as holding the property."""
    face_tol: float = 1e-8
    """A multiplier or reduced cost above this times the largest cost marks its row tight on the
    relaxation's optimal face."""
    dual_repairs: tuple[tuple[float, int], ...] = ((1e-6, 300), (1e-5, 300), (1e-7, 300))
    """``(tau, iterations)`` of the dual repair tiers, tried in turn."""
    repair_gap_limit: float = 1e-8
    """A dual is repaired only when its relative gap is below this (else it is far from optimal)."""


@dataclass(frozen=True)
class SolverSettings:
    """Tuning of the design engine (see the module docstring), in four groups; the defaults are the engine's."""

    solver: SolverTuning = field(default_factory=SolverTuning)
    """The solvers' tolerances, work limits and output."""
    template: TemplateTuning = field(default_factory=TemplateTuning)
    """The guide, large-n and square-corner templates."""
    chains: ChainTuning = field(default_factory=ChainTuning)
    """The relaxed large-n template and its chain elimination."""
    proof: ProofTuning = field(default_factory=ProofTuning)
    """The closed forms' checks, the CM relaxation's face and the dual repair."""

    @classmethod
    def of(cls, **values) -> SolverSettings:
        """The default settings with the fields named in ``values`` (by their own name, whatever
        their group: ``SolverSettings.of(template_min_n=60, ipm_min_nnz=0)``) set.

        Raises ``TypeError`` for a name no group has."""
        return DEFAULT_SETTINGS.with_values(**values)

    def with_values(self, **values) -> SolverSettings:
        """These settings with the fields named in ``values`` (by their own name) replaced."""
        unknown = sorted(set(values) - set(FIELD_GROUPS))
        if unknown:
            raise TypeError(f"no setting named {', '.join(unknown)}")
        changed = {}
        for group in GROUPS:
            mine = {name: value for name, value in values.items() if FIELD_GROUPS[name] == group}
            if mine:
                changed[group] = replace(getattr(self, group), **mine)
        return replace(self, **changed)


GROUPS = tuple(f.name for f in fields(SolverSettings))
"""The groups of :class:`SolverSettings`, by attribute name."""

FIELD_GROUPS: dict[str, str] = {f.name: group.name for group in fields(SolverSettings)
                                for f in fields(getattr(SolverSettings(), group.name))}
"""Which group holds each setting (``FIELD_GROUPS["template_min_n"] == "template"``): the name a
field had in the flat settings is its name in its group."""

DEFAULT_SETTINGS = SolverSettings()
"""The engine's settings when none are passed."""

SUB_SOLVES = logging.getLogger("countdp.design.sub_solves")
"""Where every solver run and proof of the engine says, at DEBUG, which settings it runs under
(``record.settings``; ``record.sub_solve`` names it): a caller's settings can be seen to reach
every sub-solve of its request."""


def running(settings: SolverSettings, sub_solve: str) -> SolverSettings:
    """``settings``, after saying on :data:`SUB_SOLVES` that ``sub_solve`` runs under them."""
    if SUB_SOLVES.isEnabledFor(logging.DEBUG):
        SUB_SOLVES.debug("%s", sub_solve, extra={"settings": settings, "sub_solve": sub_solve})
    return settings
