"""``dptext augpe`` (= ``dptext generate --method augpe``): the Aug-PE baseline.

Run directory ``<out>.run/`` (see ``dptext.generators.augpe.state``): ``run.json`` is
written before anything private is read, each iteration's noisy vote histograms are
saved (with their ledger records) before any prompt uses them, each population after
its prompts, and every completion goes to ``journal.jsonl``. ``--resume`` continues
mid-iteration: finished iterations draw no new noise, finished prompts are not repeated.
"""

from __future__ import annotations

import secrets as _secrets
from pathlib import Path
from typing import Annotated

import typer

from dptext.cli import options as o
from dptext.cli.app import app, console

AUGPE = "Aug-PE"
DEFAULT_LLM = "local:qwen2.5-1.5b"
#: options that fix the DP release; --resume refuses to continue when one of them changed
RELEASE_KEYS = ("input", "text_column", "label_column", "format", "labels", "epsilon", "delta",
                "config", "seed")


def run_dir_for(out: Path) -> Path:
    return out.with_name(out.name + ".run")


@app.command("augpe")
def augpe(
    input: o.InputPath,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output JSONL {text, label}: the "
                                      "population after the last iteration.")],
    epsilon: Annotated[float, typer.Option(help="Total ε of the run (DP vocabulary + all "
                                           "vote histograms).", rich_help_panel=AUGPE)],
    delta: o.Delta = o.D["delta"],
    document_type: Annotated[str, typer.Option(help="What to write, e.g. 'news article'.",
                                               rich_help_panel=AUGPE)] = "document",
    llm: Annotated[str, typer.Option(help="LLM backend (as for 'dptext generate').",
                                     rich_help_panel=AUGPE)] = DEFAULT_LLM,
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
        rich_help_panel=AUGPE)] = "sample",
    threshold: Annotated[float, typer.Option(
        help="Noisy vote counts below this do not reproduce.", rich_help_panel=AUGPE)] = 0.0,
    copies: Annotated[int, typer.Option(help="Variations per parent with --selection rank.",
                                        rich_help_panel=AUGPE)] = 2,
    variation: Annotated[str, typer.Option(
        help="mixed, blank (fill-in-the-blanks) or paraphrase.", rich_help_panel=AUGPE)
    ] = "mixed",
    mask_rate: Annotated[float, typer.Option(help="Fraction of words blanked.",
                                             rich_help_panel=AUGPE)] = 0.5,
    random_words: Annotated[int, typer.Option(
        help="Random words of the DP vocabulary per initial prompt (AugPE+Ṽ); 0: plain "
        "AugPE, no vocabulary release.", rich_help_panel=AUGPE)] = 5,
    vocab_share: Annotated[float, typer.Option(
        help="Share of the budget (Gaussian μ²) spent on the DP vocabulary.",
        rich_help_panel=AUGPE)] = 0.2,
    label_set_share: Annotated[float, typer.Option(
        help="Share of the budget (Gaussian μ²) spent on the DP label set when --labels is "
        "not given.", rich_help_panel=AUGPE)] = 0.1,
    vocab: o.Vocab = o.D["vocab"],
    vocab_size: o.VocabSize = o.D["vocab_size"],
    terms_per_doc: o.TermsPerDoc = o.D["terms_per_doc"],
    embedder: o.Embedder = o.D["embedder"],
    augpe_class_names: Annotated[bool, typer.Option(
        "--augpe-class-names", help="Put the class names in the prompts IN THE CLEAR (the "
        "original Aug-PE); the privacy report marks the run as leaking them.",
        rich_help_panel=AUGPE)] = False,
    target_words: Annotated[int | None, typer.Option(
        help="Words per text asked of the LLM (default 0.6 × --max-tokens).",
        rich_help_panel=AUGPE)] = None,
    max_tokens: Annotated[int, typer.Option(help="Token limit per text.")] = 160,
    temperature: Annotated[float, typer.Option()] = 0.8,
    top_p: Annotated[float, typer.Option()] = 0.95,
    concurrency: Annotated[int, typer.Option(help="Prompts in flight at once.")] = 4,
    resume: Annotated[bool, typer.Option(
        help="Continue an interrupted run from <out>.run/.")] = False,
    cache: Annotated[bool, typer.Option(
        help="Reuse completions of identical prompts across runs.")] = True,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    format: o.Format = None,
    encoding: o.Encoding = "utf-8",
    skip_invalid: o.SkipInvalid = False,
    labels: o.Labels = None,
    seed: o.Seed = None,
    budget_total: o.BudgetTotal = None,
    allow_budget_overrun: o.AllowOverrun = False,
    dataset_id: o.DatasetId = None,
) -> None:
    """Aug-PE: evolve LLM texts toward the private corpus through DP nearest-neighbour votes."""
    from dptext.corpus import InputError, read_corpus, write_jsonl
    from dptext.generators.augpe import (
        CLASS_NAMES_NOTE,
        LLM_NOTE,
        AugPEConfig,
        RunState,
        planned_releases,
        run_augpe,
    )
    from dptext.llm import LLMError, PromptCache, make_backend
    from dptext.privacy import PrivacyLedger
    from dptext.privacy.budget import corpus_fingerprint
    from dptext.privacy.labels import LABEL_SET, check_declared, release_label_set
    from dptext.reporting import (
        LABELS_FROM_DATA,
        build_report,
        print_report,
        report_path,
        write_report,
    )

    with o.user_errors():
        corpus = read_corpus(input, text_column=text_column, label_column=label_column,
                             fmt=format, encoding=encoding, skip_invalid=skip_invalid)
        o.announce_corpus(corpus)
        declared = o.parse_labels(labels)
        if declared and corpus.labels is None:
            raise InputError("labels were declared but the corpus has no label column")
        if declared:
            check_declared(corpus.labels, declared, source=corpus.source)
        # without declared labels the classes are the DP label set, released below
        release_set = corpus.labels is not None and declared is None
        if per_class is not None and total is not None:
            raise ValueError("give either --per-class or --total")
        state = RunState(run_dir_for(out))
        saved = None
        if state.started():
            if not resume:
                raise ValueError(f"{state.dir} exists from an earlier run: pass --resume to "
                                 "continue it, or remove it to start a new one")
            saved = state.load_run()
        classes = saved["classes"] if saved else (
            list(declared) if declared else None if release_set else [None])

        def config_for(classes: list | None) -> AugPEConfig:
            n_c = per_class if per_class is not None else (
                max(1, total // max(len(classes or ()), 1)) if total is not None else 10)
            return AugPEConfig(
                document_type=document_type, per_class=n_c, iterations=iterations,
                selection=selection, threshold=threshold, copies=copies, variation=variation,
                mask_rate=mask_rate, random_words=random_words, vocab=vocab,
                vocab_size=vocab_size, terms_per_doc=terms_per_doc, vocab_share=vocab_share,
                label_set_share=label_set_share, embedder=embedder,
                class_names=augpe_class_names, target_words=target_words,
                max_tokens=max_tokens, temperature=temperature, top_p=top_p)

        cfg = config_for(classes)
        noise = cfg.noise(epsilon, delta, label_set=release_set)
        try:
            backend = make_backend(llm)
        except LLMError as e:
            raise ValueError(str(e)) from None

        def config_of(cfg: AugPEConfig) -> dict:
            return {"input": input, "text_column": text_column, "label_column": label_column,
                    "format": format, "labels": labels, "epsilon": epsilon, "delta": delta,
                    "config": cfg.to_dict(), "seed": seed}

        config = config_of(cfg)
        fingerprint = corpus_fingerprint(corpus.texts, corpus.labels)
        if saved is not None:
            changed = [k for k in RELEASE_KEYS if k != "seed"
                       and saved["config"].get(k) != config.get(k)]
            if seed is not None and saved["config"]["seed"] != seed:
                changed.append("seed")
            if saved["fingerprint"] != fingerprint:
                changed.append("the corpus")
            if changed:
                raise ValueError(f"--resume: {', '.join(changed)} differ from the interrupted "
                                 f"run in {state.dir}; use the same options and data, or "
                                 "remove that folder to start a new run")
            run_seed = saved["llm_seed"]
            budget_key = saved.get("budget")
            console.print(f"resuming {state.dir}")
        else:
            # the label set's partitions are not known yet; the plan's cost does not
            # depend on them (one parallel group per iteration)
            planned = planned_releases(noise, classes if classes is not None else ["?"])
            run_seed = seed if seed is not None else _secrets.randbits(31)
            # the whole plan is charged to the corpus before the first release
            budget = o.charge_plan(corpus, budget_total, planned, allow_budget_overrun,
                                   command="augpe",
                                   parameters={"config": cfg.to_dict(), "epsilon": epsilon},
                                   dataset_id=dataset_id, input=input)
            budget_key = budget.report_entry()
            if release_set:
                ledger = PrivacyLedger(epsilon_cap=epsilon)
                released = release_label_set(corpus.labels, noise[LABEL_SET], ledger=ledger)
                state.save_label_set(released, ledger.releases)  # before run.json
                classes = list(released.values["label"])
                if not classes:
                    raise ValueError(
                        f"no label reached the DP label set's threshold (a noisy count of "
                        f"{released.threshold:.0f}); the run's budget is spent and there is "
                        "no class to write for. Declare --labels, or raise --epsilon or "
                        "--label-set-share.")
                cfg = config_for(classes)
                config = config_of(cfg)
            state.save_run({"config": config, "llm_seed": run_seed,
                            "fingerprint": fingerprint,
                            "classes": classes, "budget": budget_key})
        n_c = cfg.per_class
        console.print(f"Aug-PE: {len(classes)} classes × {n_c} texts, {iterations} "
                      f"iterations, {backend.identity}")
        try:
            result = run_augpe(corpus, cfg, noise, backend, state.dir, classes=classes,
                               seed=run_seed, epsilon_cap=epsilon,
                               cache=PromptCache.default() if cache else None,
                               concurrency=concurrency, progress=progress,
                               say=console.print)
        except LLMError as e:
            raise ValueError(f"{e}\n(finished work is kept in {state.dir}; re-run the same "
                             "command with --resume)") from None
        finally:
            backend.close()
        del corpus  # nothing below touches private data
        final = result.populations[-1]
        n = write_jsonl(({"text": t, "label": c} for t, c in final), o.ensure_parent(out))
        notes = [LLM_NOTE]
        if not declared and classes != [None]:
            notes.append(LABELS_FROM_DATA)
        if augpe_class_names:
            notes.insert(0, CLASS_NAMES_NOTE)
        params = {"generator": "augpe", **cfg.to_dict(), "llm": backend.identity,
                  "prompts_per_iteration": result.prompts,
                  "prompts": result.prompts[-1], "class_names_in_prompts": augpe_class_names,
                  "vocabulary_size": len(result.vocabulary) if result.vocabulary else 0}
        report = build_report(result.ledger, command="augpe", parameters=params, notes=notes)
        if budget_key:
            report["budget"] = budget_key
        print_report(report, console)
        console.print(f"wrote {n} documents to {out} ({result.prompts[-1]} prompts)")
        console.print(f"privacy report: {write_report(report, report_path(out))}")
