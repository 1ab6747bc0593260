"""model2vec backend: a static (token-lookup) model distilled locally from MiniLM.

Very fast (10k phrases in well under a second) and weak: good for tests and
quick runs, not for a release. The distillation (``model2vec.distill``,
``pca_dims=256``) runs once, takes about a minute on 2 cores, and its result is
kept in ``models_dir() / "model2vec-all-MiniLM-L6-v2-pca256"``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dptext.corpus import InputError
from dptext.embed.base import check_phrases, models_dir, set_offline, unit_rows
from dptext.embed.models import is_model_folder, minilm_path

PCA_DIMS = 256
DIRNAME = f"model2vec-all-MiniLM-L6-v2-pca{PCA_DIMS}"
NAME = f"model2vec/all-MiniLM-L6-v2-pca{PCA_DIMS}"


def model2vec_path(root: Path | None = None) -> Path:
    """The distilled static model's folder, distilling it on first use."""
    root = models_dir() if root is None else Path(root)
    target = root / DIRNAME
    if is_model_folder(target):
        return target
    set_offline()
    try:
        from model2vec.distill import distill
    except ImportError as e:
        raise InputError(
            "the 'model2vec' embedder needs model2vec with its distill extra "
            "(`pip install model2vec skeletoken`); or choose 'minilm' (the default)"
        ) from e
    source = minilm_path()
    print(
        f"dptext: distilling a static model2vec model from MiniLM into {target} "
        "(once; about a minute)",
        file=sys.stderr,
    )
    model = distill(model_name=str(source), pca_dims=PCA_DIMS)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".model2vec-") as tmp:
        out = Path(tmp) / DIRNAME
        model.save_pretrained(out)
        try:
            out.rename(target)  # atomic: a concurrent process either wins or finds it done
        except OSError:
            if not is_model_folder(target):
                raise
            shutil.rmtree(out, ignore_errors=True)
    return target


class Model2VecEmbedder:
    """Static embeddings (256-d) from a model2vec model distilled from MiniLM.

    Lazy: the first ``encode``/``dim`` loads the model, distilling it if it is not
    in ``model_dir`` (default ``models_dir()``) yet.
    """

    name: str = NAME

    def __init__(self, *, model_dir: str | Path | None = None):
        self.model_dir = None if model_dir is None else Path(model_dir)
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Model2VecEmbedder(name={self.name!r})"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                set_offline()
                from model2vec import StaticModel

                path = model2vec_path(self.model_dir)
                self._model = StaticModel.from_pretrained(path, normalize=True)
        return self._model

    @property
    def dim(self) -> int:
        return int(self._load().dim)

    def encode(self, phrases: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        phrases = check_phrases(phrases)
        m = self._load()
        if not phrases:
            return np.zeros((0, self.dim), dtype=np.float32)
        x = m.encode(phrases, show_progress_bar=show_progress, use_multiprocessing=False)
        return unit_rows(x, self.dim)  # the model stores float16: cast and renormalise
