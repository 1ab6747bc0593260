"""``dptext keyphrases``: a private corpus in, DP keyphrase sequences and a privacy report out."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from dptext.cli import options as o
from dptext.cli.app import app, console


@app.command()
@o.seeder_options
def keyphrases(
    input: o.InputPath,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output JSONL of sequences.",
                                      rich_help_panel=o.OUTPUT)],
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    label_sep: o.LabelSep = None,
    format: o.Format = None,
    encoding: o.Encoding = "utf-8",
    skip_invalid: o.SkipInvalid = False,
    labels: o.Labels = None,
    sequences_per_class: Annotated[int | None, typer.Option(
        help="Sequences to draw per class (default 1000 when --total-sequences is not given).",
        rich_help_panel=o.OUTPUT)] = None,
    total_sequences: Annotated[int | None, typer.Option(
        help="Total sequences, split equally or by the DP label histogram (--epsilon-labels).",
        rich_help_panel=o.OUTPUT)] = None,
    seed: o.Seed = None,
    budget_total: o.BudgetTotal = None,
    allow_budget_overrun: o.AllowOverrun = False,
    dataset_id: o.DatasetId = None,
    engine: o.Engine = "local",
    ray_address: o.RayAddress = None,
    kps: dict | None = None,
) -> None:
    """Fit DP-KPS and write DP keyphrase sequences (JSONL).

    One JSON line per sequence, and the run's privacy report beside them.
    """
    from dptext.compute import use_engine
    from dptext.corpus import read_corpus, write_jsonl
    from dptext.privacy_report import (
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
        params = dict(**o.seeder_kwargs(kps, multilabel=label_sep is not None),
                      labels=declared)
        seeder = KeyphraseSeeder(**params)
        check_seeder(seeder)  # a bad option or name is refused before anything is charged
        corpus = read_corpus(input, text_column=text_column, label_column=label_column,
                             fmt=format, encoding=encoding, skip_invalid=skip_invalid,
                             label_sep=label_sep)
        o.announce_corpus(corpus)
        # the whole plan is checked and charged before the first release; once fitted,
        # the releases actually made replace it (never costing more), and a fit that
        # fails is charged only the releases it made
        say = console.print
        budget, run_id = run_budget.charge(
            corpus, run_budget.BudgetOptions(budget_total, allow_budget_overrun, dataset_id),
            seeder.planned_releases(corpus.labelled, corpus.multilabel), command="keyphrases",
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
        notes = [] if (declared and not corpus.multilabel) or not corpus.labelled \
            else [LABELS_FROM_DATA]
        report = build_report(ledger, command="keyphrases", notes=notes, budget=budget,
                              parameters=seeder_parameters(seeder, corpus.labelled,
                                                           corpus.multilabel))
        print_report(report, console)
        console.print(f"privacy report: {write_report(report, report_path(out))}")
