"""DP-KPS's releases on the private corpus, each written once: the DP vocabulary Ṽ, the
label histogram, and the KDE sketches over the released vocabulary; and how a document's
keyphrases are read (``DocumentTerms``). Each records into the ledger it is given."""

from __future__ import annotations

import math
import warnings

import numpy as np

from dptext.compute import map_sum
from dptext.corpus import Corpus
from dptext.kde.rff import FourierFeatures
from dptext.kde.sampler import candidate_sets, unigram_scores
from dptext.kde.sketch import ReleasedSketches, ensemble_blocks, release_corpus_sketches
from dptext.keyphrases.histogram import noise_floor_of
from dptext.privacy import NoiseSpec, PrivacyLedger, Release, Sensitivity, release
from dptext.text.extract import FirstTermCounts


def noise_floor(released: Release, size: int, false_terms: float) -> float:
    """Noisy count above which ≤ ``false_terms`` zero-count terms are expected to lie.

    Top-N of a noisy histogram over a large public vocabulary is mostly terms whose
    true count is 0 but whose noise is the largest of ``size`` draws. Keeping only
    terms above this floor is post-processing of the released histogram (no privacy
    cost) and uses only the recorded noise scale. ``false_terms >= size`` keeps all
    (the paper's plain top-N).
    """
    return noise_floor_of(released.noise_scale, released.mechanism, size, false_terms)


def release_vocabulary(texts, vocab, noise: NoiseSpec, ledger: PrivacyLedger, *,
                       terms_per_doc: int, size: int, noise_terms: float,
                       min_terms: int) -> tuple[str, ...]:
    """The DP vocabulary Ṽ (appendix B.1): each document's first S distinct public terms,
    a noisy histogram over the public vocabulary (recorded in ``ledger``), the top
    ``size`` terms above the noise floor.

    Only terms above the floor are kept, however few: a term below it is as likely
    to be noise as signal, and padding Ṽ with such terms would present noise as the
    corpus's content. Fewer than ``min_terms`` kept terms gives a warning (naming only
    released numbers); the caller's sequences or prompts are then shorter.
    """
    # exact counts, summed over batches on the current engine (dptext.compute); the noise
    # is added once, below, on the driver
    counts = map_sum(FirstTermCounts(vocab.extractor(), terms_per_doc),
                     texts).astype(np.float64)
    s = terms_per_doc
    sens = Sensitivity(l1=s, l2=math.sqrt(s),
                       reason=f"one document adds +1 to at most S={s} distinct terms")
    noisy = release(counts, sens, noise, ledger=ledger,
                    name=f"vocabulary histogram ({vocab.name})")
    top = np.argsort(-noisy, kind="stable")[:size]
    floor = noise_floor(ledger.releases[-1], len(vocab), noise_terms)
    kept = top[noisy[top] > floor]
    if kept.size < min_terms:
        warnings.warn(f"only {kept.size} vocabulary terms rise above the noise at {noise}; "
                      f"keeping only those (terms below the noise floor would be noise "
                      "presented as signal), so sequences are shorter. Raise --epsilon, "
                      "or use a smaller public vocabulary.", stacklevel=4)
    return tuple(vocab.terms[i] for i in kept)


def release_label_counts(corpus: Corpus, labels: list, epsilon: float,
                         ledger: PrivacyLedger) -> dict:
    """The Laplace label histogram over the public ``labels`` (clipped at 0)."""
    present = np.asarray(corpus.labels if corpus.labels is not None else [None] * len(corpus),
                         dtype=object)
    exact = np.array([(present == c).sum() for c in labels], dtype=np.float64)
    sens = Sensitivity(l1=1.0, l2=1.0, reason="one document changes one class count by 1")
    noisy = release(exact, sens, NoiseSpec("laplace", epsilon), ledger=ledger,
                    name="label histogram")
    return {c: float(max(v, 0.0)) for c, v in zip(labels, noisy, strict=True)}


def class_ids(corpus: Corpus, labels: list) -> np.ndarray:
    """Each document's index into ``labels`` (−1: a label outside them); 0 for every
    document of an unlabelled corpus (its one class)."""
    if corpus.labels is None:
        return np.zeros(len(corpus), dtype=np.int64)
    lookup = {c: i for i, c in enumerate(labels)}
    return np.fromiter((lookup.get(c, -1) for c in corpus.labels), dtype=np.int64,
                       count=len(corpus))


class DocumentTerms:
    """A document's keyphrase sequence, as the sketches and the selection read it: its first
    ``terms_per_doc`` distinct terms of ``extractor``'s vocabulary in order of appearance,
    mapped through ``to_released`` (public index → index into Ṽ, −1: not released) when
    given, the first ``limit`` kept. Picklable (public parameters only), so the batches
    that call it may run on any engine."""

    def __init__(self, extractor, terms_per_doc: int, to_released: np.ndarray | None = None,
                 limit: int | None = None):
        self.extractor = extractor
        self.terms_per_doc = terms_per_doc
        self.to_released = to_released
        self.limit = limit

    def __call__(self, texts) -> list[np.ndarray]:
        firsts = self.extractor.extract_many(texts, max_terms=self.terms_per_doc,
                                             distinct=True)
        if self.to_released is not None:
            firsts = [m[m >= 0] for m in (self.to_released[f] for f in firsts)]
        return firsts if self.limit is None else [f[:self.limit] for f in firsts]


def released_index(public_terms: tuple[str, ...], released: tuple[str, ...]) -> np.ndarray:
    """Public vocabulary index → index into Ṽ (−1: not released); Ṽ ⊆ the public terms."""
    where = {t: i for i, t in enumerate(public_terms)}
    out = np.full(len(public_terms), -1, dtype=np.int64)
    out[np.fromiter((where[t] for t in released), dtype=np.int64, count=len(released))] = \
        np.arange(len(released))
    return out


def embed_terms(terms: tuple[str, ...], embedder, cache_dir) -> np.ndarray:
    """Embeddings of released vocabulary terms (public terms only: the cache is safe)."""
    from dptext.embed import default_cache_dir, load_embedder

    cache = default_cache_dir() if cache_dir is None else cache_dir
    model = load_embedder(embedder, cache_dir=cache) if isinstance(embedder, str) \
        else embedder
    return np.ascontiguousarray(model.encode(list(terms)), dtype=np.float32)


def release_kde(options, items, sequences_of, labels: list, embeddings: np.ndarray,
                noise: NoiseSpec, ledger: PrivacyLedger, rng: np.random.Generator,
                fold: str | None = None) -> tuple[ReleasedSketches, dict, dict]:
    """The per-class KDE sketches of ``items`` ((text, class id) pairs; −1: in no class),
    each document's keyphrases given by ``sequences_of``; with the unigram scores and the
    candidate sets read from them (post-processing). Each document's sketch contributions
    are summed per class over batches on the current engine (dptext.compute); the noise is
    added once per class, on the driver."""
    o = options
    features = [FourierFeatures.draw(embeddings.shape[1], b, o.features, o.bandwidth, rng)
                for b in ensemble_blocks(o.method, o.length, o.ensemble)]
    sketches = release_corpus_sketches(items, labels, sequences_of, embeddings, features,
                                       noise, ledger, max_windows=o.windows_per_doc,
                                       fold=fold)
    unigram = unigram_scores(sketches, embeddings)
    candidates = candidate_sets(unigram, o.sampling, o.contrastive_keep,
                                min_keep=2 * o.length) if labels else {}
    return sketches, unigram, candidates
