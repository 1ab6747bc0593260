"""``dptext augpe`` (= ``dptext generate --method augpe``): the Aug-PE baseline, through
the run lifecycle. Its folder (``<out>.run/augpe/``, see ``dptext.generators.augpe.state``)
keeps each iteration's noisy vote histograms (saved with their ledger records before any
prompt uses them) and each population; ``--resume`` continues mid-iteration: finished
iterations draw no new noise, finished prompts are not repeated.
"""

from __future__ import annotations

from typing import Annotated

import typer

from dptext.cli import options as o
from dptext.cli.app import app
from dptext.cli.generate import DEFAULT_LLM
from dptext.generators.augpe.evolution import AugPEConfig
from dptext.generators.augpe.generator import AugPEGenerator
from dptext.generators.base import DEFAULT_EPSILON

AUGPE = "Aug-PE"
Embedder = o.in_panel(o.Embedder, AUGPE)
VocabSize = o.in_panel(o.VocabSize, o.ADVANCED)
Epsilon = o.total_epsilon("DP vocabulary + all vote histograms")


@app.command("augpe")
def augpe(
    input: o.InputPath,
    out: o.Out,
    epsilon: Epsilon = DEFAULT_EPSILON,
    delta: o.Delta = AugPEGenerator.delta,
    document_type: o.DocumentType = "document",
    llm: o.Llm = DEFAULT_LLM,
    per_class: Annotated[int | None, typer.Option(
        help="Population per class (default 10 unless --total is given).",
        rich_help_panel=AUGPE)] = None,
    total: Annotated[int | None, typer.Option(
        help="Total population, split equally over the classes.", rich_help_panel=AUGPE)
    ] = None,
    iterations: Annotated[int, typer.Option(
        help="T: vote releases; every population member costs T + 1 prompts.",
        rich_help_panel=AUGPE)] = 9,
    selection: Annotated[str, typer.Option(
        help="sample (∝ noisy votes) or rank (top N/copies, copies each).",
        rich_help_panel=o.ADVANCED)] = "sample",
    threshold: Annotated[float, typer.Option(
        help="Noisy vote counts below this do not reproduce.", rich_help_panel=o.ADVANCED)] = 0.0,
    copies: Annotated[int, typer.Option(help="Variations per parent with --selection rank.",
                                        rich_help_panel=o.ADVANCED)] = 2,
    variation: Annotated[str, typer.Option(
        help="mixed, blank (fill-in-the-blanks) or paraphrase.", rich_help_panel=o.ADVANCED)
    ] = "mixed",
    mask_rate: Annotated[float, typer.Option(help="Fraction of words blanked.",
                                             rich_help_panel=o.ADVANCED)] = 0.5,
    random_words: Annotated[int, typer.Option(
        help="Random words of the DP vocabulary per initial prompt (AugPE+Ṽ); 0: plain "
        "AugPE, no vocabulary release.", rich_help_panel=o.ADVANCED)] = 5,
    vocab_share: Annotated[float, typer.Option(
        help="Share of the budget (Gaussian μ²) spent on the DP vocabulary.",
        rich_help_panel=o.ADVANCED)] = 0.2,
    label_set_share: Annotated[float, typer.Option(
        help="Share of the budget (Gaussian μ²) spent on the DP label set when --labels is "
        "not given.", rich_help_panel=o.ADVANCED)] = 0.1,
    vocab: o.MethodVocab = AugPEConfig.vocab,
    vocab_size: VocabSize = AugPEConfig.vocab_size,
    terms_per_doc: o.MethodTermsPerDoc = AugPEConfig.terms_per_doc,
    embedder: Embedder = AugPEConfig.embedder,
    augpe_class_names: Annotated[bool, typer.Option(
        "--augpe-class-names", help="Put the class names in the prompts IN THE CLEAR (the "
        "original Aug-PE); the privacy report marks the run as leaking them.",
        rich_help_panel=o.ADVANCED)] = False,
    target_words: Annotated[int | None, typer.Option(
        help="Words per text asked of the LLM (default 0.6 × --max-tokens).",
        rich_help_panel=o.ADVANCED)] = None,
    max_tokens: o.MaxTokens = 160,
    temperature: o.Temperature = 0.8,
    top_p: o.TopP = 0.95,
    concurrency: o.Concurrency = 4,
    resume: o.Resume = False,
    cache: o.Cache = True,
    progress: o.Progress = True,
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    label_sep: o.LabelSep = None,
    format: o.Format = None,
    encoding: o.Encoding = "utf-8",
    skip_invalid: o.SkipInvalid = False,
    labels: o.Labels = None,
    seed: o.Seed = None,
    budget_total: o.BudgetTotal = None,
    allow_budget_overrun: o.AllowOverrun = False,
    dataset_id: o.DatasetId = None,
) -> None:
    """Aug-PE: LLM texts evolved by DP nearest-neighbour votes.

    The population evolves toward the private corpus through DP nearest-neighbour vote
    histograms (the Aug-PE baseline).
    """
    with o.user_errors():
        if per_class is not None and total is not None:
            raise ValueError("give either --per-class or --total")
        options = dict(
            epsilon=epsilon, delta=delta, labels=o.parse_labels(labels), documents=total,
            document_type=document_type, iterations=iterations, selection=selection,
            threshold=threshold, copies=copies, variation=variation, mask_rate=mask_rate,
            random_words=random_words, vocab=vocab, vocab_size=vocab_size,
            terms_per_doc=terms_per_doc, vocab_share=vocab_share,
            label_set_share=label_set_share, embedder=embedder,
            class_names=augpe_class_names, target_words=target_words, max_tokens=max_tokens,
            temperature=temperature, top_p=top_p,
            **({"per_class": per_class} if per_class is not None else {}))
    o.run_generator("augpe", options,
                    o.source(input, text_column, label_column, format, encoding,
                             skip_invalid, label_sep), out, llm=llm, resume=resume,
                    budget_total=budget_total, allow_budget_overrun=allow_budget_overrun,
                    dataset_id=dataset_id, concurrency=concurrency, cache=cache,
                    progress=progress, seed=seed)
