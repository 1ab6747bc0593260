"""dptext.text: public vocabularies and fast phrase extraction.

``load_vocabulary("english" | "glove" | "medical" | "file:PATH")`` gives a
``PublicVocabulary``; its ``extractor()`` finds the vocabulary's terms in
texts (leftmost-longest, whole tokens), e.g. the first S distinct terms of
each document for the DP vocabulary histogram of DP-KPS.
"""

from dptext.text.extract import PhraseExtractor, normalize_phrase, tokenize
from dptext.text.vocabulary import VOCABULARIES, PublicVocabulary, load_vocabulary

__all__ = [
    "VOCABULARIES",
    "PhraseExtractor",
    "PublicVocabulary",
    "load_vocabulary",
    "normalize_phrase",
    "tokenize",
]
