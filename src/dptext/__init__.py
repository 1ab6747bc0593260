"""dptext: synthetic text corpora with a document-level differential-privacy guarantee."""

__version__ = "0.1.0"
