"""``dptext keyphrases``: a private corpus in, DP keyphrase sequences and a privacy report out."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from dptext.cli import options as o
from dptext.cli.app import app, console


@app.command()
def keyphrases(
    input: o.InputPath,
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    labels: o.Labels = None,
    format: o.Format = None,
    skip_invalid: o.SkipInvalid = False,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output JSONL of sequences.",
                                      rich_help_panel=o.OUTPUT)] = ...,
    sequences_per_class: Annotated[int | None, typer.Option(
        help="Sequences to draw per class (default 1000 when --total-sequences is not given).",
        rich_help_panel=o.OUTPUT)] = None,
    total_sequences: Annotated[int | None, typer.Option(
        help="Total sequences, split equally or by the DP label histogram (--epsilon-labels).",
        rich_help_panel=o.OUTPUT)] = None,
    epsilon: o.Epsilon = None,
    delta: o.Delta = o.D["delta"],
    epsilon_vocab: o.EpsVocab = None,
    epsilon_kde: o.EpsKde = None,
    epsilon_labels: o.EpsLabels = o.D["epsilon_labels"],
    model: o.Model = o.D["model"],
    select: o.Select = o.D["select"],
    vocab: o.Vocab = o.D["vocab"],
    terms_per_doc: o.TermsPerDoc = o.D["terms_per_doc"],
    vocab_size: o.VocabSize = o.D["vocab_size"],
    sequence_method: o.SequenceMethod = o.D["method"],
    length: o.Length = o.D["length"],
    embedder: o.Embedder = o.D["embedder"],
    seed: o.Seed = None,
    budget_total: o.BudgetTotal = None,
    allow_budget_overrun: o.AllowOverrun = False,
    dataset_id: o.DatasetId = None,
    engine: o.Engine = "local",
    ray_address: o.RayAddress = None,
    encoding: o.Encoding = "utf-8",
    vocab_share: o.VocabShare = o.D["vocab_share"],
    label_set_share: o.LabelSetShare = o.D["label_set_share"],
    epsilon_label_set: o.EpsLabelSet = o.D["epsilon_label_set"],
    terms_share: o.TermsShare = o.D["terms_share"],
    vocab_noise: o.VocabNoise = o.D["vocab_noise"],
    kde_noise: o.KdeNoise = o.D["kde_noise"],
    vocab_noise_terms: o.VocabNoiseTerms = o.D["vocab_noise_terms"],
    ensemble: o.Ensemble = o.D["ensemble"],
    features: o.Features = o.D["features"],
    bandwidth: o.Bandwidth = o.D["bandwidth"],
    sampling: o.Sampling = o.D["sampling"],
    mixture: o.Mixture = o.D["mixture"],
) -> None:
    """Fit DP-KPS and write DP keyphrase sequences (JSONL).

    One JSON line per sequence, and the run's privacy report beside them.
    """
    from dptext.compute import use_engine
    from dptext.corpus import read_corpus, write_jsonl
    from dptext.reporting import (
        LABELS_FROM_DATA,
        build_report,
        print_report,
        report_path,
        write_report,
    )

    with o.user_errors(), use_engine(engine, ray_address):
        from dptext.generators.kps import KeyphraseSeeder
        from dptext.generators.kps.generator import check_seeder, fit_seeder, seeder_parameters
        from dptext.privacy import PrivacyLedger
        from dptext.privacy.budget import settle_run
        from dptext.run import budget as run_budget

        declared = o.parse_labels(labels)
        params = dict(
            vocab=vocab, embedder=embedder, delta=delta, vocab_share=vocab_share,
            **o.stage_epsilons(epsilon, epsilon_vocab, epsilon_kde),
            vocab_noise=vocab_noise, kde_noise=kde_noise,
            terms_per_doc=terms_per_doc, vocab_size=vocab_size,
            vocab_noise_terms=vocab_noise_terms, method=sequence_method,
            ensemble=ensemble, length=length, features=features, bandwidth=bandwidth,
            sampling=sampling, labels=declared, epsilon_labels=epsilon_labels,
            label_set_share=label_set_share, epsilon_label_set=epsilon_label_set,
            terms_share=terms_share, model=model, select=select, mixture=mixture)
        seeder = KeyphraseSeeder(**params)
        check_seeder(seeder)  # a bad option or name is refused before anything is charged
        corpus = read_corpus(input, text_column=text_column, label_column=label_column,
                             fmt=format, encoding=encoding, skip_invalid=skip_invalid)
        o.announce_corpus(corpus)
        # the whole plan is checked and charged before the first release; once fitted,
        # the releases actually made replace it (never costing more), and a fit that
        # fails is charged only the releases it made
        say = console.print
        budget, run_id = run_budget.charge(
            corpus, run_budget.BudgetOptions(budget_total, allow_budget_overrun, dataset_id),
            seeder.planned_releases(corpus.labels is not None), command="keyphrases",
            parameters=seeder_parameters(seeder), input=input, say=say)
        ledger = PrivacyLedger()  # every release of the fit, as it is made
        try:
            # the stage only, no elapsed time: the fit's time grows with the corpus's size
            with console.status("fitting DP-KPS") as status:
                rng = fit_seeder(seeder, corpus, seed=seed, say=say,
                                 progress=lambda msg: status.update(f"DP-KPS: {msg}"),
                                 ledger=ledger)
        except Exception:
            run_budget.settle_failed(budget, run_id, ledger.releases, say)
            raise
        settle_run(budget, run_id, ledger.releases)
        if sequences_per_class is None and total_sequences is None:
            sequences_per_class = 1000
        started = time.perf_counter()
        seqs = seeder.sample(sequences_per_class, total=total_sequences, rng=rng)
        n = write_jsonl((s.to_dict() for s in seqs), o.ensure_parent(out))
        console.print(f"wrote {n} sequences to {out} in {time.perf_counter() - started:.1f} s")
        notes = [] if declared or corpus.labels is None else [LABELS_FROM_DATA]
        report = build_report(ledger, command="keyphrases", notes=notes, budget=budget,
                              parameters=seeder_parameters(seeder, corpus.labels is not None))
        print_report(report, console)
        console.print(f"privacy report: {write_report(report, report_path(out))}")
