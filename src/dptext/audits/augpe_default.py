"""The audit of Aug-PE as ``dptext augpe`` runs it without ``--labels``.

``audit_augpe_default`` calls ``AugPEGenerator.fit`` with a ``RunContext`` as the run lifecycle
does: the DP label set is released first (``label_set_share`` of the budget), then the T
vote histograms, each saved in the run folder before use and the run's ledger rebuilt
from those files; the claim is that ledger's composition. What the auditor chooses (the
guarantee holds for any public LLM and embedder, which never see a private document
except the embedder's vote counting):

* the LLM is a ``RecordingBackend`` that writes a fresh short text for every prompt, and
  the embedder is ``embed.hashing.HashEmbedder`` (a unit vector from a hash of the
  text): thousands of runs in minutes, no model to load;
* plain AugPE (``random_words=0``): no DP vocabulary (the ``vocabulary`` row audits it),
  T = 2 iterations, 4 texts a class (~50 ms of a fit per class);
* ε = 3, δ = 0.2: half the run's δ is the label set's threshold δ, which a document of
  an existing class never uses, so the count and votes are audited against the whole δ;
  at a large ε that slack costs fewest samples (at ε = 1, 300 samples a side missed half
  the noise; at ε = 3 and 1,000 a side it is caught, docs/reliability.md).

D has ``classes`` labels of ``per_class_docs`` documents each; D' adds, to every class,
one canary document of that class. The classes are disjoint partitions of every release
(the label set's counts, each iteration's vote histograms), so each class of a run is
one draw of the neighbouring pair (D, D + its canary): K classes give K samples a side.
The statistic is the likelihood ratio of the class's releases: its noisy label count and
its T noisy vote histograms, Σ ⟨y − m, Δ⟩/σ², where m is D's exact count or votes and Δ
the canary's one count or vote, computed by the auditor from the saved (public)
populations and the known documents. ``half-noise`` halves every stage's noise (label set
and votes); ``unbounded`` puts the canary in D' twice.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np

from dptext.audits.common import (
    RatioSamples,
    canary_copies,
    quiet,
)
from dptext.audits.labels import _broken_label_set
from dptext.corpus import Corpus
from dptext.embed.hashing import HashEmbedder
from dptext.privacy.auditing import AuditRow, broken_noise
from dptext.privacy.labels import LABEL_SET


def _answer(prompt) -> str:
    """The auditor's public LLM: a new text per prompt (its public sampling seed)."""
    return f"synthetic note {prompt.params.seed}"


def _corpora(classes: int, per_class: int, copies: int):
    labels = [f"c{k}" for k in range(classes)]
    texts = [f"document {j} of {c}" for c in labels for j in range(per_class)]
    d = Corpus(tuple(texts), tuple(c for c in labels for _ in range(per_class)))
    canaries = [f"canary of {c}" for c in labels]
    d_prime = Corpus((*texts, *canaries * copies), (*d.labels, *labels * copies))
    return labels, d, d_prime, canaries


def augpe_default_ratios(epsilon: float = 3.0, delta: float = 0.2, iterations: int = 2, *,
                         runs: int = 10, classes: int = 100, per_class_docs: int = 20,
                         population: int = 4, broken: str = "none") -> RatioSamples:
    """``AugPEGenerator.fit`` (undeclared labels) on D and D' (above), ``runs`` fits a side:
    every class's likelihood ratio."""
    from dptext.generators.augpe import AugPEConfig
    from dptext.generators.augpe.generator import AugPEGenerator

    labels, d, d_prime, canaries = _corpora(classes, per_class_docs, canary_copies(broken))
    embedder = HashEmbedder(dim_=8)
    gen = AugPEGenerator(epsilon=epsilon, delta=delta, config=AugPEConfig(
        per_class=population, iterations=iterations, random_words=0, embedder=embedder))
    private = {c: embedder.encode([t for t, lab in zip(d.texts, d.labels, strict=True)
                                   if lab == c]) for c in labels}
    canary = dict(zip(labels, embedder.encode(canaries), strict=True))
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    ledger = None
    half = "half-noise" if broken == "half-noise" else "none"
    with broken_noise(half), _broken_label_set(half), quiet(), \
            tempfile.TemporaryDirectory() as tmp:
        for name, corpus in (("D", d), ("D'", d_prime)):
            for run in range(runs):
                folder = Path(tmp) / f"{name}{run}"
                ledger = _fit(gen, corpus, folder, run)
                samples[name].extend(_likelihood_ratios(folder, ledger, embedder, labels,
                                                        private, canary, per_class_docs))
    # one count and one vote per iteration, each moved by 1
    shift = sum(1 / r.noise_scale**2 for r in _one_partition(ledger))
    return RatioSamples(np.array(samples["D"]), np.array(samples["D'"]), ledger, shift)


def audit_augpe_default(epsilon: float = 3.0, delta: float = 0.2, iterations: int = 2, *,
                        runs: int = 10, confidence: float = 0.95,
                        broken: str = "none") -> AuditRow:
    """The DP test of ``augpe_default_ratios`` against the run ledger's (ε, δ)."""
    started = time.perf_counter()
    return augpe_default_ratios(epsilon, delta, iterations, runs=runs, broken=broken).audit(
        f"Aug-PE as the CLI runs it (undeclared labels: label set + T = "
        f"{iterations} vote releases, AugPEGenerator.fit)",
        "likelihood ratio of a class's noisy label count and its T vote histograms",
        confidence=confidence, started=started, broken=broken)


def _one_partition(ledger) -> list:
    """The label set's release and one class's release of each iteration."""
    first = {}
    for r in ledger.releases:
        first.setdefault(r.name, r)
    return list(first.values())


def _fit(gen, corpus: Corpus, folder: Path, run: int):
    """One run of the generator's fit, as the run lifecycle makes it; returns the run's ledger."""
    from dptext.generators.base import RunContext
    from dptext.llm.recording import RecordingBackend
    from dptext.privacy import PrivacyLedger

    folder.mkdir()
    ctx = RunContext(dir=folder, ledger=PrivacyLedger(), save_ledger=lambda: None,
                     llm=RecordingBackend(answer=_answer), concurrency=1, progress=False,
                     llm_seed=run)
    gen.fit(corpus, ctx)
    return ctx.ledger


def _likelihood_ratios(folder: Path, ledger, embedder, labels: list[str], private: dict,
                       canary: dict, per_class_docs: int) -> list[float]:
    """Per class, from the released values in the run folder (label set, noisy votes) and
    the public populations: the Gaussian likelihood ratio of the canary's presence."""
    from dptext.generators.augpe import RunState
    from dptext.generators.augpe.privacy import nearest_votes, vote_stage

    state = RunState(folder)
    counts = json.loads((folder / "label_set.json").read_text())["label_set"]["counts"]["label"]
    released = list(counts)
    sigma = {r.name: r.noise_scale for r in ledger.releases}
    stat = {c: (counts[c] - per_class_docs) / sigma[LABEL_SET] ** 2 for c in released}
    t = 1
    while (votes := state.votes(t)) is not None:
        pop = state.population(t - 1)
        for c in released:
            syn = embedder.encode([text for text, lab in pop if lab == c])
            exact = nearest_votes(private[c], syn)
            shift = nearest_votes(canary[c][None], syn)  # the canary's one vote
            stat[c] += float((np.asarray(votes[c]) - exact) @ shift) / sigma[vote_stage(t)] ** 2
        t += 1
    return [stat.get(c, 0.0) for c in labels]  # a class not released: nothing of it shows
