"""``dptext generate``: the main job. A private corpus in; a synthetic corpus, its privacy
report and a release folder out — through the run lifecycle (``dptext.run``), with DP-KPS
(the default) or another generator (``--method``). docs/run-folder.md describes the run
folder ``<out>.run/`` that ``--resume`` continues from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dptext.cli import options as o
from dptext.cli.app import app
from dptext.llm.base import http_options
from dptext.llm.models import DEFAULT_LOCAL_MODEL

DEFAULT_LLM = f"local:{DEFAULT_LOCAL_MODEL}"


@app.command()
@o.seeder_options
def generate(
    input: o.InputPath,
    out: o.Out,
    method: Annotated[str, typer.Option(
        help="kps (DP-KPS), augpe, pate or dpft; each also a command with all its "
        "options.", rich_help_panel=o.OUTPUT)
    ] = "kps",
    document_type: o.DocumentType = "document",
    llm: o.Llm = DEFAULT_LLM,
    prompt_template: Annotated[Path | None, typer.Option(
        help="User prompt template (text, or JSON with 'user'/'system'; docs/llm.md).",
        rich_help_panel=o.LLM)
    ] = None,
    few_shot: Annotated[Path | None, typer.Option(
        help="PUBLIC example documents for few-shot prompting (.jsonl, or text separated "
        "by '---' lines).", rich_help_panel=o.LLM)] = None,
    max_tokens: Annotated[int | None, typer.Option(
        help="Token limit per document (default: the method's own; DP-KPS 400, Aug-PE 160, "
        "PATE 400).", rich_help_panel=o.LLM)] = None,
    temperature: o.Temperature = 0.8,
    top_p: o.TopP = 0.95,
    min_coverage: Annotated[float, typer.Option(
        help="Retry a document (new sampling seed) when it contains fewer than this fraction "
        "of its seed keyphrases; 0 = off.", rich_help_panel=o.ADVANCED)] = 0.0,
    max_attempts: Annotated[int, typer.Option(
        help="Attempts per document with --min-coverage.", rich_help_panel=o.ADVANCED)] = 3,
    clean: Annotated[bool, typer.Option(
        help="Strip preambles/sign-offs and truncated endings.", rich_help_panel=o.ADVANCED)
    ] = True,
    concurrency: o.Concurrency = 4,
    max_retries: Annotated[int, typer.Option(
        help="Retries per prompt on time-outs, 429 and 5xx.", rich_help_panel=o.ADVANCED)] = 6,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request.",
                                           rich_help_panel=o.ADVANCED)] = 300.0,
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
    sequences_per_class: Annotated[int | None, typer.Option(
        help="Documents per class (default: the method's own; DP-KPS 100 when "
        "--total-sequences is not given).", rich_help_panel=o.OUTPUT)] = None,
    total_sequences: Annotated[int | None, typer.Option(
        help="Total documents, split equally or by the DP label histogram (--epsilon-labels).",
        rich_help_panel=o.OUTPUT)] = None,
    seed: o.Seed = None,
    budget_total: o.BudgetTotal = None,
    allow_budget_overrun: o.AllowOverrun = False,
    dataset_id: o.DatasetId = None,
    engine: o.Engine = "local",
    ray_address: o.RayAddress = None,
    kps: dict | None = None,
) -> None:
    """Write a DP synthetic corpus (DP-KPS, or another --method).

    DP-KPS (--method kps): DP keyphrase sequences, then one LLM document each. Another
    generator: --method augpe, pate or dpft; their own commands have all their options.
    """
    src = o.source(input, text_column, label_column, format, encoding, skip_invalid,
                   label_sep)
    run = dict(resume=resume, budget_total=budget_total, dataset_id=dataset_id,
               allow_budget_overrun=allow_budget_overrun, concurrency=concurrency,
               cache=cache, progress=progress, seed=seed, engine=engine,
               ray_address=ray_address)
    with o.user_errors():
        if method in ("iterative", "independent"):
            raise typer.BadParameter(f"--method chooses the generator (kps, augpe, pate, "
                                     f"dpft); DP-KPS's sequence method is --sequence-method "
                                     f"{method}")
        declared = o.parse_labels(labels)
        if o.form_option(kps["form"]) is True and method != "kps":
            raise typer.BadParameter(f"--form is DP-KPS's form profile (--method kps); "
                                     f"--method {method} has none")
        if method != "kps" and (kps["epsilon_vocab"], kps["epsilon_kde"]) != (None, None):
            raise typer.BadParameter(f"--epsilon-vocab/--epsilon-kde are DP-KPS's per-stage "
                                     f"budgets; --method {method} takes a total --epsilon")
        seeder = o.seeder_kwargs(kps, multilabel=label_sep is not None)
    llm_options = http_options(llm, {"timeout": timeout})
    if method != "kps":
        from dptext.generators.registry import generator_class

        with o.user_errors():
            accepted = generator_class(method).option_names()
        # the options this command shares with the generator (its own command has the rest)
        shared = dict(epsilon=kps["epsilon"], delta=kps["delta"], labels=declared,
                      documents=total_sequences, per_class=sequences_per_class,
                      document_type=document_type, max_tokens=max_tokens,
                      temperature=temperature, top_p=top_p,
                      vocab=None if kps["vocab"] == "auto" else kps["vocab"],
                      vocab_size=kps["vocab_size"], embedder=kps["embedder"],
                      # "auto" is DP-KPS's; the others' own default S and vocabulary apply
                      terms_per_doc=None if kps["terms_per_doc"] == "auto"
                      else kps["terms_per_doc"],
                      label_set_share=kps["label_set_share"], seed=seed)
        options = {k: v for k, v in shared.items() if k in accepted and v is not None}
        return o.run_generator(method, options, src, out, llm=llm, llm_options=llm_options,
                               **run)
    options = dict(
        **seeder, labels=declared, per_class=sequences_per_class,
        documents=total_sequences, document_type=document_type,
        prompt_template=str(prompt_template) if prompt_template else None,
        few_shot=str(few_shot) if few_shot else None,
        temperature=temperature, top_p=top_p, min_coverage=min_coverage,
        max_attempts=max_attempts, clean=clean, max_retries=max_retries,
        **({} if max_tokens is None else {"max_tokens": max_tokens}))
    o.run_generator("kps", options, src, out, llm=llm, llm_options=llm_options, **run)
