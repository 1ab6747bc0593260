"""``dptext generate``: the main job. A private corpus in; DP keyphrase sequences, one LLM
document per sequence, and the privacy report out.

Run directory ``<out>.run/`` holds ``run.json`` (the options that fix the DP release),
``sequences.jsonl`` and ``ledger.json`` (both written before the first prompt) and
``journal.jsonl`` (every completion, fsync'ed as it arrives). ``--resume`` reloads the
sequences and the ledger from it instead of refitting: no new DP noise is drawn, the private
corpus is not read again, and finished prompts are not repeated.
"""

from __future__ import annotations

import json
import secrets as _secrets
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from dptext.cli import options as o
from dptext.cli.app import app, console

LLM = "LLM"
RUN = "Run"
DEFAULT_LLM = "local:qwen2.5-1.5b"  # = "local:" + dptext.llm.models.DEFAULT_LOCAL_MODEL

#: options that fix the DP release; --resume refuses to continue when one of them changed
RELEASE_KEYS = ("input", "text_column", "label_column", "format", "labels", "vocab", "embedder",
                "epsilon_vocab", "epsilon_kde", "epsilon", "vocab_share", "vocab_noise_terms",
                "delta", "vocab_noise", "kde_noise",
                "terms_per_doc", "vocab_size", "method", "ensemble", "length", "features",
                "bandwidth", "sampling", "epsilon_labels", "label_set_share",
                "epsilon_label_set", "sequences_per_class",
                "total_sequences", "seed", "model", "select", "mixture")

FEW_SHOT_NOTE = ("Few-shot examples are public documents supplied by the data recipient; they "
                 "are not part of the private corpus and are not covered by the guarantee.")
LLM_NOTE = ("The LLM sees only the document type, the DP keyphrase sequences and public "
            "few-shot examples: the documents are post-processing of the DP release.")


def run_dir_for(out: Path) -> Path:
    return out.with_name(out.name + ".run")


def _check_few_shot_not_private(examples, corpus) -> None:
    """Refuse few-shot examples that are (parts of) private documents."""
    def norm(s: str) -> str:
        return " ".join(s.lower().split())

    private = [norm(t) for t in corpus.texts]
    for i, ex in enumerate(examples, 1):
        e = norm(ex.text)
        if len(e) >= 40 and any(e in p for p in private):
            raise ValueError(f"few-shot example {i} appears in the private corpus; few-shot "
                             "examples must be public documents, never private records")


@app.command()
def generate(
    input: o.InputPath,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output JSONL: one synthetic "
                                      "document per line as {text, label, keyphrases}.")],
    document_type: Annotated[str, typer.Option(
        help="What to write, e.g. 'medical record' (the only context the LLM gets besides "
        "the DP keyphrases).", rich_help_panel=LLM)] = "document",
    llm: Annotated[str, typer.Option(
        help="LLM backend: local:qwen2.5-1.5b (default), local:qwen2.5-0.5b, "
        "local:smollm2-135m, local:/path/model.gguf, openai:MODEL@URL, anthropic:MODEL, "
        "bedrock:MODEL_ID. Keys come from the environment only.", rich_help_panel=LLM)
    ] = DEFAULT_LLM,
    prompt_template: Annotated[Path | None, typer.Option(
        help="User prompt template (text, or JSON with 'user'/'system'); placeholders "
        "{document_type} {keyphrases} {keyphrase_list} {n_keyphrases}.", rich_help_panel=LLM)
    ] = None,
    few_shot: Annotated[Path | None, typer.Option(
        help="PUBLIC example documents for few-shot prompting (.jsonl with text and optional "
        "keyphrases, or text separated by '---' lines).", rich_help_panel=LLM)] = None,
    max_tokens: Annotated[int, typer.Option(help="Token limit per document.",
                                            rich_help_panel=LLM)] = 400,
    temperature: Annotated[float, typer.Option(rich_help_panel=LLM)] = 0.8,
    top_p: Annotated[float, typer.Option(rich_help_panel=LLM)] = 0.95,
    min_coverage: Annotated[float, typer.Option(
        help="Retry a document (new sampling seed) when it contains fewer than this fraction "
        "of its seed keyphrases; 0 = off.", rich_help_panel=LLM)] = 0.0,
    max_attempts: Annotated[int, typer.Option(
        help="Attempts per document with --min-coverage.", rich_help_panel=LLM)] = 3,
    clean: Annotated[bool, typer.Option(
        help="Strip preambles/sign-offs and truncated endings.", rich_help_panel=LLM)] = True,
    concurrency: Annotated[int, typer.Option(
        help="Prompts in flight at once (at most the local model's slots: "
        "$DPTEXT_LLM_PARALLEL, default 4 with 2+ threads, 1 with one).",
        rich_help_panel=RUN)] = 4,
    max_retries: Annotated[int, typer.Option(
        help="Retries per prompt on time-outs, 429 and 5xx.", rich_help_panel=RUN)] = 6,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request.",
                                           rich_help_panel=RUN)] = 300.0,
    resume: Annotated[bool, typer.Option(
        help="Continue an interrupted run from <out>.run/ without drawing new DP noise.",
        rich_help_panel=RUN)] = False,
    cache: Annotated[bool, typer.Option(
        help="Reuse completions of identical prompts across runs ($DPTEXT_CACHE).",
        rich_help_panel=RUN)] = True,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.",
                                           rich_help_panel=RUN)] = True,
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    format: o.Format = None,
    encoding: o.Encoding = "utf-8",
    skip_invalid: o.SkipInvalid = False,
    labels: o.Labels = None,
    vocab: o.Vocab = o.D["vocab"],
    embedder: o.Embedder = o.D["embedder"],
    epsilon_vocab: o.EpsVocab = None,
    epsilon_kde: o.EpsKde = None,
    epsilon: o.Epsilon = None,
    vocab_share: o.VocabShare = o.D["vocab_share"],
    delta: o.Delta = o.D["delta"],
    vocab_noise: o.VocabNoise = o.D["vocab_noise"],
    kde_noise: o.KdeNoise = o.D["kde_noise"],
    terms_per_doc: o.TermsPerDoc = o.D["terms_per_doc"],
    vocab_size: o.VocabSize = o.D["vocab_size"],
    method: o.Method = o.D["method"],
    ensemble: o.Ensemble = o.D["ensemble"],
    length: o.Length = o.D["length"],
    features: o.Features = o.D["features"],
    bandwidth: o.Bandwidth = o.D["bandwidth"],
    sampling: o.Sampling = o.D["sampling"],
    model: o.Model = o.D["model"],
    select: o.Select = o.D["select"],
    mixture: o.Mixture = o.D["mixture"],
    vocab_noise_terms: o.VocabNoiseTerms = o.D["vocab_noise_terms"],
    epsilon_labels: o.EpsLabels = o.D["epsilon_labels"],
    label_set_share: o.LabelSetShare = o.D["label_set_share"],
    epsilon_label_set: o.EpsLabelSet = o.D["epsilon_label_set"],
    sequences_per_class: Annotated[int | None, typer.Option(
        help="Documents per class (default 100 when --total-sequences is not given).")] = None,
    total_sequences: Annotated[int | None, typer.Option(
        help="Total documents, split equally or by the DP label histogram (--epsilon-labels)."
    )] = None,
    seed: o.Seed = None,
    budget_total: o.BudgetTotal = None,
    allow_budget_overrun: o.AllowOverrun = False,
    dataset_id: o.DatasetId = None,
) -> None:
    """Write a DP synthetic corpus: DP keyphrase sequences, then one LLM document each
    (--method dpft: a local LM fine-tuned with DP-SGD instead, see 'dptext dpft';
    --method augpe: the Aug-PE baseline, see 'dptext augpe' for all its options;
    --method pate: PATE-style augmentation, see 'dptext pate')."""
    if method == "dpft":
        from dptext.cli.dpft import dpft

        if epsilon is None:
            raise typer.BadParameter("--method dpft needs --epsilon (the run's total ε)")
        return dpft(input=input, out=out, epsilon=str(epsilon), delta=delta,
                    documents=total_sequences, labels=labels, text_column=text_column,
                    label_column=label_column, format=format, encoding=encoding,
                    skip_invalid=skip_invalid, seed=seed, progress=progress,
                    budget_total=budget_total, allow_budget_overrun=allow_budget_overrun,
                    dataset_id=dataset_id)
    if method == "augpe":
        from dptext.cli.augpe import augpe

        if epsilon is None:
            raise typer.BadParameter("--method augpe needs --epsilon (the run's total ε)")
        return augpe(input=input, out=out, epsilon=epsilon, delta=delta,
                     document_type=document_type, llm=llm, per_class=sequences_per_class,
                     total=total_sequences, max_tokens=max_tokens, temperature=temperature,
                     top_p=top_p, concurrency=concurrency, resume=resume, cache=cache,
                     progress=progress, text_column=text_column, label_column=label_column,
                     format=format, encoding=encoding, skip_invalid=skip_invalid,
                     labels=labels, vocab=vocab, vocab_size=vocab_size,
                     terms_per_doc=terms_per_doc, embedder=embedder, seed=seed,
                     budget_total=budget_total, allow_budget_overrun=allow_budget_overrun,
                     dataset_id=dataset_id, label_set_share=label_set_share)
    if method == "pate":
        from dptext.cli.pate import pate

        if epsilon is None:
            raise typer.BadParameter("--method pate needs --epsilon (the run's total ε)")
        return pate(input=input, out=out, epsilon=epsilon, delta=delta,
                    documents=total_sequences, per_class=sequences_per_class,
                    document_type=document_type, llm=llm, max_tokens=max_tokens,
                    temperature=temperature, top_p=top_p, concurrency=concurrency,
                    labels=labels, vocab=vocab, terms_per_doc=terms_per_doc,
                    vocab_size=vocab_size, embedder=embedder, text_column=text_column,
                    label_column=label_column, format=format, encoding=encoding,
                    skip_invalid=skip_invalid, seed=seed or 0, resume=resume, cache=cache,
                    progress=progress, budget_total=budget_total,
                    allow_budget_overrun=allow_budget_overrun, dataset_id=dataset_id,
                    label_set_share=label_set_share)
    from dptext.generators.kps import KeyphraseSequence
    from dptext.llm import (
        DocumentOptions,
        Journal,
        LLMError,
        PromptBuilder,
        PromptCache,
        PromptTemplate,
        RetryPolicy,
        RunStats,
        SamplingParams,
        generate_documents,
        load_few_shot,
        make_backend,
    )
    from dptext.llm.errors import TemplateError
    from dptext.privacy import PrivacyLedger
    from dptext.reporting import (
        LABELS_FROM_DATA,
        build_report,
        print_report,
        report_path,
        write_report,
    )

    if sequences_per_class is None and total_sequences is None:
        sequences_per_class = 100
    config = {k: v for k, v in locals().items() if k in RELEASE_KEYS}
    run_dir = run_dir_for(out)
    with o.user_errors():
        try:
            # --- everything the LLM will see is validated before any DP release or call
            template = PromptTemplate.from_file(prompt_template) if prompt_template \
                else PromptTemplate()
            shots = tuple(load_few_shot(few_shot)) if few_shot else ()
            backend = make_backend(llm, **({"timeout": timeout}
                                           if llm.split(":")[0] in ("openai", "anthropic",
                                                                    "bedrock") else {}))
        except (TemplateError, LLMError) as e:
            raise ValueError(str(e)) from None

        seqs_path, ledger_path, run_json = (run_dir / "sequences.jsonl",
                                            run_dir / "ledger.json", run_dir / "run.json")
        if resume and seqs_path.exists() and ledger_path.exists() and run_json.exists():
            saved = json.loads(run_json.read_text())
            changed = [k for k in RELEASE_KEYS
                       if k != "seed" and saved["config"].get(k) != config.get(k)]
            if seed is not None and saved["config"]["seed"] != seed:
                changed.append("seed")
            if changed:
                raise ValueError(f"--resume: {', '.join(sorted(set(changed)))} differ from the "
                                 f"interrupted run in {run_dir}; use the same options, or "
                                 "remove that folder to start a new run (new DP noise)")
            seqs = [KeyphraseSequence.from_dict(json.loads(line))
                    for line in seqs_path.read_text(encoding="utf-8").splitlines()
                    if line.strip()]
            ledger = PrivacyLedger.load(ledger_path)
            params, notes, run_seed = saved["parameters"], saved["notes"], saved["llm_seed"]
            budget_key = saved.get("budget")
            console.print(f"resuming {run_dir}: {len(seqs)} saved sequences, no new DP noise")
            if shots:  # few-shot examples may be new on resume: check them too
                from dptext.corpus import read_corpus

                _check_few_shot_not_private(shots, read_corpus(
                    input, text_column=text_column, label_column=label_column, fmt=format,
                    encoding=encoding, skip_invalid=skip_invalid))
        else:
            if run_dir.exists() and any(run_dir.iterdir()):
                if not resume:
                    raise ValueError(f"{run_dir} exists from an earlier run: pass --resume to "
                                     "continue it, or remove it to start a new one")
                raise ValueError(f"{run_dir} is incomplete (no saved sequences or ledger); "
                                 "remove it to start a new run")
            from dptext.cli.keyphrases import fit_seeder, seeder_parameters
            from dptext.corpus import read_corpus

            declared = o.parse_labels(labels)
            corpus = read_corpus(input, text_column=text_column, label_column=label_column,
                                 fmt=format, encoding=encoding, skip_invalid=skip_invalid)
            o.announce_corpus(corpus)
            if shots:
                _check_few_shot_not_private(shots, corpus)
            from dptext.generators.kps import KeyphraseSeeder

            seeder_params = dict(
                vocab=vocab, embedder=embedder, delta=delta, vocab_share=vocab_share,
                **o.stage_epsilons(epsilon, epsilon_vocab, epsilon_kde), vocab_noise=vocab_noise,
                kde_noise=kde_noise, terms_per_doc=terms_per_doc, vocab_size=vocab_size,
                vocab_noise_terms=vocab_noise_terms,
                method=method, ensemble=ensemble, length=length, features=features,
                bandwidth=bandwidth, sampling=sampling, labels=declared,
                model=model, select=select, mixture=mixture,
                epsilon_labels=epsilon_labels, label_set_share=label_set_share,
                epsilon_label_set=epsilon_label_set)
            # the whole plan is checked and charged before the first release (a run that
            # fails afterwards stays charged); the releases made replace it once fitted,
            # before they are saved; --resume reuses the saved release and charges nothing
            planned_seeder = KeyphraseSeeder(**seeder_params)
            budget, settle = o.charge_plan_to_settle(
                corpus, budget_total,
                planned_seeder.planned_releases(corpus.labels is not None),
                allow_budget_overrun, command="generate",
                parameters=seeder_parameters(planned_seeder), dataset_id=dataset_id,
                input=input)
            seeder, rng = fit_seeder(corpus, seed=seed, **seeder_params)
            seqs = seeder.sample(sequences_per_class, total=total_sequences, rng=rng)
            notes = [] if declared or corpus.labels is None else [LABELS_FROM_DATA]
            del corpus  # nothing below touches private data
            ledger = seeder.ledger_
            params = seeder_parameters(seeder)
            run_seed = seed if seed is not None else _secrets.randbits(31)
            settle(ledger.releases)
            budget_key = budget.report_entry()
            # saved BEFORE the first prompt: a resumed run reuses exactly this release
            run_dir.mkdir(parents=True, exist_ok=True)
            # the releases only (PrivacyLedger.load reads them back); composing is done once,
            # for the report
            ledger_path.write_text(json.dumps({"releases": [asdict(r) for r in
                                                            ledger.releases]}, indent=2))
            seqs_path.write_text("".join(json.dumps(s.to_dict(), ensure_ascii=False) + "\n"
                                         for s in seqs), encoding="utf-8")
            # run.json last and atomically: its presence means the release is complete
            tmp = run_json.with_name(run_json.name + ".tmp")
            tmp.write_text(json.dumps({"config": config, "parameters": params,
                                       "notes": notes, "llm_seed": run_seed,
                                       "budget": budget_key},
                                      indent=2, default=str))
            tmp.replace(run_json)
            console.print(f"saved {len(seqs)} DP keyphrase sequences to {seqs_path}")

        builder = PromptBuilder(document_type, template, shots,
                                SamplingParams(max_tokens, temperature, top_p))
        opts = DocumentOptions(clean=clean, min_coverage=min_coverage or None,
                               max_attempts=max_attempts, concurrency=concurrency,
                               seed=run_seed, progress=progress,
                               retry=RetryPolicy(max_retries=max_retries))
        stats = RunStats()
        console.print(f"writing {len(seqs)} documents with {backend.identity}")
        started = time.perf_counter()
        try:
            docs = generate_documents(seqs, backend, builder, opts,
                                      Journal(run_dir / "journal.jsonl"),
                                      PromptCache.default() if cache else None, stats)
        except LLMError as e:
            raise ValueError(f"{e}\n(finished documents are kept in {run_dir}; re-run the "
                             "same command with --resume)") from None
        finally:
            backend.close()
        elapsed = time.perf_counter() - started
        from dptext.corpus import write_jsonl

        n = write_jsonl((d.to_dict() for d in docs), o.ensure_parent(out))
        covered = sum(d.coverage for d in docs) / max(len(docs), 1)
        console.print(f"wrote {n} documents to {out} in {elapsed:.0f} s; mean keyphrase "
                      f"coverage {covered:.0%}")
        console.print(f"  ({stats.computed} generated, {stats.from_journal} from the journal, "
                      f"{stats.from_cache} from the cache, {stats.retries} retries)")
        console.print(f"  {stats.quality_summary()}")
        run_params = {**params, "llm": backend.identity, "document_type": document_type,
                      "prompt_template": template.source,
                      "few_shot": str(few_shot) if few_shot else None,
                      "max_tokens": max_tokens, "temperature": temperature, "top_p": top_p,
                      "min_coverage": min_coverage}
        report = build_report(ledger, command="generate", parameters=run_params,
                              notes=[*notes, LLM_NOTE, *([FEW_SHOT_NOTE] if shots else [])])
        if budget_key:
            report["budget"] = budget_key
        print_report(report, console)
        console.print(f"privacy report: {write_report(report, report_path(out))}")
