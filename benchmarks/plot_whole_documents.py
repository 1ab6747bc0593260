"""Whole-document accuracy against ε, one panel per corpus: DP-KPS and the other methods
(mean ± sd over the seeds), real documents and the LLM-only floor as lines across. Drawn
from ``benchmarks/results/whole-documents.jsonl``, pooled as the report of
``bench_whole_documents.py`` pools its cells (``glance_cells``), into
``docs/figures/whole-documents.png``, which the README and docs/benchmarks.md show.

    python benchmarks/plot_whole_documents.py \
        --also-llm openai:qwen2.5-0.5b@http://127.0.0.1:8080/v1
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from harness.options import study_parser
from harness.store import load_rows
from synthetic_protocol import BENCH_LLM
from whole_documents_report import LIMIT, RESULTS, cells_by_llm, glance_cells, pooled_cell

FIGURE = Path(__file__).resolve().parents[1] / "docs" / "figures" / "whole-documents.png"
#: the methods drawn against ε, DP-KPS first, and how
STYLES = {"kps": ("DP-KPS", "tab:blue", "o", 2.4),
          "augpe": ("Aug-PE", "tab:orange", "s", 1.4),
          "pate": ("PATE", "tab:green", "^", 1.4),
          "dpft": ("DP fine-tuning", "tab:purple", "D", 1.4),
          "invisibleink": ("InvisibleInk (peer)", "tab:brown", "v", 1.4)}
LINES = {"real": ("real documents", "black", "--"), "floor": ("LLM-only floor", "grey", ":")}


def draw(cells: dict, corpora: list[str], epsilons: list[float], path: Path) -> None:
    """One panel per corpus: x is ε (the small ones, then the ε → ∞ limit)."""
    small = sorted(e for e in epsilons if e < LIMIT)
    ticks = [*(f"{e:g}" for e in small), "∞"]
    fig, axes = plt.subplots(2, (len(corpora) + 1) // 2, figsize=(9, 6.4), sharex=True)
    for ax, corpus in zip(axes.flat, corpora, strict=False):
        served = False
        for method, (label, colour, style) in LINES.items():
            if (corpus, method) not in cells:
                continue
            served |= cells[corpus, method][0]
            acc = pooled_cell(cells[corpus, method][1][None])["accuracy"]
            ax.axhline(acc.mean, color=colour, linestyle=style, linewidth=1.2, label=label)
            if acc.n > 1:
                ax.axhspan(acc.mean - acc.sd, acc.mean + acc.sd, color=colour, alpha=0.08)
        for method, (label, colour, marker, width) in STYLES.items():
            if (corpus, method) not in cells:
                continue
            was_served, by_eps = cells[corpus, method]
            served |= was_served
            limit = max((e for e in by_eps if e is not None and e >= LIMIT), default=None)
            points = [(i, pooled_cell(by_eps[e])["accuracy"])
                      for i, e in enumerate([*small, limit]) if e in by_eps]
            xs = [i for i, _ in points]
            ax.plot(xs, [a.mean for _, a in points], color=colour, linewidth=width,
                    label=label)
            for i, a in points:  # one seed: a hollow marker, no error bar
                ax.errorbar(i, a.mean, yerr=a.sd if a.n > 1 else None, color=colour,
                            marker=marker, capsize=3, markersize=6,
                            markerfacecolor=colour if a.n > 1 else "white")
        ax.set_title(corpus + (" (documents via llama.cpp's server)" if served else ""),
                     fontsize=10)
        ax.set_xticks(range(len(ticks)), ticks)
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("ε (∞: the same configuration at ε = 1000)")
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy on real test documents")
    handles = {}
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=4, fontsize=9,
               frameon=False)
    fig.suptitle("Whole synthetic documents: a classifier trained on them, tested on real "
                 "ones (mean ± sd over seeds; hollow: 1 seed)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.97))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})  # no version: same bytes again
    print(f"wrote {path.relative_to(path.parents[2])}")


def main() -> None:
    ap = study_parser(__doc__, corpora=["bbc-news", "health-tweets", "complaints", "banking77"],
                      epsilons=[3, 6, 1000], write=False)
    ap.add_argument("--per-class", type=int, default=100)
    ap.add_argument("--llm", default=BENCH_LLM)
    ap.add_argument("--also-llm", action="append", default=[],
                    help="also the cells of this LLM (the same model served elsewhere) where "
                    "--llm has none, as the report's at-a-glance table")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--out", type=Path, default=FIGURE)
    args = ap.parse_args()
    cells = glance_cells(*cells_by_llm(load_rows(args.results), args), args)
    draw(cells, args.corpora, args.epsilons, args.out)


if __name__ == "__main__":
    main()
