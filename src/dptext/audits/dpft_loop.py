"""Audit of DP-SGD through dpft's real training loop (``generators.dpft.train.train``).

``audit_dpft_training`` runs the function ``DPFineTuneGenerator.fit`` calls, with its
Poisson sampling, its empty-batch steps (noise only), Opacus's ``secure_mode`` noise and
the ``secret_generator``s drawn from OS entropy, on dptext's tiny test model
(``dpft.model.tiny_model``: 2 layers of SmolLM2's architecture, random weights) with LoRA
(r = 1) on ``q_proj``/``v_proj``: the adapter is what the loop trains and Opacus clips.
The noise multiplier comes from ``privacy.dpsgd.calibrate_dp_sgd`` for the planned
(q, steps), as in dpft's plan, and the claim is the ledger's. What is shrunk, for
~40 ms a run: the model (no weights to load), the steps (4, at q = 0.8), the batch (1
expected). The learning rate is small (10⁻⁴) so that the adapter barely moves and the
canary's gradient keeps its direction over the steps (at 10⁻² the canary's push drifted
and half the noise raised the statistic's shift 1.3×, not 2×). ε = 0.5, δ = 0.2, 800
trainings a side: at ε = 1 half the noise was not caught with 300.

D is the empty corpus (every Poisson batch is empty: the steps are noise only); D' holds
one canary document. The auditor knows the initial adapter and the canary's gradient g
there (clipped to C in every step that samples it); the statistic is the final adapter's
move along −g (the direction the canary pushes AdamW). Negative controls: ``half-noise``
trains with σ/2 while the ledger records σ; ``unbounded`` turns clipping off (the clipping
bound is raised to 10⁶·C and σ lowered to keep the noise at σ·C): the canary's gradient,
far above C, moves the adapter by its full norm.
"""

from __future__ import annotations

import copy
import time
import warnings

import numpy as np

from dptext.audits.common import audit_claim, canary_copies
from dptext.privacy import PrivacyLedger
from dptext.privacy.auditing import AuditRow

CLIP = 1e-2  # far below the canary's gradient norm (~4): clipping must cut it
UNCLIPPED = 1e6  # the clipping bound that "clipping off" uses, in units of CLIP
CANARY = "zebra quantum fjord"


def _module(max_grad_norm: float):
    """The tiny model with LoRA inside dpft's ``DPFTModule``, and the loop's config."""
    from dptext.generators.dpft.model import tiny_model
    from dptext.generators.dpft.train import DPFTConfig, DPFTModule, add_lora

    cfg = DPFTConfig(batch_size=1, learning_rate=1e-4, max_grad_norm=max_grad_norm,
                     lora_r=1, max_length=32)
    lm, tok = tiny_model()
    return DPFTModule(add_lora(lm, cfg)), tok, cfg


def _trainable(module):
    import torch

    return torch.cat([p.detach().flatten() for p in module.parameters() if p.requires_grad])


def _push(module, tok, canary) -> np.ndarray:
    """The unit direction the canary pushes the adapter at its initial weights: −g/‖g‖."""
    from dptext.generators.dpft.train import pad_batch

    module.zero_grad(set_to_none=True)
    module(*pad_batch(canary, tok.pad_token_id)).sum().backward()
    g = np.concatenate([p.grad.detach().numpy().ravel() for p in module.parameters()
                        if p.requires_grad])
    module.zero_grad(set_to_none=True)
    return -g / np.linalg.norm(g)


def audit_dpft_training(epsilon: float = 0.5, delta: float = 0.2, *, runs: int = 800,
                        sampling_rate: float = 0.8, steps: int = 4, confidence: float = 0.95,
                        broken: str = "none") -> AuditRow:
    """dpft's ``train`` on D = ∅ and D' = {canary} (above), ``runs`` trainings a side."""
    from dptext.generators.dpft.train import TrainPlan, encode, train
    from dptext.privacy.dpsgd import calibrate_dp_sgd

    started = time.perf_counter()
    canary_copies(broken)  # validates the variant name
    record = calibrate_dp_sgd(epsilon_total=epsilon, delta=delta, sampling_rate=sampling_rate,
                              steps=steps, max_grad_norm=CLIP, name="DP-SGD fine-tuning")
    sigma, clip = record.noise_multiplier, CLIP
    if broken == "half-noise":
        sigma /= 2
    elif broken == "unbounded":
        sigma, clip = sigma / UNCLIPPED, CLIP * UNCLIPPED
    module, tok, cfg = _module(clip)
    canary = encode(tok, [""], [CANARY], cfg.max_length)
    push = _push(module, tok, canary)
    initial = copy.deepcopy(module.state_dict())
    start = _trainable(module).numpy()
    plan = TrainPlan(sampling_rate=sampling_rate, steps=steps, noise_multiplier=sigma)
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, docs in (("D", []), ("D'", canary)):
            for _ in range(runs):
                module.load_state_dict(initial)
                train(module, tok, docs, plan, cfg, progress=False)
                samples[name].append(float((_trainable(module).numpy() - start) @ push))
    ledger = PrivacyLedger()
    ledger.record(record)
    return audit_claim(
        ledger, f"DP-SGD through dpft's training loop (Poisson q = {sampling_rate:g}, {steps} "
        "steps, secure noise, tiny model + LoRA)",
        [(np.array(samples["D"]), np.array(samples["D'"]),
          "final adapter's move along the canary's gradient")],
        confidence=confidence, started=started, broken=broken)
