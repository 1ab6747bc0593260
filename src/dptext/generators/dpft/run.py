"""One ``dpft`` run end to end: the function behind ``dptext dpft`` (and the hook for
``dptext generate --method dpft``).

Run folder ``<out>.run/dpft/``: ``plan.json`` (the released code histogram, the ledger
and the training plan, written before the first step), ``train_state.pt`` (checkpoint:
weights, optimiser moments, step count), ``model/`` (the adapter once trained) and
``generated.jsonl`` (documents as they are written). Nothing there or in the outputs holds
a sampling seed, a generator state or a loss. Re-running the same command continues from
there without new DP noise (and with fresh secret sampling randomness).

Budget: before the first release of a new run, ``charge`` receives the whole plan (the
run's (ε, δ) as one block; ε = ∞ as a run without DP), so a killed run is still charged;
a resumed run charges nothing. ``charge`` may return a callable that, once the run is
trained, replaces the block by the releases actually made (``budget.settle_run``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dptext.corpus import Corpus, write_jsonl
from dptext.generators.dpft.generator import DPFineTuneGenerator
from dptext.generators.dpft.sample import PPLMConfig, SamplingConfig
from dptext.generators.dpft.train import DPFTConfig
from dptext.privacy import Release
from dptext.privacy.budget import planned_run
from dptext.reporting import build_report, report_path, write_report

PLAN_NAME = "dpft run (control-code histogram + DP-SGD), charged before its first release"


def run_dir_for(out: Path) -> Path:
    return out.with_name(out.name + ".run") / "dpft"


def run_dpft(corpus: Corpus, out: str | Path, *, epsilon: float, delta: float = 1e-5,
             n_documents: int | None = None, model: str | None = None,
             config: DPFTConfig | None = None, sampling: SamplingConfig | None = None,
             pplm: bool = False, pplm_config: PPLMConfig | None = None,
             metadata_fields: Sequence[str] = (),
             code_values: dict[str, Sequence[str]] | None = None, seed: int | None = None,
             progress: bool = True, chunk: int = 32, base=None,
             charge: Callable[[list[Release]], Callable[[list[Release]], Any] | None]
             | None = None) -> dict[str, Any]:
    """Fit (or resume), generate ``n_documents`` (default: as many as the DP estimate
    of the corpus size), write ``out`` (JSONL) and its privacy report; return the report.
    ``code_values``: the declared public values of each code field ("label" for the
    labels); the others are released as the DP label set. ``charge``: the corpus's
    persistent budget, called with the plan before anything else
    (``cli.options.charge_plan``); it raises to refuse the run."""
    out = Path(out)
    run_dir = run_dir_for(out)
    model_dir = run_dir / "model"
    if (model_dir / "dpft.json").exists():
        gen = DPFineTuneGenerator.load(model_dir, base=base)
    else:
        settle = None
        if charge is not None and not (run_dir / "plan.json").exists():
            settle = charge([planned_run(PLAN_NAME, epsilon, delta)])  # before any model
        gen = DPFineTuneGenerator(epsilon, delta, model=model, config=config,
                                  metadata_fields=metadata_fields, code_values=code_values,
                                  checkpoint_dir=run_dir,
                                  seed=seed, progress=progress).fit(corpus, base=base)
        if settle is not None and gen.private:
            settle(gen.ledger_.releases)  # the releases made, in place of the block
        gen.save(model_dir)
    del corpus  # generation is post-processing of the DP model and the released codes
    n = n_documents or round(gen.code_distribution_.total())
    journal = run_dir / "generated.jsonl"
    done: list[dict] = []
    if journal.exists():
        done = [json.loads(x) for x in journal.read_text(encoding="utf-8").splitlines() if x]
    rng = np.random.default_rng(seed)
    for _ in range(len(done) // chunk):  # skip the randomness of finished chunks
        rng.integers(2**31)
    with journal.open("a", encoding="utf-8") as f:
        while len(done) < n:
            k = min(chunk, n - len(done))
            step_rng = np.random.default_rng(int(rng.integers(2**31)))
            new = gen.generate(k, sampling=sampling, pplm=pplm, pplm_config=pplm_config,
                               rng=step_rng)
            for rec in new:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            f.flush()
            done.extend(new)
    write_jsonl(done[:n], out)
    params = {"documents": n, "pplm": pplm, "model": str(model or "smollm2-135m"),
              "sampling": (sampling or SamplingConfig()).__dict__}
    report = gen.privacy_report("generate --method dpft", params)
    write_report(report, report_path(out))
    return report


__all__ = ["build_report", "run_dir_for", "run_dpft"]
