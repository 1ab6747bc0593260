"""The one budget policy of every run: before its first release, the run's whole plan is
checked against the corpus's persistent budget and charged to it, so a run that is killed
or abandoned afterwards is still counted; once the releases are made they replace the
plan (``privacy.budget.settle_run``: never costing more). A run that fails with an error
is settled to the releases it made before the failure (``settle_failed``: a mistyped
option found late costs nothing); resuming it charges its whole plan again first
(``recharge``). A run resumed after a kill charges nothing again."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from dptext.privacy import Guarantee, PrivacyLedger, Release, compose
from dptext.privacy.budget import (
    CorpusBudget,
    corpus_fingerprint,
    open_budget,
    recharge_run,
    settle_run,
)


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


def reopen(corpus, dataset_id: str | None, total: float | None = None) -> CorpusBudget:
    """The ledger a run was charged to (``dataset_id``: the key it recorded; None: the
    corpus's content fingerprint), e.g. to settle a resumed run."""
    return CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels), total=total,
                             dataset_id=dataset_id)


def resumed(corpus, options: BudgetOptions, recorded: dict, planned: list[Release], *,
            command: str, parameters: dict, say: Callable[[str], None]) -> CorpusBudget:
    """The ledger a resumed run settles to (``recorded``: the run folder's budget entry),
    charged its plan first where it has no entry for the run (``_charged_here``)."""
    budget = reopen(corpus, recorded["dataset_id"], total=options.total)
    if not budget.has_run(recorded["run_id"]):
        _charged_here(budget, options, recorded["run_id"], planned, command=command,
                      parameters=parameters, say=say)
    return budget


def _charged_here(budget: CorpusBudget, options: BudgetOptions, run_id: str,
                  planned: list[Release], *, command: str, parameters: dict,
                  say: Callable[[str], None]) -> None:
    """A run folder made on another machine, or whose ledger was removed since, has no
    entry in this machine's ledger: its whole plan is charged here first, as a new run's
    is (refused when it does not fit), so no release is made outside a persistent ledger."""
    after = budget.commit(PrivacyLedger(releases=list(planned)), command=command,
                          parameters=parameters, allow_overrun=options.allow_overrun,
                          run_id=run_id)
    say(f"this run is not in this machine's ledger {budget.name} (its run folder was made "
        "elsewhere, or the ledger was removed since): its whole plan is charged here "
        f"before it resumes; privacy spent on this {budget.noun}, all runs: {after}")


def settle_failed(budget: CorpusBudget, run_id: str, made: list[Release] | None,
                  say: Callable[[str], None]) -> bool:
    """After a run failed with an error: its ledger entry keeps only the releases ``made``
    before the failure (``None``: the generator cannot tell which it made, so the whole
    plan stays charged). Says on the terminal what was charged; returns whether the entry
    was settled."""
    if made is None:
        say("the run failed after it was charged; what it released cannot be told apart, "
            "so its whole plan stays charged")
        return False
    settle_run(budget, run_id, made)
    if made:
        say(f"charged {compose(list(made))} for the {len(made)} release(s) made before the "
            "failure")
    else:
        say("nothing was released; nothing charged")
    return True


def recharge(corpus, options: BudgetOptions, recorded: dict, planned: list[Release], *,
             command: str, parameters: dict, say: Callable[[str], None]) -> CorpusBudget:
    """Before a run settled after a failure resumes: its whole plan is charged again
    (``recorded``: the run folder's budget entry). Refused when it no longer fits."""
    budget = reopen(corpus, recorded["dataset_id"], total=options.total)
    if not budget.has_run(recorded["run_id"]):
        _charged_here(budget, options, recorded["run_id"], planned, command=command,
                      parameters=parameters, say=say)
        return budget
    after = recharge_run(budget, recorded["run_id"], planned,
                         allow_overrun=options.allow_overrun)
    say(f"the run had failed and was settled to its releases; its whole plan is charged "
        f"again to resume it: privacy spent on this {budget.noun}, all runs: {after}")
    return budget
