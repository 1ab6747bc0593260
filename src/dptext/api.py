"""``dptext.synthesize``: the main job from Python, with the same run folder, resume,
budget and release folder as ``dptext generate``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dptext.corpus import Corpus
from dptext.generators.registry import generator_class, make_generator
from dptext.run import DEFAULT_LLM, BudgetOptions, CorpusSource, RunResult, run


def synthesize(corpus: str | Path | Corpus, method: str = "kps", *, out: str | Path,
               epsilon: float | None = None, delta: float = 1e-5, llm: Any = DEFAULT_LLM,
               resume: bool = False, text_column: str = "text",
               label_column: str | None = None, label_sep: str | None = None,
               budget_total: float | None = None,
               allow_budget_overrun: bool = False, dataset_id: str | None = None,
               concurrency: int = 4, cache: bool = True, progress: bool = False,
               seed: int | None = None, say: Callable[[str], None] | None = None,
               engine: str | None = None, ray_address: str | None = None,
               **options: Any) -> RunResult:
    """Write a DP synthetic corpus from ``corpus`` (a path, ``demo:NAME`` or a ``Corpus``).

    ``epsilon``: the run's total ε, every release inside it; None: ``DEFAULT_EPSILON`` (6),
    as ``dptext generate`` without ``--epsilon`` (DP-KPS's per-stage ``epsilon_vocab=`` /
    ``epsilon_kde=`` instead of it: ``generators.kps.options.budget_form``).
    ``method``: kps (DP-KPS, the default), augpe, pate or dpft (``generators.registry``);
    ``options``: that generator's options (e.g. ``labels=("a", "b")``, ``per_class=50``,
    ``document_type="news article"``; see its class). ``llm``: a backend spec such as
    ``local:qwen2.5-1.5b`` or an ``LLMBackend``. The run is checked against and charged to
    the corpus's persistent budget before its first release; ``resume=True`` continues an
    interrupted run from ``<out>.run/`` without new noise. Returns the documents, the
    privacy report, the ledger and where they were written (``out``, its
    ``.privacy.json`` and the release folder ``<out stem>.release/``). ``engine="ray"``
    runs the corpus-wide counts on a Ray cluster (``ray_address``: ``auto``, ``local`` or
    an address; docs/scale-out.md); the releases and the guarantee are the same.
    ``label_sep``: the label column holds several labels per document, separated by it
    (docs/multi-label.md; kps and dpft; kps's ``max_labels_per_doc`` caps them).
    ``seed`` fixes the run's public randomness, that of a generator with a public seed of
    its own (PATE's candidate prompts and folds) included, as ``--seed`` does.
    """
    if seed is not None and "seed" in generator_class(method).option_names():
        options["seed"] = seed  # a generator's own public seed, as the CLI gives it
    if epsilon is not None:  # else the generator's default: DEFAULT_EPSILON, one for all
        options["epsilon"] = epsilon
    generator = make_generator(method, delta=delta, **options)
    return run(generator, CorpusSource(corpus, text_column=text_column,
                                       label_column=label_column, label_sep=label_sep), out,
               llm=llm, resume=resume,
               budget=BudgetOptions(budget_total, allow_budget_overrun, dataset_id),
               concurrency=concurrency, cache=cache, progress=progress, seed=seed,
               say=say or (lambda msg: None), engine=engine, ray_address=ray_address)
