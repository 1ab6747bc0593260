"""The one budget policy of every run: before its first release, the run's whole plan is
checked against the corpus's persistent budget and charged to it, so a run that fails, is
killed or is abandoned afterwards is still counted; once the releases are made they
replace the plan (``privacy.budget.settle_run``: never costing more). A resumed run
charges nothing again."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from dptext.privacy import Guarantee, PrivacyLedger, Release
from dptext.privacy.budget import CorpusBudget, corpus_fingerprint, open_budget


@dataclass(frozen=True)
class BudgetOptions:
    total: float | None = None  # --budget-total
    allow_overrun: bool = False  # --allow-budget-overrun
    dataset_id: str | None = None  # --dataset-id


def open_checked(corpus, options: BudgetOptions, planned: list[Release], *,
                 input: str | None, say: Callable[[str], None]
                 ) -> tuple[CorpusBudget, Guarantee | None]:
    """Open the corpus's ledger (by dataset id, or by its content) and refuse a run that
    cannot fit in what is left; returns it with what its earlier runs spent (None: none)."""
    budget = open_budget(corpus, total=options.total, dataset_id=options.dataset_id,
                         input=input)
    budget.check(planned, allow_overrun=options.allow_overrun)
    say(f"privacy budget: {budget.describe()}")
    before = budget.spent() if budget.runs else None
    if before is not None:
        say(f"it has {len(budget.runs)} earlier run(s), which spent {before}"
            + (f" of a total ε = {budget.total:g}" if budget.total is not None else ""))
    return budget, before


#: said when the spend after a run reads a smaller ε than before it: the composition is
#: read at the runs' summed δ, and this run's δ moves it along the (ε, δ) curve
LOWER_EPSILON_NOTE = ("ε reads lower than before this run because the composition is read "
                      "at the runs' summed δ, which this run raised; both are valid (ε, δ) "
                      "bounds: compare spends at equal δ")


def charge(corpus, options: BudgetOptions, planned: list[Release], *, command: str,
           parameters: dict, input: str | None, say: Callable[[str], None]
           ) -> tuple[CorpusBudget, str]:
    """Check and charge the whole plan; returns the budget and the run's id in it (for
    ``privacy.budget.settle_run``)."""
    run_id = uuid.uuid4().hex
    budget, before = open_checked(corpus, options, planned, input=input, say=say)
    after = budget.commit(PrivacyLedger(releases=list(planned)), command=command,
                          parameters=parameters, allow_overrun=options.allow_overrun,
                          run_id=run_id)
    total = f" of ε = {budget.total:g}" if budget.total is not None else ""
    say(f"privacy spent on this {budget.noun}, all runs: {after}{total} (ledger "
        f"{budget.name})")
    if before is not None and after.epsilon < before.epsilon:
        say(LOWER_EPSILON_NOTE)
    if budget.total is not None and after.epsilon > budget.total * (1 + 1e-9):
        say("warning: this run went past the corpus's total budget (--allow-budget-overrun)")
    return budget, run_id


def reopen(corpus, dataset_id: str | None) -> CorpusBudget:
    """The ledger a run was charged to (``dataset_id``: the key it recorded; None: the
    corpus's content fingerprint), e.g. to settle a resumed run."""
    return CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels),
                             dataset_id=dataset_id)
