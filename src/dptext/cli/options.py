"""Options shared by the commands that read a private corpus and fit DP-KPS.

Each option is an ``Annotated`` alias, so ``keyphrases`` and ``generate`` declare
the same flags with the same help and defaults (those of ``KeyphraseSeeder``).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from dptext.cli.app import console

SEEDER = "DP-KPS"


def _seeder_defaults() -> dict:
    from dataclasses import MISSING, fields

    from dptext.generators.kps import KeyphraseSeeder

    return {f.name: f.default for f in fields(KeyphraseSeeder)
            if f.init and f.default is not MISSING}


#: KeyphraseSeeder's defaults: the one source of the commands' DP-KPS option defaults
D = _seeder_defaults()
INPUT = "Input"

InputPath = Annotated[str, typer.Option(
    "--input", "-i", help="Private corpus: .csv, .jsonl, .parquet, a folder of <label>/*.txt, "
    "or a bundled demo such as demo:bbc-news/train.", rich_help_panel=INPUT)]
TextColumn = Annotated[str, typer.Option(help="Column holding the document text.",
                                         rich_help_panel=INPUT)]
LabelColumn = Annotated[str | None, typer.Option(
    help="Column holding the label; omit for an unlabelled corpus.", rich_help_panel=INPUT)]
Format = Annotated[str | None, typer.Option(
    "--format", help="csv, jsonl, parquet or folder (default: from the extension).",
    rich_help_panel=INPUT)]
Encoding = Annotated[str, typer.Option(help="Text encoding of the input.", rich_help_panel=INPUT)]
SkipInvalid = Annotated[bool, typer.Option(
    help="Drop empty documents or rows without a label instead of stopping.",
    rich_help_panel=INPUT)]
Labels = Annotated[str | None, typer.Option(
    help="Comma-separated public label set (free). Without it the label set is released "
    "with DP partition selection (the 'label set' release, charged to the run's ε): labels "
    "of too few documents are dropped, with their documents.", rich_help_panel=INPUT)]

Vocab = Annotated[str, typer.Option(
    help="Public vocabulary: english, english:N, glove, glove:N, medical, or a file "
    "(one term per line).", rich_help_panel=SEEDER)]
Embedder = Annotated[str, typer.Option(
    help="Embedding model: minilm, mpnet, model2vec, or a sentence-transformers folder.",
    rich_help_panel=SEEDER)]
EpsVocab = Annotated[float | None, typer.Option(
    help="ε for the DP vocabulary (default 1 unless --epsilon is given).",
    rich_help_panel=SEEDER)]
EpsKde = Annotated[float | None, typer.Option(
    help="ε for the DP KDE sketches (default 5 unless --epsilon is given).",
    rich_help_panel=SEEDER)]
Epsilon = Annotated[float | None, typer.Option(
    help="Total ε of the run: every release (label set, label histogram, vocabulary, "
    "sketches) is inside it (Gaussian stages composed exactly); instead of "
    "--epsilon-vocab/--epsilon-kde.", rich_help_panel=SEEDER)]
VocabShare = Annotated[float, typer.Option(
    help="Share of a total --epsilon spent on the vocabulary (of what the label releases "
    "leave; the sketches get the rest).", rich_help_panel=SEEDER)]
Delta = Annotated[float, typer.Option(
    help="Total δ of the run (used only by Gaussian noise).", rich_help_panel=SEEDER)]
VocabNoise = Annotated[str, typer.Option(
    help="gaussian ((ε, δ), the benchmarked default) or laplace (pure ε, the paper's).",
    rich_help_panel=SEEDER)]
VocabNoiseTerms = Annotated[float, typer.Option(
    help="Keep only vocabulary terms above the noisy count this many zero-count terms are "
    "expected to reach (inf: plain top-N, the paper's).", rich_help_panel=SEEDER)]
KdeNoise = Annotated[str, typer.Option(
    help="gaussian (L2 sensitivity: far less noise, the benchmarked default) or laplace "
    "(pure ε, the paper's).", rich_help_panel=SEEDER)]
TermsPerDoc = Annotated[int, typer.Option(
    help="S: distinct vocabulary terms one document may contribute.", rich_help_panel=SEEDER)]
VocabSize = Annotated[int, typer.Option(help="N: size of the DP vocabulary.",
                                        rich_help_panel=SEEDER)]
Method = Annotated[str, typer.Option(help="iterative or independent sequence generation; "
                                     "generate: dpft for the DP fine-tuning generator, augpe for "
                                     "the Aug-PE baseline, pate for PATE-style augmentation.",
                                     rich_help_panel=SEEDER)]
Ensemble = Annotated[str, typer.Option(help="KDE ensemble for iterative: log or linear.",
                                       rich_help_panel=SEEDER)]
Length = Annotated[int, typer.Option(help="L: keyphrases per sequence.", rich_help_panel=SEEDER)]
Features = Annotated[int, typer.Option(help="Random Fourier features per sketch.",
                                       rich_help_panel=SEEDER)]
Bandwidth = Annotated[float, typer.Option(help="Kernel bandwidth for unit-norm embeddings.",
                                          rich_help_panel=SEEDER)]
Sampling = Annotated[str, typer.Option(
    help="contrastive (class-specific terms first) or proportional (the paper's).",
    rich_help_panel=SEEDER)]
Model = Annotated[str, typer.Option(
    help="Keyphrase model: auto (the per-class DP term histogram, its parameters chosen by "
    "--select), histogram, smoothed (the histogram smoothed through embedding neighbours), "
    "kde (the paper's RFF KDE) or hybrid (histogram + KDE mixture: two releases).",
    rich_help_panel=SEEDER)]
Select = Annotated[str, typer.Option(
    help="auto: choose the model and its parameters privately on a held-out fold (its ε is "
    "in the report; the folds are disjoint, so --epsilon stays the total); none: use "
    "--model and --mixture as given.", rich_help_panel=SEEDER)]
Mixture = Annotated[float, typer.Option(
    help="The hybrid's histogram weight λ in [0, 1] (with --select none).",
    rich_help_panel=SEEDER)]
EpsLabels = Annotated[float, typer.Option(
    help="ε for a DP label histogram that sizes classes in proportion (0: equal sizes); "
    "part of a total --epsilon. Without --labels the label set's noisy counts are used "
    "instead, at no further cost.", rich_help_panel=SEEDER)]
LabelSetShare = Annotated[float, typer.Option(
    help="Share of a total --epsilon spent on the DP label set when --labels is not given.",
    rich_help_panel=SEEDER)]
EpsLabelSet = Annotated[float, typer.Option(
    help="ε of the DP label set when --labels is not given, with --epsilon-vocab/"
    "--epsilon-kde (on top of them).", rich_help_panel=SEEDER)]
Seed = Annotated[int | None, typer.Option(help="Seed for the non-private randomness.")]

BUDGET = "Privacy budget (across runs)"
BudgetTotal = Annotated[float | None, typer.Option(
    help="Total ε allowed on this corpus over all runs (kept in the corpus's ledger in "
    "$DPTEXT_HOME; default: the recorded total, or budget_total in config.toml).",
    rich_help_panel=BUDGET)]
AllowOverrun = Annotated[bool, typer.Option(
    help="Run even if it takes the corpus past its total budget (recorded as an overrun).",
    rich_help_panel=BUDGET)]
DatasetId = Annotated[str | None, typer.Option(
    help="Name of the dataset whose budget this run spends: one ledger for every version "
    "of the corpus (default: dataset_id or [datasets] in config.toml, else a ledger per "
    "exact content).", rich_help_panel=BUDGET)]


def corpus_budget(corpus, total: float | None, planned, allow_overrun: bool, *,
                  dataset_id: str | None = None, input: str | None = None):
    """Open the persistent ledger of ``corpus`` (by dataset id, or by its content) and
    refuse a run that cannot fit."""
    from dptext.privacy.budget import open_budget

    budget = open_budget(corpus, total=total, dataset_id=dataset_id, input=input)
    budget.check(planned, allow_overrun=allow_overrun)
    console.print(f"privacy budget: {budget.describe()}")
    if budget.runs:
        console.print(f"it has {len(budget.runs)} earlier run(s), which spent "
                      f"{budget.spent()}" + (f" of a total ε = {budget.total:g}"
                                             if budget.total is not None else ""))
    return budget


def commit_budget(budget, ledger, *, command: str, parameters: dict,
                  allow_overrun: bool, run_id: str | None = None) -> None:
    """Record a finished fit in the corpus's ledger (before any output is written)."""
    after = budget.commit(ledger, command=command, parameters=parameters,
                          allow_overrun=allow_overrun, run_id=run_id)
    total = f" of ε = {budget.total:g}" if budget.total is not None else ""
    name = budget.dataset_id if budget.dataset_id is not None else budget.fingerprint[:8]
    console.print(f"privacy spent on this {budget.noun}, all runs: {after}{total} "
                  f"(ledger {name})")
    if budget.total is not None and after.epsilon > budget.total * (1 + 1e-9):
        console.print("[yellow]warning:[/yellow] this run went past the corpus's total budget "
                      "(--allow-budget-overrun)")


def stage_epsilons(epsilon: float | None, epsilon_vocab: float | None,
                   epsilon_kde: float | None) -> dict:
    """Seeder budget arguments from the CLI's three ε options."""
    if epsilon is not None:
        if epsilon_vocab is not None or epsilon_kde is not None:
            raise typer.BadParameter("give either --epsilon or --epsilon-vocab/--epsilon-kde")
        return {"epsilon": epsilon}
    return {"epsilon_vocab": 1.0 if epsilon_vocab is None else epsilon_vocab,
            "epsilon_kde": 5.0 if epsilon_kde is None else epsilon_kde}


def parse_labels(labels: str | None) -> tuple[str, ...] | None:
    if labels is None:
        return None
    out = tuple(s.strip() for s in labels.split(",") if s.strip())
    if not out:
        raise typer.BadParameter("--labels is empty")
    return out


@contextmanager
def user_errors():
    """Turn bad input into a one-line message and exit code 2, and show warnings."""
    from dptext.corpus import InputError
    from dptext.privacy import BudgetExceededError
    from dptext.privacy.labels import PrivateValuesError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except (InputError, ValueError, BudgetExceededError) as e:
            console.print(f"[bold red]error:[/bold red] {escape(str(e))}", soft_wrap=True)
            if isinstance(e, PrivateValuesError) and console.is_terminal:
                # private values (labels): the curator's terminal only, never a file or a
                # redirected stream
                console.print(f"  {escape(e.detail)}", soft_wrap=True)
            raise typer.Exit(2) from None
        finally:
            for w in caught:
                if issubclass(w.category, UserWarning):
                    console.print(f"[yellow]warning:[/yellow] {escape(str(w.message))}",
                                  soft_wrap=True)


def announce_corpus(corpus) -> None:
    """Say which corpus was read. Its size is a private statistic: it is shown on the
    curator's terminal only, never in a redirected stream (a log)."""
    size = f": {len(corpus)} documents" if console.is_terminal else ""
    console.print(f"read {corpus.source}{size}")


def ensure_parent(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def charge_plan(corpus, total: float | None, planned, allow_overrun: bool, *, command: str,
                parameters: dict, run_id: str | None = None, dataset_id: str | None = None,
                input: str | None = None):
    """The budget policy of every method: before the run's first release, its whole plan
    (``planned``: the releases it will make, or ``budget.planned_run``) is checked against
    the corpus's persistent budget AND charged to it, so a run that fails, is killed or is
    abandoned afterwards is still counted. A resumed run charges nothing again. ``run_id``
    names the run in the ledger (for ``budget.settle_run``); ``dataset_id`` and
    ``input`` choose the ledger (``corpus_budget``)."""
    from dptext.privacy import PrivacyLedger

    budget = corpus_budget(corpus, total, planned, allow_overrun, dataset_id=dataset_id,
                           input=input)
    commit_budget(budget, PrivacyLedger(releases=list(planned)), command=command,
                  parameters=parameters, allow_overrun=allow_overrun, run_id=run_id)
    return budget


def charge_plan_to_settle(corpus, total: float | None, planned, allow_overrun: bool, **kw):
    """``charge_plan`` for a run whose exact releases are known only after its fit: returns
    the budget and ``settle(releases)``, which records the releases made in place of the
    charged plan (``budget.settle_run``: never more than was charged)."""
    import uuid

    from dptext.privacy.budget import settle_run

    run_id = uuid.uuid4().hex
    budget = charge_plan(corpus, total, planned, allow_overrun, run_id=run_id, **kw)
    return budget, lambda releases: settle_run(budget, run_id, releases)
