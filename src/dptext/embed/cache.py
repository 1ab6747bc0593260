"""An on-disk cache of embeddings, wrapped around any ``Embedder``.

PRIVACY: the cache writes every phrase it sees, in the clear, to a sqlite file
that outlives the run. dptext only ever passes *public* phrases through it (the
terms of a public vocabulary, which are embedded whatever the private corpus
holds). Never wrap an embedder used on private document text with this cache:
that text would persist on disk outside any DP guarantee. Nothing here enforces
this; the callers must.

Layout: ``<cache_dir>/embeddings.sqlite``, one table keyed by (embedder name,
phrase), values float32 bytes. Several processes may share it (WAL journal;
inserts are ``OR REPLACE``: a race stores one of two identical vectors).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

import numpy as np

from dptext.corpus import InputError
from dptext.embed.base import CACHE_ENV, Embedder, check_phrases, unit_rows

DB_NAME = "embeddings.sqlite"
_CHUNK = 500  # phrases per SELECT ... IN (...) (old sqlite builds allow 999 variables)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model  TEXT NOT NULL,
    phrase TEXT NOT NULL,
    vec    BLOB NOT NULL,
    PRIMARY KEY (model, phrase)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS models (
    model TEXT PRIMARY KEY,
    dim   INTEGER NOT NULL
);
"""


class CachedEmbedder:
    """``inner`` with a persistent cache: only phrases not cached yet reach the model.

    ``encode`` returns rows in input order; each distinct missing phrase is encoded
    once, all of them in one ``inner.encode`` call. ``name`` is ``inner.name`` (a
    cache is transparent), and ``dim`` is read from the cache when it knows the
    model, so a fully cached run never loads the model.
    """

    def __init__(self, inner: Embedder, cache_dir: str | Path):
        self.inner = inner
        self.name: str = inner.name
        self.cache_dir = Path(cache_dir).expanduser()
        self.path = self.cache_dir / DB_NAME
        self._dim: int | None = None
        self._ready = False

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, cache_dir={str(self.cache_dir)!r})"

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        # one short-lived connection per call: safe across threads and forked workers
        try:
            if not self._ready:
                self.cache_dir.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=60)
            if not self._ready:
                con.execute("PRAGMA journal_mode=WAL")
                con.executescript(_SCHEMA)
                self._ready = True
        except (OSError, sqlite3.Error) as e:
            raise InputError(
                f"cannot use the embedding cache {str(self.path)!r} ({e}); point "
                f"${CACHE_ENV} (or the cache_dir option) at a writable folder, or turn "
                "the cache off"
            ) from e
        with closing(con):
            yield con

    @property
    def dim(self) -> int:
        if self._dim is None:
            with self._db() as con:
                row = con.execute("SELECT dim FROM models WHERE model = ?", (self.name,)).fetchone()
            self._dim = int(row[0]) if row else int(self.inner.dim)
        return self._dim

    def encode(self, phrases: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        phrases = check_phrases(phrases)
        unique = list(dict.fromkeys(phrases))
        found: dict[str, bytes] = {}
        with self._db() as con:
            for i in range(0, len(unique), _CHUNK):
                chunk = unique[i : i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT phrase, vec FROM embeddings WHERE model = ? AND phrase IN ({marks})"
                found.update(con.execute(sql, (self.name, *chunk)).fetchall())
        dim = self.dim
        vecs: dict[str, np.ndarray] = {
            p: np.frombuffer(b, dtype=np.float32) for p, b in found.items() if len(b) == 4 * dim
        }  # a blob of the wrong size (a model changed under the same name) counts as a miss
        misses = [p for p in unique if p not in vecs]
        if misses:
            new = self.inner.encode(misses, show_progress=show_progress)
            if new.shape != (len(misses), dim):
                raise RuntimeError(
                    f"embedder {self.name!r} returned shape {new.shape} for {len(misses)} "
                    f"phrases; expected ({len(misses)}, {dim})"
                )
            new = unit_rows(new, dim)
            with self._db() as con, con:  # one transaction
                con.execute(
                    "INSERT OR REPLACE INTO models (model, dim) VALUES (?, ?)", (self.name, dim)
                )
                con.executemany(
                    "INSERT OR REPLACE INTO embeddings (model, phrase, vec) VALUES (?, ?, ?)",
                    ((self.name, p, v.tobytes()) for p, v in zip(misses, new, strict=True)),
                )
            vecs.update(zip(misses, new, strict=True))
        if not phrases:
            return np.zeros((0, dim), dtype=np.float32)
        return np.stack([vecs[p] for p in phrases]).astype(np.float32, copy=False)

    def clear(self) -> int:
        """Delete this embedder's entries; returns how many there were."""
        with self._db() as con, con:
            n = con.execute("DELETE FROM embeddings WHERE model = ?", (self.name,)).rowcount
            con.execute("DELETE FROM models WHERE model = ?", (self.name,))
        self._dim = None
        return n
