"""Disjoint teacher shards of the private corpus, chosen so that one document touches one teacher.

Neighbouring relation: add/remove one document. PATE's sensitivity argument needs the
shard of a document to depend on that document alone: assigning shards by row position
would let one added document shift every later document into another shard, changing
every teacher at once. Here a document's shard is a keyed hash (HMAC-SHA256 with a
per-run secret salt) of its normalised text, after exact de-duplication of
(text, label) pairs, so adding or removing one document changes exactly one shard (or
none, when it duplicates a document already present) and leaves the others identical.
The salt keeps an adversary from choosing texts that land in a given shard; it is never
written anywhere.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence

import numpy as np


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form of a document, used for de-duplication and
    the shard key."""
    return " ".join(text.lower().split())


def deduplicate(texts: Sequence[str], labels: Sequence[str | None] | None
                ) -> tuple[list[str], list[str | None]]:
    """Exact duplicates of (normalised text, label) kept once, first occurrence first.

    De-duplication is a function of the *set* of pairs, so a neighbour that adds a copy of
    a document already present leaves the result unchanged, and one that adds a new
    document adds exactly one pair.
    """
    labs = list(labels) if labels is not None else [None] * len(texts)
    seen: set[tuple[str, str | None]] = set()
    out_t: list[str] = []
    out_l: list[str | None] = []
    for t, lab in zip(texts, labs, strict=True):
        key = (normalise(t), lab)
        if key not in seen:
            seen.add(key)
            out_t.append(t)
            out_l.append(lab)
    return out_t, out_l


def new_salt() -> bytes:
    """A fresh secret key for one run's shard assignment."""
    return secrets.token_bytes(32)


def shard_of(texts: Sequence[str], n_shards: int, salt: bytes) -> np.ndarray:
    """The shard (0 … n_shards−1) of every document: HMAC-SHA256(salt, normalised text).

    Depends on the document's own text and the salt only, never on the other documents.
    """
    if n_shards < 1:
        raise ValueError(f"need at least one teacher, got {n_shards}")
    out = np.empty(len(texts), dtype=np.int64)
    for i, t in enumerate(texts):
        digest = hmac.new(salt, normalise(t).encode("utf-8"), hashlib.sha256).digest()
        out[i] = int.from_bytes(digest[:8], "little") % n_shards
    return out
