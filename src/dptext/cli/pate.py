"""``dptext pate``: PATE-style DP data augmentation; ``dptext generate --method pate`` calls
the same function. A thin layer over ``dptext.generators.pate.run_pate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dptext.cli import options as o
from dptext.cli.app import app, console

PATE = "PATE"
LLM = "LLM"


@app.command("pate")
def pate(
    input: o.InputPath,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output JSONL {text, label, ...}.")],
    epsilon: Annotated[float, typer.Option(
        "--epsilon", help="Total ε of the run (teacher votes + label tutor [+ vocabulary]).",
        rich_help_panel=PATE)],
    delta: o.Delta = 1e-5,
    documents: Annotated[int | None, typer.Option(
        help="Total output documents (default: 100 per class).", rich_help_panel=PATE)
    ] = None,
    per_class: Annotated[int | None, typer.Option(
        help="Output documents per class, instead of --documents.", rich_help_panel=PATE)
    ] = None,
    candidates_per_doc: Annotated[float, typer.Option(
        help="Public candidates written per output document.", rich_help_panel=PATE)] = 4.0,
    teachers: Annotated[int, typer.Option(
        help="Teachers (disjoint shards of the private corpus).", rich_help_panel=PATE)
    ] = 100,
    max_queries: Annotated[int | None, typer.Option(
        help="Query budget: candidates the teachers answer (default all); the student "
        "scores the rest.", rich_help_panel=PATE)] = None,
    tutor_share: Annotated[float, typer.Option(
        help="Share of ε for the label-distribution tutor.", rich_help_panel=PATE)] = 0.05,
    vocab_share: Annotated[float, typer.Option(
        help="Share of ε for the DP vocabulary (only without --labels).",
        rich_help_panel=PATE)] = 0.2,
    label_set_share: Annotated[float, typer.Option(
        help="Share of ε for the DP label set (only without --labels, on a labelled "
        "corpus).", rich_help_panel=PATE)] = 0.1,
    embedder: o.Embedder = "minilm",
    document_type: Annotated[str, typer.Option(
        help="What to write, e.g. 'news article'.", rich_help_panel=LLM)] = "document",
    llm: Annotated[str, typer.Option(help="LLM backend (see 'dptext generate --help').",
                                     rich_help_panel=LLM)] = "local:qwen2.5-1.5b",
    max_tokens: Annotated[int, typer.Option(rich_help_panel=LLM)] = 400,
    temperature: Annotated[float, typer.Option(rich_help_panel=LLM)] = 0.8,
    top_p: Annotated[float, typer.Option(rich_help_panel=LLM)] = 0.95,
    concurrency: Annotated[int, typer.Option(rich_help_panel=LLM)] = 4,
    labels: Annotated[str | None, typer.Option(
        help="Comma-separated PUBLIC label names: candidates are written per label from the "
        "document type and the name. Without it, prompts use terms of a DP vocabulary and the "
        "teachers assign labels.", rich_help_panel=o.INPUT)] = None,
    vocab: o.Vocab = o.D["vocab"],
    terms_per_doc: o.TermsPerDoc = o.D["terms_per_doc"],
    vocab_size: o.VocabSize = o.D["vocab_size"],
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    format: o.Format = None,
    encoding: o.Encoding = "utf-8",
    skip_invalid: o.SkipInvalid = False,
    seed: Annotated[int, typer.Option(help="Seed for the public randomness (prompts, "
                                      "candidate folds, queried subset).")] = 0,
    resume: Annotated[bool, typer.Option(
        help="Continue an interrupted run from <out>.run/ without new DP noise.")] = False,
    cache: Annotated[bool, typer.Option(
        help="Reuse completions of identical prompts across runs ($DPTEXT_CACHE).")] = True,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    budget_total: o.BudgetTotal = None,
    allow_budget_overrun: o.AllowOverrun = False,
    dataset_id: o.DatasetId = None,
) -> None:
    """Public LLM candidates, teachers on disjoint shards, a student on noisy (GNMax)
    votes and a DP label-distribution tutor (docs/pate.md)."""
    from dptext.corpus import read_corpus
    from dptext.generators.pate import BudgetHooks, PateConfig, run_pate
    from dptext.llm import LLMError, PromptCache, SamplingParams, make_backend
    from dptext.reporting import add_budget, print_report, report_path, write_report

    with o.user_errors():
        cfg = PateConfig(
            epsilon=epsilon, delta=delta, documents=documents, per_class=per_class,
            candidates_per_doc=candidates_per_doc, teachers=teachers, max_queries=max_queries,
            tutor_share=tutor_share, vocab_share=vocab_share, label_set_share=label_set_share,
            labels=o.parse_labels(labels),
            document_type=document_type, vocab=vocab, terms_per_doc=terms_per_doc,
            vocab_size=vocab_size, embedder=embedder, seed=seed,
            sampling=SamplingParams(max_tokens, temperature, top_p))
        cfg.validate()
        try:
            backend = make_backend(llm)
        except LLMError as e:
            raise ValueError(str(e)) from None

        def load():
            return read_corpus(input, text_column=text_column, label_column=label_column,
                               fmt=format, encoding=encoding, skip_invalid=skip_invalid)

        opened = {}

        def charge(corpus, planned):  # the whole plan, before the first release
            opened["budget"] = o.charge_plan(corpus, budget_total, planned,
                                             allow_budget_overrun,
                                             command="generate --method pate",
                                             parameters=cfg.to_dict(),
                                             dataset_id=dataset_id, input=input)

        try:
            report = run_pate(load, o.ensure_parent(out), cfg, backend, resume=resume,
                              cache=PromptCache.default() if cache else None,
                              concurrency=concurrency, progress=progress,
                              budget=BudgetHooks(charge), echo=console.print)
        except LLMError as e:
            raise ValueError(f"{e}\n(finished candidates are kept in {out}.run; re-run the "
                             "same command with --resume)") from None
        finally:
            backend.close()
        if "budget" in opened:  # which ledger was charged: dataset id or content
            write_report(add_budget(report, opened["budget"]), report_path(out))
        print_report(report, console)
        console.print(f"wrote {report['parameters']['documents']} documents to {out} "
                      f"({report['parameters']['llm_calls']} LLM calls)")
        console.print(f"privacy report: {report_path(out)}")
