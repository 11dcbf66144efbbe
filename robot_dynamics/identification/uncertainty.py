"""Standard deviations of the base parameters that hold for correlated, filtered residuals.

The textbook covariance ``s^2 (B^T B)^-1`` assumes white residuals.  Ours are not: the
torques pass a low-pass filter and are decimated (neighbouring samples share noise), and what
the model misses (friction at low speed, a drive's ripple) lasts much longer than a sample.
Treated as white they give standard deviations several times too small.

We use the autocorrelation-corrected (Newey-West) covariance of least squares::

    Cov = (B^T B)^-1 S (B^T B)^-1,   S = sum_{|l| <= L} (1 - |l| / (L + 1)) sum_k g_k g_{k+l}^T

with ``g_k = B_k^T e_k`` the score of sample k (its rows over the joints, weighted, times their
residuals) and ``L`` the lag over which the residuals stay correlated, read off their
autocorrelation (:func:`correlation_lag`).  Chosen over a block bootstrap because it is
deterministic (the same data give the same figures on every run), needs no refits, and its
Bartlett weights keep ``S`` positive semi-definite.
"""

import numpy as np

DECORRELATED = 0.05   # the residuals' autocorrelation below which a lag counts as uncorrelated
LAG_FACTOR = 3        # the Bartlett window spans this many correlation lengths (its weights taper)


def correlation_lag(residuals):
    """The first lag (samples) at which the joints' mean residual autocorrelation falls below
    ``DECORRELATED``, times ``LAG_FACTOR`` (at most N / 4); residuals (N, n) in time order."""
    N = len(residuals)
    x = residuals - residuals.mean(axis=0)
    size = 1 << int(np.ceil(np.log2(2 * N)))
    power = np.abs(np.fft.rfft(x, size, axis=0)) ** 2
    acf = np.fft.irfft(power, size, axis=0)[:N]
    mean = (acf / np.maximum(acf[0], 1e-300)).mean(axis=1)
    below = np.flatnonzero(mean[: max(2, N // 4)] < DECORRELATED)
    length = int(below[0]) if len(below) else N // 4
    return int(min(max(1, LAG_FACTOR * length), max(1, N // 4)))


def newey_west_covariance(B, residuals, lag=None):
    """(covariance (b, b), lag) of the least-squares fit of weighted rows ``B`` (N, n, b) with
    weighted residuals (N, n) in time order (module docstring)."""
    lag = correlation_lag(residuals) if lag is None else lag
    scores = np.einsum("knb,kn->kb", B, residuals)
    S = scores.T @ scores
    for l in range(1, lag + 1):
        gamma = scores[l:].T @ scores[:-l]
        S += (1 - l / (lag + 1)) * (gamma + gamma.T)
    bread = np.linalg.inv(np.einsum("knb,knc->bc", B, B))
    return bread @ S @ bread, lag
