"""dptext: synthetic text corpora with a document-level differential-privacy guarantee.

``dptext.synthesize(corpus, method="kps", epsilon=6, out=...)`` runs the main job."""

__version__ = "0.1.0"


def __getattr__(name: str):
    if name == "synthesize":  # imported on first use: ``import dptext`` stays light
        from dptext.api import synthesize

        return synthesize
    raise AttributeError(f"module 'dptext' has no attribute {name!r}")


__all__ = ["synthesize"]
