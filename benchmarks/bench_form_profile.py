"""Form profile fidelity: how close the forms DP-KPS draws are to each class's real forms.

No LLM: the form profile is released as a DP-KPS run releases it (``kps.form.
release_form_profile``, with the noise a default ``form=True`` fit plans at that total ε:
read off one such fit's ledger), and each variant of its post-processing
(``FormProfile.distributions``: the released sums → each block's value probabilities)
is scored against the real documents of each class: the total-variation distance
between the drawn and the real value distribution of each block, averaged over blocks.
Per corpus: the mean over classes and the smallest class's (small classes are where
noise dominates). The variants read the same release in each seed, side by side.

    nice -n 10 python benchmarks/bench_form_profile.py --seeds 0,1,2 --write
"""

from __future__ import annotations

import numpy as np

from bench_whole_documents import corpus_data
from dptext.compute import map_sum
from dptext.generators.kps.form import (
    FORM_NAME,
    FormProfile,
    above_floor,
    release_form_profile,
)
from dptext.privacy import PrivacyLedger
from dptext.privacy.mechanisms import NoiseSpec
from dptext.text.form import FORM_BLOCKS, FormCounts, form_blocks
from harness.options import study_parser
from harness.report import markdown_table, record
from harness.stats import eps_name, mean_sd
from keyphrase_protocol import INF_EPSILON

DELTA = 1e-5
#: the flat noise floor before the shrinkage (commit 8fd9698)
FLAT_FLOOR_SIGMAS = 2.0
VARIANTS = {"floor": "the class's noisy sums above 2σ, normalised (the rule before "
                     "commit 8fd9698)",
            "shrunk": "the class's noisy sums above a floor that grows with the block's "
                      "values (1.6σ–2.9σ), shrunk toward all classes' pooled sums as James "
                      "and Stein would (``FormProfile.distributions`` now)"}


def floor_distributions(profile: FormProfile, label) -> list[np.ndarray]:
    """The rule before the shrinkage: each class on its own."""
    return [above_floor(block, FLAT_FLOOR_SIGMAS * profile.noise_scale)
            for block in form_blocks(profile.sums[label])]


COLUMNS = {"mean": "TV, mean over classes", "smallest": "TV, smallest class",
           "length": "length TV, smallest class", "link": "link TV, mean over classes"}
RULES = {"floor": floor_distributions, "shrunk": FormProfile.distributions}


def form_noise(eps: float) -> NoiseSpec:
    """The form profile's noise in a default ``form=True`` DP-KPS fit at total ``eps``
    (the same for every corpus: its sensitivity is fixed), read off a fit's ledger."""
    from dptext.generators.kps import KeyphraseSeeder

    data = corpus_data("drug-reviews")
    seeder = KeyphraseSeeder(epsilon=eps, delta=DELTA, labels=data.classes, form=True)
    seeder.fit(data.train, rng=np.random.default_rng(0), ledger=PrivacyLedger())
    r = next(r for r in seeder.ledger_.releases if r.name == FORM_NAME)
    return NoiseSpec("gaussian", r.epsilon, r.delta)


def real_distributions(exact: np.ndarray) -> list[list[np.ndarray]]:
    """Per class, per block: the real documents' value distribution."""
    return [[block / max(block.sum(), 1) for block in form_blocks(row)] for row in exact]


def tv(p: list[np.ndarray], q: list[np.ndarray]) -> float:
    return float(np.mean([0.5 * np.abs(a - b).sum() for a, b in zip(p, q, strict=True)]))


def cells_of(corpus: str, noise: NoiseSpec, releases: int) -> list[dict]:
    """``releases`` independent releases of the corpus's form profile, each scored."""
    data = corpus_data(corpus)
    ids = {c: k for k, c in enumerate(data.classes)}
    items = [(t, ids[lab]) for t, lab in zip(data.train.texts, data.train.labels,
                                             strict=True)]
    exact = map_sum(FormCounts(len(data.classes)), items).astype(np.float64)
    real = real_distributions(exact)
    sizes = exact[:, :len(FORM_BLOCKS["length"])].sum(axis=1)
    smallest = int(np.argmin(sizes))
    return [score(release_form_profile(items, list(data.classes), noise, PrivacyLedger()),
                  data.classes, real, smallest, int(sizes[smallest])) for _ in range(releases)]


def score(profile: FormProfile, classes, real, smallest: int, docs: int) -> dict:
    out = {"sigma": profile.noise_scale, "smallest_class_docs": docs}
    for name in VARIANTS:
        drawn = [RULES[name](profile, c) for c in classes]
        scores = [tv(d, real[k]) for k, d in enumerate(drawn)]
        out[name] = {"mean": float(np.mean(scores)), "smallest": scores[smallest],
                     "length": tv(drawn[smallest][:1], real[smallest][:1]),
                     "link": float(np.mean([tv(d[1:2], real[k][1:2])
                                            for k, d in enumerate(drawn)]))}
    return out


def main() -> None:
    args = study_parser(__doc__, corpora=["drug-reviews", "health-tweets", "bbc-news",
                                          "complaints", "banking77"],
                        epsilons=[3, 6, INF_EPSILON], seeds=[0, 1, 2], write=True).parse_args()
    rows = []
    for eps in args.epsilons:
        noise = form_noise(eps)
        for corpus in args.corpora:
            cells = cells_of(corpus, noise, len(args.seeds))  # the noise is not seeded
            row = [corpus, eps_name(eps), f"{cells[0]['sigma']:.3g}",
                   cells[0]["smallest_class_docs"]]
            for name in VARIANTS:
                row += [mean_sd([c[name][k] for c in cells]) for k in COLUMNS]
            rows.append(row)
            print(row, flush=True)
    header = ["corpus", "ε", "σ", "smallest class (docs)"]
    for name in VARIANTS:
        header += [f"{name}: {v}" for v in COLUMNS.values()]
    text = ("Total-variation distance between the value distribution the forms are drawn "
            "from and the real one, per block, averaged over the 15 blocks (0: the real "
            "distribution; 1: disjoint); mean ± sd over "
            f"{len(args.seeds)} releases (the mechanism's noise is not seeded). δ = "
            f"{DELTA:g}; ε = {INF_EPSILON:g} stands for ε → ∞. Variants, on the same "
            "release: " + "; ".join(f"**{k}**: {v}" for k, v in VARIANTS.items())
            + ". Real documents: each corpus's training split (the private corpus).\n\n"
            + markdown_table(header, rows))
    if args.write:
        record("form-profile", "Form profile fidelity: drawn forms against real ones", text)
    else:
        print(text)


if __name__ == "__main__":
    main()
