"""The run lifecycle: one way to run every generator (``dptext.synthesize`` and every CLI
command that writes documents call it).

Order of a new run: read the corpus; ``plan`` → the budget is checked and charged (the
run is refused here, before any model is loaded or release made); ``fit`` → every release,
saved with the ledger before the documents are made; ``documents`` → post-processing; the
output JSONL, the privacy report and the release folder. ``resume=True`` continues a run
from its folder: saved releases are reused (no new noise), journaled prompts are not
repeated, and the private corpus is read again only while a release is still to be made.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dptext.compute import use_engine
from dptext.corpus import Corpus, read_corpus, write_jsonl
from dptext.generators.base import CorpusInfo, Documents, RunContext, refuse_multilabel
from dptext.llm.models import DEFAULT_LOCAL_MODEL
from dptext.privacy import PrivacyLedger
from dptext.privacy.budget import settle_run
from dptext.privacy_report import build_report, mark_not_private, report_path, write_report
from dptext.run import budget as run_budget
from dptext.run.folder import FITTED, RunFolder
from dptext.run.release import write_release

DEFAULT_LLM = f"local:{DEFAULT_LOCAL_MODEL}"


@dataclass(frozen=True)
class CorpusSource:
    """Where the private corpus comes from: a path (any format ``read_corpus`` reads, or
    ``demo:NAME``) with its reading options, or a ``Corpus`` already in memory."""

    input: str | Path | Corpus
    text_column: str = "text"
    label_column: str | None = None
    format: str | None = None
    encoding: str = "utf-8"
    skip_invalid: bool = False
    label_sep: str | None = None  # several labels per document (a multi-label corpus)

    def read(self, extra_columns: tuple[str, ...] = ()) -> Corpus:
        if isinstance(self.input, Corpus):
            return self.input
        return read_corpus(self.input, text_column=self.text_column,
                           label_column=self.label_column, fmt=self.format,
                           encoding=self.encoding, skip_invalid=self.skip_invalid,
                           extra_columns=extra_columns, label_sep=self.label_sep)

    def config(self) -> dict[str, Any]:
        """What resume compares (an in-memory corpus by its source name only)."""
        src = self.input.source if isinstance(self.input, Corpus) else str(self.input)
        return {"input": src, "text_column": self.text_column,
                "label_column": self.label_column, "format": self.format,
                "skip_invalid": self.skip_invalid,
                **({"label_sep": self.label_sep} if self.label_sep is not None else {})}

    @property
    def name(self) -> str | None:
        return None if isinstance(self.input, Corpus) else str(self.input)


@dataclass
class RunResult:
    documents: list[dict[str, Any]]
    report: dict[str, Any]
    ledger: PrivacyLedger
    out: Path
    report_path: Path
    release_dir: Path
    summary: list[str]
    stats: Any = None


def _backend(llm, llm_options: dict | None):
    """(backend, owned): a spec string is made here (and closed by the run lifecycle)."""
    if llm is None or not isinstance(llm, str):
        return llm, False
    from dptext.llm import LLMError, make_backend

    try:
        return make_backend(llm, **(llm_options or {})), True
    except LLMError as e:
        raise ValueError(str(e)) from None


def run(generator, source: CorpusSource, out: str | Path, *, llm=DEFAULT_LLM,
        llm_options: dict | None = None, resume: bool = False,
        budget: run_budget.BudgetOptions | None = None, concurrency: int = 4,
        cache: bool | Any = True, progress: bool = True, seed: int | None = None,
        say: Callable[[str], None] = lambda msg: None,
        announce: Callable[[Corpus], None] | None = None, engine: str | None = None,
        ray_address: str | None = None) -> RunResult:
    """Run (or with ``resume``, continue) ``generator`` on ``source``; write ``out``
    (JSONL), its privacy report and its release folder. ``cache``: reuse completions of
    identical prompts across runs (True: ``$DPTEXT_CACHE``; or a ``PromptCache``).
    ``engine``: where the corpus-wide counts run (``dptext.compute``: local, or ray at
    ``ray_address``; None: the current engine, local unless a ``use_engine`` block says
    otherwise); the releases, their noise and the ledger are the same."""
    with use_engine(engine, ray_address):
        return _run(generator, source, out, llm=llm, llm_options=llm_options, resume=resume,
                    budget=budget, concurrency=concurrency, cache=cache, progress=progress,
                    seed=seed, say=say, announce=announce)


def _run(generator, source: CorpusSource, out: str | Path, *, llm, llm_options, resume,
         budget, concurrency, cache, progress, seed, say, announce) -> RunResult:
    from dptext.llm import Journal, PromptCache, RunStats

    out = Path(out)
    generator.validate()
    budget = budget or run_budget.BudgetOptions()
    folder = RunFolder(out, generator.name)
    config = {**source.config(), "method": generator.name,
              "release": generator.release_options(), "seed": seed}
    saved = None
    if folder.started():
        if not resume:
            raise ValueError(f"{folder.dir} exists from an earlier run: pass --resume to "
                             "continue it, or remove it to start a new one")
        saved = folder.load()
        if seed is None:
            config["seed"] = saved["config"].get("seed")
        changed = folder.changed(saved, config)
        if changed:
            raise ValueError(f"--resume: {', '.join(changed)} differ from the interrupted "
                             f"run in {folder.dir}; use the same options and data, or remove "
                             "that folder to start a new run (new DP noise, charged again)")
        if saved["status"] != FITTED and not getattr(generator, "resumable_fit", True):
            raise ValueError(f"{folder.dir}: the run stopped while making its releases "
                             "(they are charged to the corpus); remove the folder to start a "
                             "new run")
        say(f"resuming {folder.dir}: saved releases are reused, no new DP noise")
    elif folder.leftovers():
        raise ValueError(f"{folder.dir} holds no started run (an earlier run stopped before "
                         "its first release); remove it to start a new run")

    backend, owned = _backend(llm if generator.uses_llm else None, llm_options)
    ledger = folder.ledger(generator.epsilon if generator.private else None)
    ctx = RunContext(dir=folder.generator_dir, ledger=ledger,
                     save_ledger=lambda: folder.save_ledger(ctx.ledger), llm=backend,
                     journal=Journal(folder.journal),
                     cache=(cache if not isinstance(cache, bool)
                            else PromptCache.default() if cache else None),
                     concurrency=concurrency, progress=progress, seed=seed,
                     say=say, stats=RunStats())
    try:
        if saved is None or saved["status"] != FITTED:
            saved = _fit(generator, source, folder, ctx, config, saved, budget, say,
                         announce)
        state = folder.state()
        ctx.llm_seed = saved["llm_seed"] or 0
        started = time.perf_counter()
        docs: Documents = generator.write_documents(state, ctx)
    finally:
        if owned:
            backend.close()
    elapsed = time.perf_counter() - started
    return _write_outputs(generator, out, docs, ctx, saved, elapsed)


def _fit(generator, source: CorpusSource, folder: RunFolder, ctx: RunContext, config: dict,
         saved: dict | None, budget: run_budget.BudgetOptions, say, announce) -> dict:
    """Read the corpus, charge the plan (a new run), make every release and save them."""
    corpus = source.read(generator.columns())
    (announce or (lambda c: say(f"read {c.source}")))(corpus)
    refuse_multilabel(generator, corpus)
    generator.check(corpus)
    command = f"generate --method {generator.name}"
    charged = None  # the corpus's ledger, when this process charged the plan
    info = CorpusInfo(labelled=corpus.labelled, multilabel=corpus.multilabel)
    parameters = {"method": generator.name, **config["release"]}
    if saved is None:
        charged, run_id = run_budget.charge(
            corpus, budget, generator.plan(info), command=command, parameters=parameters,
            input=source.name, say=say)
        llm_seed = (None if not generator.uses_llm else config["seed"]
                    if config["seed"] is not None else secrets.randbits(31))
        saved = folder.start(config, llm_seed=llm_seed,
                             budget={"run_id": run_id, "dataset_id": charged.dataset_id,
                                     "entry": charged.report_entry()})
    elif saved["budget"].get("settled"):  # it failed before: charge its plan again
        charged = run_budget.recharge(corpus, budget, saved["budget"], generator.plan(info),
                                      command=command, parameters=parameters, say=say)
        saved = folder.set_budget(saved, settled=False)
    ctx.llm_seed = saved["llm_seed"] or 0
    if charged is None:  # a resumed run: the ledger it was charged to (charged again there
        # when this machine's ledger lacks it)
        charged = run_budget.resumed(corpus, budget, saved["budget"], generator.plan(info),
                                     command=command, parameters=parameters, say=say)
    try:
        state = generator.fit(corpus, ctx)
    except Exception:
        if generator.private:
            _settle_failed(generator, ctx, folder, saved, charged, say)
        raise
    folder.save_ledger(ctx.ledger)
    folder.save_state(state)
    if generator.private:  # the releases made replace the charged plan (never more)
        settle_run(charged, saved["budget"]["run_id"], ctx.ledger.releases)
    del corpus  # nothing below touches private data
    folder.mark_fitted(saved)
    return saved


def _settle_failed(generator, ctx: RunContext, folder: RunFolder, saved: dict,
                   charged, say) -> None:
    """A fit that failed: the corpus's ledger keeps only the releases it made (resuming it
    charges its plan again); a run folder that holds no release is removed, so the same
    command starts afresh."""
    made = generator.released(ctx)
    try:
        settled = run_budget.settle_failed(charged, saved["budget"]["run_id"], made, say)
    except (OSError, ValueError) as e:  # the failure, not this, is what the user must see
        say(f"the run's whole plan stays charged: its ledger could not be settled ({e})")
        return
    if settled and made:
        folder.set_budget(saved, settled=True)
    elif settled:
        folder.discard()


def _write_outputs(generator, out: Path, docs: Documents, ctx: RunContext, saved: dict,
                   elapsed: float) -> RunResult:
    out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(docs.records, out)
    report = build_report(ctx.ledger, command=f"generate --method {generator.name}",
                          parameters={"method": generator.name, **docs.parameters},
                          notes=docs.notes)
    if docs.not_private:
        mark_not_private(report, docs.not_private)
    report["budget"] = saved["budget"]["entry"]
    path = write_report(report, report_path(out))
    release = write_release(out, docs.records, report, method=generator.name,
                            document_type=docs.document_type)
    summary = [f"wrote {len(docs.records)} documents to {out} in {elapsed:.0f} s",
               *docs.summary]
    return RunResult(docs.records, report, ctx.ledger, out, path, release, summary, ctx.stats)
