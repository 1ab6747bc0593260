"""Moved: the pipeline audits live in ``dptext.audits`` (they run generators, so they sit
above ``generators/``, not in ``evaluate/``). Kept for old imports of the stand-in
embedder, which is now ``dptext.embed.hashing.HashEmbedder``."""

from dptext.embed.hashing import HashEmbedder

__all__ = ["HashEmbedder"]
