"""``dptext evaluate`` (utility, fidelity, leakage, membership, fairness, coherence,
coreference -> report) and
``dptext filter`` (rank or drop synthetic documents by their NLI coherence score)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import typer
from rich.markup import escape

from dptext.cli.app import app, console
from dptext.cli.options import ADVANCED
from dptext.cli.options import INPUT as IN
from dptext.cli.options import OUTPUT as OUT
from dptext.corpus import InputError


def _split(s: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (s or "").split(",") if p.strip())


def _read_private(path: str, text_column: str, label_column: str, label_sep: str | None):
    """The private corpus, labelled if it has the label column (the ceiling needs labels;
    the leakage checks do not)."""
    from dptext.evaluate.data import read_real

    try:
        return read_real(path, text_column=text_column, label_column=label_column,
                         label_sep=label_sep)
    except InputError as e:
        if f"no column {label_column!r}" not in str(e):
            raise
        console.print(f"[yellow]note:[/yellow] {path} has no {label_column!r} column: "
                      "no utility ceiling, leakage checks only")
        return read_real(path, text_column=text_column, label_column=None)


CHECKS = "Checks"  # evaluate's own help panel


@app.command()
def evaluate(
    synthetic: Path = typer.Option(..., help="Synthetic corpus or keyphrase file (JSONL).",
                                   rich_help_panel=IN),
    real_test: str | None = typer.Option(
        None, help="Real labelled test documents (CSV/JSONL/Parquet/folder or "
                   "demo:NAME/test); not needed with --coref-gold alone.",
        rich_help_panel=IN),
    out: Path = typer.Option(..., help="Folder for metrics.json and report.html.",
                             rich_help_panel=OUT),
    real_unlabeled: str | None = typer.Option(
        None, help="Unlabelled client documents for Deep CORAL (never the test set).",
        rich_help_panel=IN),
    private: str | None = typer.Option(
        None, help="The private training corpus: the utility ceiling and leakage checks.",
        rich_help_panel=IN),
    group_columns: str | None = typer.Option(
        None, help="Comma-separated columns of the test file holding subgroups (fairness).",
        rich_help_panel=IN),
    text_column: str = typer.Option("text", help="Text column of the real files.",
                                    rich_help_panel=IN),
    label_column: str = typer.Option("label", help="Label column of the real files.",
                                     rich_help_panel=IN),
    label_sep: str | None = typer.Option(
        None, help="Separator of multi-label labels in the real files, e.g. '|'.",
        rich_help_panel=IN),
    classifiers: str = typer.Option("tfidf,mlp", help="Comma-separated: tfidf, mlp, finetune "
                                                      "(full encoder fine-tuning, slow).",
                                    rich_help_panel=CHECKS),
    encoder: str = typer.Option("minilm", help="Sentence encoder (dptext.embed name).",
                                rich_help_panel=ADVANCED),
    coral_weight: float = typer.Option(1.0, help="Deep CORAL loss weight (0 = off).",
                                       rich_help_panel=ADVANCED),
    canaries: Path | None = typer.Option(
        None, help="Canaries planted before generation: text (one a line) or JSONL "
                   "{text, secret}.",
        rich_help_panel=IN),
    leakage: bool = typer.Option(True, help="n-gram and entity leakage (needs --private).",
                                 rich_help_panel=CHECKS),
    ner: bool = typer.Option(True, help="Entity leakage (named entities of the private data).",
                             rich_help_panel=CHECKS),
    ner_backend: str = typer.Option("spacy", help="spacy (en_core_web_sm) or presidio (PII "
                                                  "recognisers on the same spaCy model).",
                                    rich_help_panel=ADVANCED),
    ner_max_docs: int = typer.Option(2000, help="Private documents scanned by NER at most.",
                                     rich_help_panel=ADVANCED),
    fidelity: bool = typer.Option(True, help="Embedding distance, diversity, t-SNE map.",
                                  rich_help_panel=CHECKS),
    membership: bool = typer.Option(
        True, help="Membership-inference attacks: private documents against the real test "
                   "set (needs --private).",
        rich_help_panel=CHECKS),
    coherence: bool = typer.Option(True, help="NLI coherence of a sample of synthetic docs.",
                                   rich_help_panel=CHECKS),
    coherence_max_docs: int = typer.Option(100, help="Synthetic documents scored by NLI.",
                                           rich_help_panel=ADVANCED),
    coref_gold: str | None = typer.Option(
        None, help="Gold coreference documents (folder or .tar.xz of LitBank TSV .txt+.ann "
                   "or CoNLL-2012 .conll; demo:litbank): silver-coreference utility.",
        rich_help_panel=IN),
    coref_max_tokens: int = typer.Option(1000, help="Coreference: tokens per document, at "
                                                    "most.",
                                         rich_help_panel=ADVANCED),
    coref_max_docs: int = typer.Option(200, help="Coreference: synthetic (and private) "
                                                 "documents annotated, at most.",
                                       rich_help_panel=ADVANCED),
    seed: int = typer.Option(0, help="Seed of the classifiers and samples.",
                             rich_help_panel=ADVANCED),
    publish_evaluation: bool = typer.Option(
        False, "--publish-evaluation",
        help="Also add the headline figures to the synthetic file's release folder (its "
             "evaluation.json and dataset card), marked as NOT covered by the privacy "
             "guarantee: they read real data, the private corpus included. Without it the "
             "evaluation stays in --out, with you.",
        rich_help_panel=OUT),
) -> None:
    """Judge a synthetic corpus: utility, privacy, fairness.

    Writes metrics.json and report.html.

    The figures read real data, so they stay in --out and are not printed (a terminal
    may be logged): read them in report.html.
    """
    from dptext.evaluate.coref import CorefConfig, read_gold
    from dptext.evaluate.data import (
        guarantee,
        read_privacy_report,
        read_real,
        read_synthetic,
    )
    from dptext.evaluate.leakage import read_canaries
    from dptext.evaluate.suite import EvalConfig
    from dptext.evaluate.suite import evaluate as run
    from dptext.evaluate.utility import CLASSIFIERS
    from dptext.run.evaluation import save_evaluation

    try:
        groups = _split(group_columns)
        clfs = _split(classifiers)
        bad = [c for c in clfs if c not in CLASSIFIERS]
        if bad:
            raise InputError(f"unknown classifier(s) {', '.join(bad)}; use "
                             f"{', '.join(CLASSIFIERS)}")
        if real_test is None and coref_gold is None:
            raise InputError("give --real-test (labelled test documents) or --coref-gold "
                             "(gold coreference documents), or both")
        if real_test is None and groups:
            raise InputError("--group-columns needs --real-test (the groups are its columns)")
        syn = read_synthetic(synthetic)
        test = None if real_test is None else read_real(
            real_test, text_column=text_column, label_column=label_column,
            label_sep=label_sep, extra_columns=groups)
        gold = None if coref_gold is None else read_gold(coref_gold)
        prv = None if private is None else _read_private(private, text_column, label_column,
                                                         label_sep)
        unl = None if real_unlabeled is None else read_real(
            real_unlabeled, text_column=text_column, label_column=None)
        cans = tuple(read_canaries(canaries)) if canaries else ()
        if ner_backend not in ("spacy", "presidio"):
            raise InputError(f"--ner-backend must be spacy or presidio, not {ner_backend!r}")
        cfg = EvalConfig(classifiers=clfs, encoder=encoder, coral_weight=coral_weight,
                         seed=seed, leakage=leakage, ner=ner, ner_max_docs=ner_max_docs,
                         ner_backend=ner_backend,
                         canaries=cans, fidelity=fidelity, coherence=coherence,
                         coherence_max_docs=coherence_max_docs, group_columns=groups,
                         membership=membership,
                         coref=CorefConfig(max_tokens=coref_max_tokens,
                                           max_docs=coref_max_docs, seed=seed))
        with console.status("evaluating") as status:
            metrics = run(syn, test, private=prv, unlabeled=unl,
                          privacy=guarantee(read_privacy_report(synthetic)), cfg=cfg,
                          progress=lambda msg: status.update(msg), coref_gold=gold)
        saved = save_evaluation(metrics, out, synthetic, publish=publish_evaluation)
    except InputError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        raise typer.Exit(2) from None
    console.print(f"wrote {saved.metrics} and {saved.report} (figures computed on real data: "
                  "for you, not for the recipient; not printed here)")
    if saved.published:
        console.print(f"published the headline figures in {saved.release / 'README.md'}, "
                      "marked as not covered by the privacy guarantee")
    elif publish_evaluation:
        console.print("[yellow]note:[/yellow] nothing published: the synthetic file has no "
                      "release folder")
    elif saved.release is not None:
        console.print(f"the release folder {saved.release} is unchanged (add "
                      "--publish-evaluation to publish the headline figures in its card)")


@app.command("filter")
def filter_cmd(
    input: Path = typer.Option(..., "--input", help="Synthetic corpus (JSONL with 'text')."),
    out: Path = typer.Option(..., help="Filtered JSONL (each record gains 'nli_score')."),
    min_score: float | None = typer.Option(
        None, help="Drop documents whose NLI score is below this (0..1)."),
    keep_fraction: float | None = typer.Option(
        None, help="Keep this share of the documents, the most coherent first."),
    rank: bool = typer.Option(False, help="Write the documents best first (default: input "
                                          "order)."),
) -> None:
    """Rank or drop synthetic documents by NLI coherence.

    The score is the share of consecutive sentence pairs without contradiction.
    Filtering is post-processing: the privacy guarantee is unchanged, and
    privacy.json is copied beside the output.
    """
    import numpy as np

    from dptext.evaluate.coherence import nli_scores, rank_and_filter
    from dptext.evaluate.data import read_synthetic

    try:
        if keep_fraction is not None and not 0 < keep_fraction <= 1:
            raise InputError("--keep-fraction must be in (0, 1]")
        syn = read_synthetic(input)
        if syn.keyphrase_only:
            raise InputError(f"{input}: a keyphrase file has no text to score")
    except InputError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        raise typer.Exit(2) from None
    records = [json.loads(line) for line in input.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    with console.status(f"scoring {len(records)} documents"):
        scores = nli_scores(list(syn.texts))
    keep = rank_and_filter(syn.texts, scores, min_score=min_score, keep_fraction=keep_fraction)
    if not rank:
        keep = np.sort(keep)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for i in keep:
            rec = dict(records[i])
            rec["nli_score"] = round(float(scores[i]), 4)
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    for name in (input.stem + ".privacy.json", "privacy.json"):
        src = input.with_name(name)
        if src.exists() and src.resolve() != out.with_name(name).resolve():
            dst = out.with_name(out.stem + ".privacy.json" if name != "privacy.json"
                                else "privacy.json")
            shutil.copyfile(src, dst)
    console.print(f"kept {len(keep)} of {len(records)} documents "
                  f"(mean NLI score {float(np.mean(scores)):.3f}); wrote {out}")
