"""A table release's budget: the ledger account of its unit of privacy, its debit, and the rule that
keeps one partition per count column on a ledger."""

from __future__ import annotations

from countdp.release.ledger import Ledger
from countdp.values.alpha import alpha_text, rational_text


def debit_release(ledger: Ledger, prepared) -> dict:
    """Charge the release to the ledger's account for its unit of privacy; the entry stays private."""
    request = prepared.request
    what = {"input": str(request.input), "input_sha256": prepared.validated.input_sha256,
            "out": None if request.table_path is None else str(request.table_path), "columns": request.count_names,
            "alphas": [alpha_text(c.alpha) for c in request.columns]}
    if request.columns[0].levels:
        what["levels"] = [alpha_text(a) for a in request.columns[0].levels]
    if prepared.invariants is not None:
        what["invariant_by"] = request.invariant_by
        what["published_totals"] = {c.count_column: inv.published_totals(request.invariant_by)
                                    for c, inv in zip(request.columns, prepared.invariants, strict=True)}
    guard = None if prepared.invariants is None else (lambda state: one_partition(state, request))
    receipt = ledger.debit(prepared.epsilon, what, account=account(request), guard=guard)
    return {"ledger": str(request.budget), "account": account(request), "entry": receipt.entry_id,
            "epsilon": rational_text(receipt.epsilon), "remaining_after": rational_text(receipt.remaining_after)}


def one_partition(state, request) -> None:
    """Refuse totals of a count column by another partition than the ledger's earlier invariant releases.

    Totals by two partitions (by region, then by band) can pin every count between them, and their
    guarantees are for different neighbours, so the invariant account could not add them up.  The
    whole table's total is the sum of any partition's, so it goes with either.  It runs under the
    ledger's lock, with the debit (``Ledger.debit(guard=...)``), so concurrent releases cannot race it.
    """
    for entry in state.entries:
        if entry.account != "invariant" or "invariant_by" not in entry.what:
            continue
        shared = [c for c in request.count_names if c in entry.what.get("published_totals", {})]
        earlier = entry.what["invariant_by"]
        if shared and None not in (earlier, request.invariant_by) and earlier != request.invariant_by:
            raise ValueError(f"{request.budget}: entry {entry.entry_id} already published the totals of "
                             f"{shared[0]!r} by {earlier!r}; its totals by {request.invariant_by!r} as well could pin "
                             "its counts (one partition per count column on one ledger; the whole table's total is "
                             "the sum of either)")


def account(request) -> str:
    """The ledger account of a release: its unit of privacy (bit-level, or invariant neighbours)."""
    return "invariant" if request.invariant else "bit"


__all__ = ["account", "debit_release", "one_partition"]
