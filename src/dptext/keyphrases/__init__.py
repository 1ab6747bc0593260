"""DP statistics of a corpus's keyphrases over the public vocabulary that are not kernel
density estimates (those are ``dptext.kde``): the class × term histogram
(``histogram``) and the private choice of S, the terms a document may contribute
(``terms_per_doc``)."""
