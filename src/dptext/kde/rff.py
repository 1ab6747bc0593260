"""Random Fourier features for the Gaussian kernel over sequences of embeddings.

A sketch over sequences of ``blocks`` embeddings (each unit-norm, dimension d)
draws ω_k ~ N(0, I_{d·blocks}) and β_k ~ U[0, 2π) for k = 1..I and uses

    f_k(z) = √2 · cos(√2 · ω_kᵀ z + β_k),   z = scale · [x_1, …, x_blocks],

so that E[f_k(x) f_k(y)] = exp(−scale² ‖x − y‖²) (Rahimi & Recht 2007; the DP-KDE of
Wagner et al. 2023). ``scale = 1 / (bandwidth · √blocks)``: a whole sequence has norm
1/bandwidth whatever its length, as in appendix B.2 of the DP-KPS paper (u = 1/ℓ).

The projection is linear and splits over blocks, ωᵀ[x_1, …, x_B] = Σ_b ω_bᵀ x_b, so
the phase of a prefix is computed once and the phase of each candidate term once
per block position; a zero-padded block contributes nothing. ω and β are drawn
from the run's non-private generator: they do not depend on the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SQRT2 = float(np.sqrt(2.0))
FEATURE_BOUND = SQRT2  # |f_k(z)| <= √2: the per-coordinate contribution bound of a document


@dataclass(frozen=True)
class FourierFeatures:
    """ω (blocks, d, I) pre-multiplied by √2·scale, and β (I,)."""

    omega: np.ndarray
    beta: np.ndarray
    bandwidth: float

    @classmethod
    def draw(cls, dim: int, blocks: int, features: int, bandwidth: float,
             rng: np.random.Generator) -> FourierFeatures:
        if bandwidth <= 0 or features < 1 or blocks < 1:
            raise ValueError("bandwidth must be > 0, features and blocks >= 1")
        scale = 1.0 / (bandwidth * np.sqrt(blocks))
        omega = rng.standard_normal((blocks, dim, features), dtype=np.float32)
        omega *= np.float32(SQRT2 * scale)
        beta = rng.uniform(0.0, 2.0 * np.pi, features).astype(np.float32)
        return cls(omega=omega, beta=beta, bandwidth=bandwidth)

    @property
    def blocks(self) -> int:
        return self.omega.shape[0]

    @property
    def features(self) -> int:
        return self.omega.shape[2]

    def block_phase(self, embeddings: np.ndarray, block: int) -> np.ndarray:
        """√2·scale·ω_blockᵀ x for each row x of ``embeddings`` (n, d) → (n, I)."""
        return embeddings @ self.omega[block]

    def sequence_phase(self, embeddings: np.ndarray, sequences: np.ndarray) -> np.ndarray:
        """Phase (without β) of sequences of term indices (n, ≤ blocks); −1 = zero padding."""
        n, length = sequences.shape
        phase = np.zeros((n, self.features), dtype=np.float32)
        for b in range(min(length, self.blocks)):  # loop over block positions, not data
            col = sequences[:, b]
            present = col >= 0
            if present.all():
                phase += self.block_phase(embeddings[col], b)
            elif present.any():
                phase[present] += self.block_phase(embeddings[col[present]], b)
        return phase

    def feature_values(self, phase: np.ndarray) -> np.ndarray:
        """f(z) = √2 cos(phase + β), the released features' per-document values."""
        return SQRT2 * np.cos(phase + self.beta)
