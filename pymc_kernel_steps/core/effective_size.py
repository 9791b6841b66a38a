"""The effective sample size of one chain's states, coordinate by coordinate: how many
independent draws their autocorrelation is worth (Geyer's initial monotone sequence estimator on
the chain split in halves, as Stan's and ArviZ's, without rank normalisation)."""

from __future__ import annotations

import numpy as np

__all__ = ["effective_sample_sizes"]


def _autocovariances(centred: np.ndarray) -> np.ndarray:
    """The autocovariances (divided by n) of each column of ``centred`` at lags 0 to n − 1
    (FFT, zero-padded so that the correlation is not circular)."""
    n = centred.shape[0]
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=0)
    return np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=0)[:n] / n


def effective_sample_sizes(states) -> np.ndarray:
    """The effective sample size of each coordinate of ``states`` (an ``(n, d)`` array of one
    chain's successive states), split in two halves treated as two chains, as Stan's and
    ArviZ's split estimators do, so that a drift between the halves (a chain still finding its
    way) lowers it: ``2 n' / τ`` with the integrated autocorrelation time ``τ = −1 + 2 Σ_k P_k``
    over Geyer's pairs ``P_k = ρ_{2k} + ρ_{2k+1}``, summed while positive and made monotone, and
    ``ρ_t = 1 − (W − mean acov_t) / var⁺`` from the halves' autocovariances (W their mean
    variance, var⁺ adding the variance between their means); capped at ``n log₁₀ n`` as ArviZ
    does. A coordinate that never moved has 1 (the chain's states are one state there)."""
    states = np.asarray(states, dtype=float)
    if states.ndim != 2 or states.shape[0] < 8:
        raise ValueError(f"`states` must be an (n, d) array with n ≥ 8, got shape {states.shape}.")
    half = states.shape[0] // 2
    halves = np.stack([states[:half], states[half : 2 * half]])  # (2, n', d)
    n, d = half, states.shape[1]
    sizes = np.ones(d)
    moved = np.ptp(states, axis=0) > 0.0
    if not moved.any():
        return sizes
    halves = halves[:, :, moved]
    means = halves.mean(axis=1)  # (2, d')
    autocovariance = np.stack([_autocovariances(h - m) for h, m in zip(halves, means, strict=True)])
    within = autocovariance[:, 0].mean(axis=0) * n / (n - 1)
    var_plus = within * (n - 1) / n + means.var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (within - autocovariance.mean(axis=0)) / var_plus  # (n, d')
    rho[0] = 1.0
    pairs = rho[: n - n % 2].reshape(n // 2, 2, -1).sum(axis=1)  # P_k, shape (n // 2, d')
    positive = np.cumprod(pairs > 0.0, axis=0).astype(bool)  # the initial positive sequence
    monotone = np.minimum.accumulate(np.where(positive, pairs, np.inf), axis=0)
    tau = -1.0 + 2.0 * np.where(positive, monotone, 0.0).sum(axis=0)
    total = 2 * n
    sizes[moved] = np.minimum(
        total / np.maximum(tau, 1.0 / np.log10(total)), total * np.log10(total)
    )
    return sizes
