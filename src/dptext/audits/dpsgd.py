"""White-box audit of one DP-SGD step: Opacus's per-sample clipping and noise, with the
noise multiplier from ``privacy.dpsgd.calibrate_dp_sgd``.

The model is a linear layer with the loss −⟨w, x⟩, so every example's gradient is −x
whatever the weights: a fixed vector the auditor knows. D holds a few examples; D' adds a
canary whose gradient points along a fixed unit direction u with norm 3C (clipping must
cut it to C). One full-batch step (sampling rate 1) is then the Gaussian mechanism with
sensitivity C and noise σ·C; the statistic is the projection of the step's update on u
(its likelihood ratio). Negative controls: ``half-noise`` passes σ/2 to Opacus while the
claim keeps σ; ``unbounded`` turns clipping off (the clipping bound is raised to 10⁶·C and
the noise multiplier lowered to keep the noise at σ·C), so the canary moves the update by
3C.
"""

from __future__ import annotations

import secrets
import time
import warnings

import numpy as np

from dptext.audits.common import audit_claim
from dptext.privacy import PrivacyLedger
from dptext.privacy.auditing import AuditRow

CLIP = 1.0
DIM = 4
BATCH = 8  # the public expected batch size (the examples of D)
UNCLIPPED = 1e6  # the clipping bound that "clipping off" uses


def _examples(canary: bool) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, DIM))
    x /= np.linalg.norm(x, axis=1, keepdims=True) * 0.5  # norm 2: every one is clipped
    if canary:
        x = np.vstack([x, -3 * CLIP * np.eye(DIM)[0]])  # gradient = −x = +3C·u, u = e_0
    return x.astype(np.float32)


def audit_dpsgd(epsilon: float = 2.0, delta: float = 1e-2, *, runs: int = 3000,
                confidence: float = 0.95, broken: str = "none") -> AuditRow:
    import torch
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    from dptext.audits.common import canary_copies
    from dptext.privacy.dpsgd import calibrate_dp_sgd

    started = time.perf_counter()
    canary_copies(broken)  # validates the variant name
    record = calibrate_dp_sgd(epsilon_total=epsilon, delta=delta, sampling_rate=1.0, steps=1,
                              max_grad_norm=CLIP, name="DP-SGD (audit)")
    sigma, clip = record.noise_multiplier, CLIP
    if broken == "half-noise":
        sigma /= 2
    elif broken == "unbounded":
        sigma, clip = sigma * CLIP / UNCLIPPED, UNCLIPPED
    # the noise comes from a generator seeded from OS entropy that no public seed touches
    noise_gen = torch.Generator().manual_seed(secrets.randbits(63))
    samples: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, canary in (("D", False), ("D'", True)):
            x = torch.from_numpy(_examples(canary))
            model = torch.nn.Linear(DIM, 1, bias=False)
            gsm = GradSampleModule(model, loss_reduction="sum")
            opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0), noise_multiplier=sigma,
                              max_grad_norm=clip, expected_batch_size=BATCH,
                              loss_reduction="mean", generator=noise_gen)
            draws = np.empty(runs)
            for i in range(runs):
                before = model.weight.detach().clone()
                opt.zero_grad(set_to_none=True)
                (-gsm(x).sum()).backward()  # loss −⟨w, x⟩ per example, summed
                opt.step()
                # SGD step w ← w − lr·g: the update −g projected on u = e_0, rescaled to sums
                draws[i] = -float((model.weight.detach() - before)[0, 0]) * BATCH
            gsm._close()
            samples[name] = draws
    ledger = PrivacyLedger()
    ledger.record(record)
    return audit_claim(
        ledger, "DP-SGD, one Opacus step (clip C = 1, full batch)",
        [(samples["D"], samples["D'"], "update projected on the canary's gradient direction")],
        confidence=confidence, started=started, broken=broken)
