"""CachedEmbedder with a fake, counting inner embedder (no model: fast)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from dptext.corpus import InputError
from dptext.embed import CachedEmbedder, Embedder


class CountingEmbedder:
    """Deterministic pseudo-embeddings from a hash of (name, phrase); records its calls."""

    def __init__(self, name: str = "fake/a", dim: int = 8):
        self.name = name
        self._dim = dim
        self.calls: list[list[str]] = []
        self.dim_calls = 0

    @property
    def dim(self) -> int:
        self.dim_calls += 1
        return self._dim

    def vec(self, phrase: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(f"{self.name}\0{phrase}".encode()).digest()[:8])
        v = np.random.default_rng(seed).standard_normal(self._dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def encode(self, phrases, *, show_progress: bool = False) -> np.ndarray:
        phrases = list(phrases)
        self.calls.append(phrases)
        return np.stack([self.vec(p) for p in phrases]).reshape(len(phrases), self._dim)

    @property
    def n_encoded(self) -> int:
        return sum(len(c) for c in self.calls)


def test_fake_and_cached_follow_the_protocol(tmp_path):
    inner = CountingEmbedder()
    assert isinstance(inner, Embedder)
    assert isinstance(CachedEmbedder(inner, tmp_path), Embedder)


def test_misses_encoded_once_in_one_batch_then_hits_skip_the_model(tmp_path):
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, tmp_path)
    x = emb.encode(["a", "b", "c"])
    assert inner.calls == [["a", "b", "c"]]
    y = emb.encode(["c", "a", "b"])
    assert inner.calls == [["a", "b", "c"]]  # all hits: the model was not called
    np.testing.assert_array_equal(y, x[[2, 0, 1]])
    emb.encode(["b", "d", "e", "a"])
    assert inner.calls[1] == ["d", "e"]  # only the misses, in one call


def test_values_order_dtype_and_norm(tmp_path):
    inner = CountingEmbedder(dim=5)
    emb = CachedEmbedder(inner, tmp_path)
    phrases = ["x", "y", "z", "y"]
    for _ in range(2):  # cold, then warm
        out = emb.encode(phrases)
        assert out.shape == (4, 5) and out.dtype == np.float32 and out.flags.c_contiguous
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
        np.testing.assert_allclose(out, np.stack([inner.vec(p) for p in phrases]), rtol=1e-6)


def test_duplicates_encoded_once(tmp_path):
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, tmp_path)
    out = emb.encode(["a", "b", "a", "a", "b"])
    assert inner.calls == [["a", "b"]]
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[1], out[4])


def test_persists_across_instances(tmp_path):
    first = CountingEmbedder()
    x = CachedEmbedder(first, tmp_path).encode(["alpha", "beta"])
    second = CountingEmbedder()
    emb = CachedEmbedder(second, tmp_path)
    y = emb.encode(["beta", "alpha"])
    assert second.calls == [] and second.dim_calls == 0  # dim came from the cache too
    np.testing.assert_array_equal(y, x[::-1])
    assert emb.dim == 8 and second.dim_calls == 0


def test_keyed_by_embedder_name(tmp_path):
    a, b = CountingEmbedder("fake/a"), CountingEmbedder("fake/b")
    xa = CachedEmbedder(a, tmp_path).encode(["same phrase"])
    xb = CachedEmbedder(b, tmp_path).encode(["same phrase"])
    assert b.calls == [["same phrase"]]  # no entry shared with fake/a
    assert not np.allclose(xa, xb)
    np.testing.assert_allclose(xb[0], b.vec("same phrase"), rtol=1e-6)


def test_empty_input(tmp_path):
    inner = CountingEmbedder(dim=7)
    out = CachedEmbedder(inner, tmp_path).encode([])
    assert out.shape == (0, 7) and out.dtype == np.float32
    assert inner.calls == []


def test_many_phrases_cross_the_select_chunk(tmp_path):
    inner = CountingEmbedder(dim=4)
    phrases = [f"w{i}" for i in range(1234)]
    x = CachedEmbedder(inner, tmp_path).encode(phrases)
    y = CachedEmbedder(CountingEmbedder(dim=4), tmp_path).encode(phrases[::-1])
    np.testing.assert_array_equal(y, x[::-1])


def test_unicode_and_odd_phrases(tmp_path):
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, tmp_path)
    phrases = ["", " ", "naïve café", "x'; DROP TABLE embeddings; --", "日本語", "a\0b"]
    x = emb.encode(phrases)
    y = CachedEmbedder(CountingEmbedder(), tmp_path).encode(phrases)
    np.testing.assert_array_equal(x, y)
    assert len(inner.calls) == 1


def test_wrong_shape_from_inner_is_an_error(tmp_path):
    class Broken(CountingEmbedder):
        def encode(self, phrases, *, show_progress=False):
            return np.zeros((1, self._dim), dtype=np.float32)

    with pytest.raises(RuntimeError, match="returned shape"):
        CachedEmbedder(Broken(), tmp_path).encode(["a", "b"])


def test_a_single_string_is_refused(tmp_path):
    with pytest.raises(TypeError, match="sequence of phrases"):
        CachedEmbedder(CountingEmbedder(), tmp_path).encode("heart attack")


def test_clear(tmp_path):
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, tmp_path)
    emb.encode(["a", "b"])
    assert emb.clear() == 2
    emb.encode(["a"])
    assert inner.calls[-1] == ["a"]


def test_unusable_cache_dir_is_an_input_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(InputError, match="writable folder"):
        CachedEmbedder(CountingEmbedder(), blocker / "cache").encode(["a"])
