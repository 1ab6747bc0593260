"""Gold coreference documents: tokens by sentence and chains of token spans.

A mention is a span ``(start, end)`` of document-level token indices, ``end``
inclusive (LitBank's convention). A document with no chains is unannotated text.
"""

from __future__ import annotations

from dataclasses import dataclass

Span = tuple[int, int]


@dataclass(frozen=True)
class CorefDoc:
    """One document: ``sentences`` of tokens and ``clusters`` of mention spans."""

    name: str
    sentences: tuple[tuple[str, ...], ...]
    clusters: tuple[tuple[Span, ...], ...] = ()

    @property
    def n_tokens(self) -> int:
        return sum(len(s) for s in self.sentences)

    def truncated(self, max_tokens: int) -> CorefDoc:
        """The first whole sentences that fit ``max_tokens`` (at least one sentence), with
        the mentions that lie inside them; chains left empty are dropped."""
        keep, n = [], 0
        for s in self.sentences:
            if keep and n + len(s) > max_tokens:
                break
            keep.append(s)
            n += len(s)
        if len(keep) == len(self.sentences):
            return self
        clusters = tuple(c for c in (tuple(m for m in cl if m[1] < n) for cl in self.clusters)
                         if c)
        return CorefDoc(self.name, tuple(keep), clusters)
