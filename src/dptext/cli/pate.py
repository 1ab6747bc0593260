"""``dptext pate`` (= ``dptext generate --method pate``): PATE-style DP augmentation
through the run lifecycle (``dptext.generators.pate.PateGenerator``)."""

from __future__ import annotations

from typing import Annotated

import typer

from dptext.cli import options as o
from dptext.cli.app import app
from dptext.cli.generate import DEFAULT_LLM
from dptext.generators.base import DEFAULT_EPSILON
from dptext.generators.pate.generator import PateConfig

PATE = "PATE"
Embedder = o.in_panel(o.Embedder, PATE)
VocabSize = o.in_panel(o.VocabSize, o.ADVANCED)
Epsilon = o.total_epsilon("teacher votes + label tutor [+ vocabulary]")


@app.command("pate")
def pate(
    input: o.InputPath,
    out: o.Out,
    epsilon: Epsilon = DEFAULT_EPSILON,
    delta: o.Delta = PateConfig.delta,
    documents: Annotated[int | None, typer.Option(
        help="Total output documents (default: 100 per class).", rich_help_panel=PATE)
    ] = None,
    per_class: Annotated[int | None, typer.Option(
        help="Output documents per class, instead of --documents.", rich_help_panel=PATE)
    ] = None,
    candidates_per_doc: Annotated[float, typer.Option(
        help="Public candidates written per output document.", rich_help_panel=o.ADVANCED)] = 4.0,
    teachers: Annotated[int, typer.Option(
        help="Teachers (disjoint shards of the private corpus).", rich_help_panel=PATE)
    ] = 100,
    max_queries: Annotated[int | None, typer.Option(
        help="Query budget: candidates the teachers answer (default all); the student "
        "scores the rest.", rich_help_panel=o.ADVANCED)] = None,
    tutor_share: Annotated[float, typer.Option(
        help="Share of ε for the label-distribution tutor.", rich_help_panel=o.ADVANCED)] = 0.05,
    vocab_share: Annotated[float, typer.Option(
        help="Share of ε for the DP vocabulary (only without --labels).",
        rich_help_panel=o.ADVANCED)] = 0.2,
    label_set_share: Annotated[float, typer.Option(
        help="Share of ε for the DP label set (only without --labels, on a labelled "
        "corpus).", rich_help_panel=o.ADVANCED)] = 0.1,
    embedder: Embedder = PateConfig.embedder,
    document_type: o.DocumentType = "document",
    llm: o.Llm = DEFAULT_LLM,
    max_tokens: o.MaxTokens = 400,
    temperature: o.Temperature = 0.8,
    top_p: o.TopP = 0.95,
    concurrency: o.Concurrency = 4,
    labels: Annotated[str | None, typer.Option(
        help="Comma-separated PUBLIC label names: candidates are written per label from the "
        "document type and the name. Without it, prompts use terms of a DP vocabulary and the "
        "teachers assign labels.", rich_help_panel=o.INPUT)] = None,
    vocab: o.MethodVocab = PateConfig.vocab,
    terms_per_doc: o.MethodTermsPerDoc = PateConfig.terms_per_doc,
    vocab_size: VocabSize = PateConfig.vocab_size,
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    label_sep: o.LabelSep = None,
    format: o.Format = None,
    encoding: o.Encoding = "utf-8",
    skip_invalid: o.SkipInvalid = False,
    seed: Annotated[int, typer.Option(help="Seed for the public randomness (prompts, "
                                      "candidate folds, queried subset).",
                                      rich_help_panel=o.RUN)] = 0,
    resume: o.Resume = False,
    cache: o.Cache = True,
    progress: o.Progress = True,
    budget_total: o.BudgetTotal = None,
    allow_budget_overrun: o.AllowOverrun = False,
    dataset_id: o.DatasetId = None,
) -> None:
    """PATE-style DP augmentation: teachers vote on LLM candidates.

    Public LLM candidates, teachers on disjoint shards, a student on noisy (GNMax) votes
    and a DP label-distribution tutor (docs/pate.md).
    """
    options = dict(
        epsilon=epsilon, delta=delta, documents=documents, per_class=per_class,
        candidates_per_doc=candidates_per_doc, teachers=teachers, max_queries=max_queries,
        tutor_share=tutor_share, vocab_share=vocab_share, label_set_share=label_set_share,
        labels=o.parse_labels(labels), document_type=document_type, vocab=vocab,
        terms_per_doc=terms_per_doc, vocab_size=vocab_size, embedder=embedder, seed=seed,
        max_tokens=max_tokens, temperature=temperature, top_p=top_p)
    o.run_generator("pate", options,
                    o.source(input, text_column, label_column, format, encoding,
                             skip_invalid, label_sep), out, llm=llm, resume=resume,
                    budget_total=budget_total, allow_budget_overrun=allow_budget_overrun,
                    dataset_id=dataset_id, concurrency=concurrency, cache=cache,
                    progress=progress)
