"""Which part of the data validates the fit (``--holdout``), and whether that part is honest.

``--holdout`` is ``last`` or ``first`` (the last or first quarter of each recording; ``last:0.3``
or a bare fraction sets the share), or ``kfold:N``: the data cut into N contiguous blocks, each
predicted by a fit on the others; the error reported is that of these out-of-block predictions.

An excitation that repeats (a Fourier series of period T) replays in any later period the
states the fit saw: a held-out part that is not its own trajectory then gives an optimistic
error.  :func:`repeat_period` finds T from the positions' autocorrelation (or from the
excitation file) and :func:`repeat_warning` says so when the fit spans a whole period.
"""

from dataclasses import dataclass

import numpy as np

from .recording import RecordingError

DEFAULT_FRACTION = 0.25
PERIODIC = 0.9            # autocorrelation of the positions at the period above which the motion repeats
MAX_FOLDS = 50
MOVING = 1e-6             # rad or m: a joint whose positions vary less stands still


@dataclass(frozen=True)
class Holdout:
    """``kind`` 'last', 'first' or 'kfold'; ``fraction`` held out of each recording; ``folds``."""

    kind: str = "last"
    fraction: float = DEFAULT_FRACTION
    folds: int = 0


def parse_holdout(text):
    """A :class:`Holdout` from ``last``, ``first``, ``last:0.3``, ``0.3`` (= ``last:0.3``) or ``kfold:5``."""
    text = str(text).strip().lower()
    kind, _, value = text.partition(":")
    try:
        if kind == "kfold":
            folds = int(value)
            if not 2 <= folds <= MAX_FOLDS:
                raise ValueError
            return Holdout("kfold", 1 / folds, folds)
        if kind in ("last", "first"):
            fraction = float(value) if value else DEFAULT_FRACTION
        else:
            kind, fraction = "last", float(text)
        if not 0 < fraction < 1:  # NaN fails too
            raise ValueError
    except ValueError:
        raise RecordingError(f"--holdout {text!r}: give last, first, last:F or first:F with F in (0, 1), a fraction F, "
                             f"or kfold:N with N in 2..{MAX_FOLDS}") from None
    return Holdout(kind, fraction)


def splits(holdout, sources):
    """[(fit rows, held rows)]: boolean masks over samples whose recording index is ``sources``."""
    count = len(sources)
    if holdout.kind == "kfold":
        edges = np.linspace(0, count, holdout.folds + 1).round().astype(int)
        masks = []
        for k in range(holdout.folds):
            held = np.zeros(count, dtype=bool)
            held[edges[k]:edges[k + 1]] = True
            masks.append((~held, held))
        return masks
    held = np.zeros(count, dtype=bool)
    for source in np.unique(sources):
        rows = np.flatnonzero(sources == source)
        size = int(round(len(rows) * holdout.fraction))
        held[rows[-size:] if holdout.kind == "last" else rows[:size]] = True
    return [(~held, held)]


def describe(holdout, sources):
    if holdout.kind == "kfold":
        return f"{holdout.folds} contiguous blocks, each predicted by a fit on the others"
    return f"the {holdout.kind} {100 * holdout.fraction:.0f} % of {', '.join(sources)} (held out)"


def repeat_period(t, q, shortest=1.0):
    """(period s, autocorrelation) of positions (N, n) on a uniform grid ``t`` whose motion repeats,
    or (None, best autocorrelation): the highest peak of the joints' mean normalised
    autocorrelation at lags from ``shortest`` s, and after it first fell below 0.5, to half the
    duration (by FFT)."""
    N = len(t)
    if N < 8:
        return None, 0.0
    dt = float(t[1] - t[0])
    x = q - q.mean(axis=0)
    size = 1 << int(np.ceil(np.log2(2 * N)))
    spectrum = np.fft.rfft(x, size, axis=0)
    acf = np.fft.irfft(np.abs(spectrum) ** 2, size, axis=0)[:N]
    acf = acf / np.maximum(acf[0], 1e-300) * N / (N - np.arange(N))[:, None]  # unbiased: each lag's own overlap
    moving = np.std(x, axis=0) > MOVING
    mean = acf[:, moving].mean(axis=1) if moving.any() else np.zeros(N)
    dropped = np.flatnonzero(mean[: N // 2] < 0.5)  # a return counts after the motion has left its start
    if len(dropped) == 0:
        return None, 0.0
    lags = np.arange(max(1, int(shortest / dt), int(dropped[0])), N // 2)
    if len(lags) == 0:
        return None, 0.0
    best = lags[int(np.argmax(mean[lags]))]
    # the normalisation blurs the peak by a sample or two: the lag where the motion best repeats
    near = range(max(1, best - 3), min(N - 1, best + 4))
    best = min(near, key=lambda lag: float(np.mean((x[lag:] - x[:-lag]) ** 2)))
    return (best * dt, float(mean[best])) if mean[best] >= PERIODIC else (None, float(mean[best]))


def repeat_warning(period, how, fit_duration, label):
    """The warning when a fit spanning ``fit_duration`` s saw a whole ``period`` the held-out part repeats."""
    if period is None or fit_duration < period:
        return None
    return (f"the validation data ({label}) repeat the excitation's period of {period:.4g} s ({how}) that the fit "
            "saw: the held-out error is optimistic; validate on a recording of another trajectory "
            "(robot-dynamics excite --seed 1, then identify ... --validate RECORDING2)")
