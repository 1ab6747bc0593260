"""DP-SGD fine-tuning of a causal LM with LoRA (peft) and per-document clipping (Opacus).

Privacy unit: ONE DOCUMENT = ONE TRAINING SAMPLE. Each document is encoded as
``[BOS]codes[SEP]text[EOS]`` and TRUNCATED to ``max_length`` tokens (never split into
several samples), so a document contributes exactly one per-sample gradient per step,
clipped to ``max_grad_norm``. Batches are Poisson samples of documents at rate q
(each document independently), which is what the accountant's
``PoissonSampledDpEvent`` assumes. q = expected batch size / N̂, where N̂ is the DP
estimate of the corpus size from the released control-code histogram, so the
schedule itself uses only released numbers.

Multi-task (the blog): a linear classifier head reads the mean final hidden state of
``[BOS][SEP]text`` (codes left out, or it would read the label off the codes) and its
cross-entropy is added to the LM loss of the same document; the sum is one
per-document loss, so clipping and noise cover both heads in one DP-SGD step.

Secret randomness: the Poisson sampling and the DP-SGD noise each come from their own
``secret_generator()``, whose whole state is drawn from OS entropy in this process; no
public seed (``--seed``, a re-seeded global torch generator) reaches them, and neither
their seeds nor their states are saved. A resumed run draws fresh ones: the accountant
only needs each step's batch to be an independent Poisson sample, so steps done before
the interruption and steps done after compose exactly as the planned ``steps``. Batch
losses are raw statistics of private batches: they are shown only as a running value on
the terminal (the progress bar), never returned, logged or saved.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn


@dataclass
class DPFTConfig:
    epochs: float = 2.0
    batch_size: int = 16  # expected Poisson batch size
    learning_rate: float = 1e-3
    max_length: int = 128  # tokens per document, codes included; longer ones are truncated
    dtype: str = "auto"  # frozen base weights (see model.base_dtype); adapters stay fp32
    max_grad_norm: float = 1.0
    lora_r: int = 4
    lora_alpha: int = 32
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    code_share: float = 0.05  # share of ε spent on the control-code histogram
    code_delta_share: float = 0.1  # share of δ for it
    multitask: bool = False
    cls_weight: float = 1.0
    cls_max_length: int = 64
    checkpoint_every: int = 20  # steps
    epsilon_refresh: int = 10  # steps between live-ε updates in the progress bar

    def to_dict(self) -> dict:
        d = asdict(self)
        d["lora_targets"] = list(self.lora_targets)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> DPFTConfig:
        d = dict(d)
        d["lora_targets"] = tuple(d.get("lora_targets", cls.lora_targets))
        return cls(**d)


def encode(tok, code_strings: Sequence[str], texts: Sequence[str], max_length: int,
           with_codes: bool = True) -> list[tuple[list[int], int]]:
    """Token ids of ``[BOS]codes[SEP]text[EOS]`` (truncated) and where the text starts."""
    out = []
    for codes, text in zip(code_strings, texts, strict=True):
        head = [tok.dpft_bos_id]
        if with_codes:
            head += tok(codes, add_special_tokens=False).input_ids
        head.append(tok.dpft_sep_id)
        body = [*tok(" " + text.strip(), add_special_tokens=False).input_ids, tok.eos_token_id]
        ids = (head + body)[:max_length]
        out.append((ids, len(head)))
    return out


def pad_batch(items: list[tuple[list[int], int]], pad_id: int):
    """Right-padded ids, attention mask and a mask of the text (loss) positions."""
    n = max(len(ids) for ids, _ in items)
    ids = torch.full((len(items), n), pad_id, dtype=torch.long)
    att = torch.zeros((len(items), n), dtype=torch.long)
    text = torch.zeros((len(items), n), dtype=torch.bool)
    for i, (seq, start) in enumerate(items):
        ids[i, : len(seq)] = torch.tensor(seq)
        att[i, : len(seq)] = 1
        text[i, start: len(seq)] = True
    return ids, att, text


class DPFTModule(nn.Module):
    """LM (with LoRA) + optional classifier head; ``forward`` gives per-document losses."""

    def __init__(self, lm: nn.Module, n_classes: int = 0):
        super().__init__()
        self.lm = lm
        hidden = lm.config.hidden_size
        self.head = nn.Linear(hidden, n_classes) if n_classes else None

    def lm_losses(self, ids, att, text):
        out = self.lm(input_ids=ids, attention_mask=att)
        logits = out.logits[:, :-1].float()
        target = ids[:, 1:]
        mask = text[:, 1:].float()
        ce = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1),
                                         reduction="none").view(target.shape)
        return (ce * mask).sum(1) / mask.sum(1).clamp(min=1)

    def pooled(self, ids, att, text):
        hidden = self.lm(input_ids=ids, attention_mask=att, output_hidden_states=True
                         ).hidden_states[-1]
        m = text.unsqueeze(-1).float()
        return (hidden.float() * m).sum(1) / m.sum(1).clamp(min=1)

    def forward(self, ids, att, text, cls_ids=None, cls_att=None, cls_text=None, labels=None,
                cls_weight: float = 1.0):
        loss = self.lm_losses(ids, att, text)
        if self.head is not None and labels is not None:
            logits = self.head(self.pooled(cls_ids, cls_att, cls_text))
            loss = loss + cls_weight * nn.functional.cross_entropy(logits, labels,
                                                                   reduction="none")
        return loss


def add_lora(lm, cfg: DPFTConfig):
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0,
                      target_modules=list(cfg.lora_targets), task_type="CAUSAL_LM")
    with warnings.catch_warnings():  # peft asks transformers' deprecated property
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated",
                                category=FutureWarning)
        return get_peft_model(lm, lora)


@dataclass
class TrainPlan:
    """What the accountant was told; fixed before the first step, kept on resume."""

    sampling_rate: float
    steps: int
    noise_multiplier: float | None  # None: no DP (ε = ∞)
    extra: dict = field(default_factory=dict)


def train(module: DPFTModule, tok, docs: list[tuple[list[int], int]], plan: TrainPlan,
          cfg: DPFTConfig, *, cls_docs: list[tuple[list[int], int]] | None = None,
          labels: Sequence[int] | None = None, checkpoint_dir: Path | None = None,
          live_epsilon: Callable[[int], float] | None = None, progress: bool = True) -> dict:
    """Run (or resume) the planned DP-SGD steps; returns a small training log."""
    with warnings.catch_warnings():
        for msg in ("Full backward hook", "Optimal order", "Using a non-full backward hook"):
            warnings.filterwarnings("ignore", message=msg)
        return _train(module, tok, docs, plan, cfg, cls_docs=cls_docs, labels=labels,
                      checkpoint_dir=checkpoint_dir, live_epsilon=live_epsilon,
                      progress=progress)


def _train(module, tok, docs, plan, cfg, *, cls_docs, labels, checkpoint_dir, live_epsilon,
           progress) -> dict:
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    params = [p for p in module.parameters() if p.requires_grad]
    gsm = GradSampleModule(module, loss_reduction="sum")
    base_opt = torch.optim.AdamW(params, lr=cfg.learning_rate)
    private = plan.noise_multiplier is not None
    # secure_mode: Opacus draws each noise coordinate as the sum of four Gaussians / 2
    # (Holohan & Braghin 2021), against floating-point attacks on the Gaussian sampler
    opt = (DPOptimizer(base_opt, noise_multiplier=plan.noise_multiplier,
                       max_grad_norm=cfg.max_grad_norm, expected_batch_size=cfg.batch_size,
                       loss_reduction="mean", generator=secret_generator(), secure_mode=True)
           if private else base_opt)
    gen = secret_generator()  # Poisson sampling of documents
    start = 0
    ckpt = checkpoint_dir / "train_state.pt" if checkpoint_dir else None
    if ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        if state["plan"] != asdict(plan):
            raise ValueError(f"{ckpt}: checkpoint of a different training plan; remove it or "
                             "use another checkpoint folder")
        module.load_state_dict(state["trainable"], strict=False)
        base_opt.load_state_dict(state["optimizer"])
        start = state["step"]
    n = len(docs)
    pad = tok.pad_token_id
    bar = _progress(progress, plan.steps, start)
    eps_shown = float("nan")
    for step in range(start, plan.steps):
        chosen = torch.nonzero(torch.rand(n, generator=gen) < plan.sampling_rate).flatten()
        if not private and len(chosen) == 0:
            chosen = torch.randint(0, n, (1,), generator=gen)
        opt.zero_grad(set_to_none=True)
        if len(chosen) == 0:
            for p in params:  # an empty Poisson batch: the step is noise only
                p.grad_sample = torch.zeros((1, *p.shape))
        else:
            idx = chosen.tolist()
            ids, att, text = pad_batch([docs[i] for i in idx], pad)
            kw = {}
            if module.head is not None and cls_docs is not None and labels is not None:
                cids, catt, ctext = pad_batch([cls_docs[i] for i in idx], pad)
                kw = dict(cls_ids=cids, cls_att=catt, cls_text=ctext,
                          labels=torch.tensor([labels[i] for i in idx]),
                          cls_weight=cfg.cls_weight)
            losses = gsm(ids, att, text, **kw)
            (losses.sum() if private else losses.mean()).backward()
        opt.step()
        done = step + 1
        if live_epsilon is not None and (done % cfg.epsilon_refresh == 0 or done == plan.steps
                                         or math.isnan(eps_shown)):
            eps_shown = live_epsilon(done)
        if bar is not None:
            bar.update(done, eps_shown)
        if ckpt is not None and (done % cfg.checkpoint_every == 0 or done == plan.steps):
            _save(ckpt, module, base_opt, done, plan)
    if bar is not None:
        bar.close()
    for p in params:
        p.grad_sample = None
    gsm._close()
    return {"steps": plan.steps, "resumed_at": start}


def trainable_state(module: nn.Module) -> dict:
    names = {n for n, p in module.named_parameters() if p.requires_grad}
    return {k: v.detach().clone() for k, v in module.state_dict().items() if k in names}


def _save(path: Path, module, opt, step, plan) -> None:
    """Checkpoint: trained weights and optimiser moments (post-processing of the noisy
    gradients) and the step count; no sampler state, seed or loss."""
    tmp = path.with_suffix(".tmp")
    torch.save({"trainable": trainable_state(module), "optimizer": opt.state_dict(),
                "step": step, "plan": asdict(plan)}, tmp)
    tmp.replace(path)


#: byte range of the 624 Mersenne-Twister words in a CPU ``torch.Generator`` state
#: (``CPUGeneratorImplState``: seed u64, left i32, seeded i32, next u64, then the words,
#: each stored in a u64)
_MT_WORDS = slice(24, 24 + 624 * 8)
_STATE_BYTES = 5056


def secret_generator() -> torch.Generator:
    """A CPU generator whose whole Mersenne-Twister state comes from ``os.urandom``.

    ``torch.Generator().manual_seed(s)`` keeps only the low 32 bits of ``s``: 2³² seeds
    could be tried. Here the 624 state words (19,968 bits) are drawn from the OS, and
    nothing public (``--seed``, the global torch generator) touches them. Mersenne Twister is
    not a cryptographic generator; see docs/dpft.md for what this does and does not cover.
    """
    g = torch.Generator().manual_seed(0)
    state = g.get_state()
    if state.numel() != _STATE_BYTES:  # a different torch layout: refuse, never guess
        raise RuntimeError(f"unexpected torch.Generator state size {state.numel()}; "
                           f"dptext knows the {_STATE_BYTES}-byte layout")
    words = torch.frombuffer(bytearray(os.urandom(624 * 4)), dtype=torch.int32)
    state[_MT_WORDS] = words.to(torch.int64).bitwise_and(0xFFFFFFFF).view(torch.uint8)
    g.set_state(state)
    if not torch.equal(g.get_state()[_MT_WORDS], state[_MT_WORDS]):  # not read as the words
        raise RuntimeError("torch.Generator's state layout is not the one dptext knows")
    return g


class _Bar:
    """The progress bar: steps and the ε spent so far. No loss, not even a running mean:
    batch losses are exact statistics of private batches, and a terminal's stderr ends up
    in log files."""

    def __init__(self, total: int, start: int):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, initial=start, desc="DP fine-tuning", unit="step")

    def update(self, done: int, eps: float) -> None:
        self.bar.n = done
        self.bar.set_postfix_str(f"ε={eps:.3g}", refresh=True)

    def close(self) -> None:
        self.bar.close()


def _progress(on: bool, total: int, start: int) -> _Bar | None:
    return _Bar(total, start) if on else None
