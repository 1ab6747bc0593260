"""sentence-transformers backend: ``minilm`` (default), ``mpnet``, or a local model folder."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dptext.corpus import InputError
from dptext.embed.base import check_phrases, set_offline, unit_rows
from dptext.embed.models import (
    MINILM_ID,
    MPNET_ID,
    check_model_folder,
    folder_model_name,
    minilm_path,
    mpnet_part_files,
    mpnet_path,
)

# the short names this backend knows, and the hub ids that mean the same model
_ALIASES = {"minilm": "minilm", MINILM_ID: "minilm", "mpnet": "mpnet", MPNET_ID: "mpnet"}
_IDS = {"minilm": MINILM_ID, "mpnet": MPNET_ID}


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily on the first ``encode`` or ``dim``.

    ``model`` is ``"minilm"`` (all-MiniLM-L6-v2, 384-d), ``"mpnet"`` (all-mpnet-base-v2,
    768-d; needs its part packages) or the path of a local sentence-transformers folder.
    The constructor only checks that the model is there (cheap); nothing is loaded.
    """

    def __init__(self, model: str = "minilm", *, batch_size: int = 256, device: str = "cpu"):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self.device = device
        self._kind = _ALIASES.get(model)
        self._folder: Path | None = None
        if self._kind == "mpnet":
            mpnet_part_files()  # fail now, with install advice, not at first encode
        elif self._kind is None:
            self._folder = check_model_folder(model)
        self.name: str = _IDS[self._kind] if self._kind else folder_model_name(self._folder)
        self._st: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model!r}, name={self.name!r})"

    def _path(self) -> Path:
        if self._kind == "minilm":
            return minilm_path()
        if self._kind == "mpnet":
            return mpnet_path()
        assert self._folder is not None
        return self._folder

    def _load(self) -> Any:
        with self._lock:
            if self._st is None:
                set_offline()
                from sentence_transformers import SentenceTransformer

                path = self._path()
                try:
                    self._st = SentenceTransformer(
                        str(path), device=self.device, local_files_only=True
                    )
                except (OSError, ValueError) as e:
                    raise InputError(
                        f"could not load the sentence-transformers model in {self.model!r}: "
                        f"{e}. Pass 'minilm', 'mpnet', 'model2vec' or a complete local "
                        "sentence-transformers folder"
                    ) from e
        return self._st

    @property
    def dim(self) -> int:
        st = self._load()
        get = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
        d = get()
        if d is None:  # a model without a pooling layer that states it
            d = int(st.encode(["x"], convert_to_numpy=True).shape[1])
        return int(d)

    def encode(self, phrases: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        phrases = check_phrases(phrases)
        st = self._load()
        if not phrases:
            return np.zeros((0, self.dim), dtype=np.float32)
        # sentence-transformers sorts by length before batching, and restores the order
        x = st.encode(
            phrases,
            batch_size=self.batch_size,
            show_progress_bar=show_progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return unit_rows(x, x.shape[1])
