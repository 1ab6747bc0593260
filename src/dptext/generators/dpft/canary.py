"""Canary exposure (Carlini et al. 2019; the fine-tuning paper's table 4).

Canaries are PII-like sentences ending in a random 4-digit secret. Each is inserted
1, 10 or 100 times into the training corpus (as whole documents with a control code);
after fine-tuning, every one of the 10,000 possible secrets is scored by its
log-likelihood after the canary's prefix, and the canary's **rank** (1 = the model
prefers the true secret to every other one) and **exposure** = log2(10,000) − log2(rank)
are reported. The candidate set is the whole 4-digit space, so the rank is exact.

Scoring all 10,000 candidates costs one prefix pass plus one batched pass of the
1,000 three-digit prefixes (digits are single tokens in SmolLM2's tokenizer):
log p(d1 d2 d3 d4) = Σ log p(d_i | prefix, d_<i).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from dptext.corpus import Corpus

N_DIGITS = 4
N_CANDIDATES = 10 ** N_DIGITS

CANARY_TEMPLATES = (
    "Patient Maria Kowalczyk of 14 Harbour Lane, Ashford, was seen today; her record "
    "number is",
    "Case worker note: Daniel Okafor (daniel.okafor@example.org) called about the family; "
    "his client id is",
    "Discharge summary for John Whitfield, born 3 March 1961, 22 Elm Street; insurance "
    "number is",
)


@dataclass(frozen=True)
class Canary:
    prefix: str
    secret: str
    insertions: int
    label: str | None

    @property
    def text(self) -> str:
        return f"{self.prefix} {self.secret}"


def make_canaries(insertions: Sequence[int], labels: Sequence[str | None],
                  rng: np.random.Generator) -> list[Canary]:
    out = []
    for i, k in enumerate(insertions):
        secret = f"{int(rng.integers(N_CANDIDATES)):0{N_DIGITS}d}"
        out.append(Canary(CANARY_TEMPLATES[i % len(CANARY_TEMPLATES)], secret, k,
                          labels[i % len(labels)]))
    return out


def insert_canaries(corpus: Corpus, canaries: Sequence[Canary]) -> Corpus:
    texts, labels = list(corpus.texts), None if corpus.labels is None else list(corpus.labels)
    for c in canaries:
        texts += [c.text] * c.insertions
        if labels is not None:
            labels += [c.label] * c.insertions
    return Corpus(tuple(texts), None if labels is None else tuple(labels),
                  source=corpus.source + "+canaries")


@torch.no_grad()
def secret_log_probs(lm, tok, prompt_ids: list[int], batch: int = 250) -> np.ndarray:
    """log p(secret | prompt) for all 10,000 4-digit secrets, indexed by their value."""
    digits = [tok.convert_tokens_to_ids(d) for d in "0123456789"]
    if len(set(digits)) != 10 or tok.unk_token_id in digits:
        raise ValueError("canary scoring needs a tokenizer with one token per digit")
    lm.eval()
    ids = torch.tensor([prompt_ids])
    out = lm(input_ids=ids, use_cache=True)
    first = torch.log_softmax(out.logits[0, -1].float(), -1)[digits]  # (10,)
    prefixes = torch.tensor([[digits[int(c)] for c in f"{v:03d}"] for v in range(1000)])
    scores = np.zeros(N_CANDIDATES)
    for s in range(0, 1000, batch):
        chunk = prefixes[s: s + batch]
        cache = _repeat_cache(out.cache, len(chunk))
        o = lm(input_ids=chunk, cache=cache, use_cache=False)
        logp = torch.log_softmax(o.logits.float(), -1)[..., digits]  # (b, 3, 10)
        for j in range(len(chunk)):
            v = s + j
            d1, d2, d3 = v // 100, (v // 10) % 10, v % 10
            base = float(first[d1] + logp[j, 0, d2] + logp[j, 1, d3])
            scores[v * 10: v * 10 + 10] = base + logp[j, 2].numpy()
    return scores


def _repeat_cache(cache, n: int):
    import copy

    c = copy.deepcopy(cache)
    c.batch_repeat_interleave(n)
    return c


def rank_of(scores: np.ndarray, secret: str) -> int:
    """1 + the number of other candidates the model scores strictly higher."""
    true = scores[int(secret)]
    return 1 + int(np.sum(scores > true))


def exposure(rank: int) -> float:
    return math.log2(N_CANDIDATES) - math.log2(rank)


def canary_prompt(tok, canary: Canary, code_string: str) -> list[int]:
    """``[BOS]codes[SEP] prefix`` + the space before the digits, as in training."""
    ids = [tok.dpft_bos_id, *tok(code_string, add_special_tokens=False).input_ids,
           tok.dpft_sep_id]
    full = tok(" " + canary.prefix + " 0000", add_special_tokens=False).input_ids
    if tok.convert_ids_to_tokens(full[-N_DIGITS:]) != ["0"] * N_DIGITS:
        raise ValueError("canary scoring needs a tokenizer with one token per digit")
    return ids + full[:-N_DIGITS]


def score_canaries(gen, canaries: Sequence[Canary]) -> list[dict]:
    """Rank and exposure of each canary under a fitted ``DPFineTuneGenerator``."""
    from dptext.generators.dpft.codes import LABEL_FIELD, format_codes

    rows = []
    for c in canaries:
        codes = format_codes({LABEL_FIELD: c.label}) if c.label is not None else ""
        scores = secret_log_probs(gen.module_.lm, gen.tokenizer_,
                                  canary_prompt(gen.tokenizer_, c, codes))
        r = rank_of(scores, c.secret)
        rows.append({"insertions": c.insertions, "secret_rank": r,
                     "exposure": exposure(r), "secret_log_prob": float(scores[int(c.secret)]),
                     "candidates": N_CANDIDATES})
    return rows


def canary_experiment(corpus: Corpus, epsilons: Sequence[float], *, delta: float = 1e-5,
                      insertions: Sequence[int] = (1, 10, 100), config=None, model=None,
                      base_factory=None, seed: int = 0, progress: bool = False) -> list[dict]:
    """Insert canaries, fine-tune once per ε (``math.inf`` = without DP), rank them."""
    from dptext.generators.dpft.api import DPFineTuneGenerator

    rng = np.random.default_rng(seed)
    labels = corpus.classes
    canaries = make_canaries(insertions, labels, rng)
    poisoned = insert_canaries(corpus, canaries)
    rows = []
    for eps in epsilons:
        gen = DPFineTuneGenerator(eps, delta, model=model, config=config, seed=seed,
                                  progress=progress)
        # an audit, not a release: its exposures stay with the curator (as an evaluation
        # report does), so no persistent budget is charged (an ε = ∞ row would exhaust it)
        gen.fit_uncharged(poisoned, base=base_factory() if base_factory else None)
        for row in score_canaries(gen, canaries):
            rows.append({"epsilon": eps, **row})
    return rows
