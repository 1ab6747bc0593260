"""The paper's DP kernel density estimates of keyphrase sequences: random Fourier
features (``rff``), the released sketches (``sketch``) and sampling from them
(``sampler``)."""
