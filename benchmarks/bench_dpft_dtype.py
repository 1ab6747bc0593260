"""dpft's frozen-base dtype on this CPU: one DP-SGD step in bfloat16 and in float32.

What ``--dtype auto`` (the default) decides: bfloat16 only where the CPU multiplies it
natively (AVX512-BF16 or AMX). This times, side by side and interleaved, the forward pass
and the forward + backward of one Opacus per-document-gradient step (SmolLM2-135M, LoRA
r=4 on q/v, the classifier head off) on --batch BBC training documents × --tokens
tokens, so the choice rests on a measurement of the machine it runs on. Clipping and
noise act on the fp32 adapters' gradients and cost the same in both dtypes; they are
left out.

    python benchmarks/bench_dpft_dtype.py --write     # minutes; bf16 is slow without AVX512-BF16
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # installed or not

import torch

from dptext.datasets import load_demo
from dptext.generators.dpft.model import NATIVE_BF16, base_dtype, load_base
from dptext.generators.dpft.train import DPFTConfig, DPFTModule, add_lora, encode, pad_batch
from harness.options import study_parser
from harness.report import markdown_table, record

DTYPES = ("float32", "bfloat16")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def step_timers(dtype: str, texts: list[str], tokens: int):
    """(forward, forward + per-document backward) closures on a ``dtype`` base."""
    from opacus import GradSampleModule

    lm, tok = load_base(dtype=dtype)
    module = DPFTModule(add_lora(lm, DPFTConfig()), n_classes=0)
    batch = pad_batch(encode(tok, ["label: x"] * len(texts), texts, tokens), tok.pad_token_id)
    gsm = GradSampleModule(module, loss_reduction="sum")

    def forward():
        with torch.no_grad():
            module.lm_losses(*batch)

    def step():
        for p in module.parameters():
            p.grad_sample = None
            p.grad = None
        gsm(*batch).sum().backward()

    return forward, step


def main() -> None:
    ap = study_parser(__doc__)
    ap.add_argument("--batch", type=int, default=8, help="documents per step")
    ap.add_argument("--tokens", type=int, default=64, help="tokens per document")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions (after a warm-up)")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    texts = list(load_demo("bbc-news/train").texts[: args.batch])
    timers = {d: step_timers(d, texts, args.tokens) for d in DTYPES}
    times = {(d, k): [] for d in DTYPES for k in ("forward", "step")}
    for rep in range(args.reps + 1):  # interleaved, so drift in the machine hits both
        for d in DTYPES:
            for k, fn in zip(("forward", "step"), timers[d], strict=True):
                t = timed(fn)
                print(f"rep {rep} {d} {k}: {t:.2f} s", flush=True)
                if rep:
                    times[d, k].append(t)
    med = {key: statistics.median(v) for key, v in times.items()}
    caps = torch.cpu.get_capabilities()
    rows = [[k, f"{med['float32', k]:.2f}", f"{med['bfloat16', k]:.2f}",
             f"{med['bfloat16', k] / med['float32', k]:.1f}×"] for k in ("forward", "step")]
    table = markdown_table(["", "float32 base (s)", "bfloat16 base (s)", "bf16 / fp32"], rows)
    native = ", ".join(f"{f}: {'yes' if caps.get(f) else 'no'}" for f in NATIVE_BF16)
    body = (f"One batch of {args.batch} BBC training documents × {args.tokens} tokens, "
            f"SmolLM2-135M with LoRA r=4 on q/v, {args.threads} torch thread(s); median of "
            f"{args.reps} interleaved repetitions after a warm-up. \"step\": forward + "
            "backward with Opacus per-document gradients (clipping and noise, the same in "
            f"both, left out). CPU: {caps.get('cpu_name', '?')}, {native}; `--dtype auto` "
            f"picks **{base_dtype('auto')}** here.\n\n{table}\n")
    print(body)
    if args.write:
        record("dpft-dtype", "dpft: frozen-base dtype on this CPU", body)


if __name__ == "__main__":
    main()
