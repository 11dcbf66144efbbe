"""Caller arrays of any batch shape ``(..., n)`` to the kernels' ``(count, n)`` layout and back."""

import math

import numpy as np

FLOAT64 = np.dtype(np.float64)


def as_states(model, value, name):
    """``value`` as a C-contiguous float array of shape ``(count, n)`` and its batch shape.

    Raises ValueError on a wrong length.  A single state already in the kernels' layout (the
    1 kHz case) takes the short path: no conversion, no copy.
    """
    # (numpy's float64 dtype is one object: ``is`` and ``ndim``/``len`` are the cheapest exact tests)
    if (type(value) is np.ndarray and value.dtype is FLOAT64 and value.ndim == 1 and len(value) == model.nv
            and value.flags.c_contiguous):
        return value[None], ()
    array = np.asarray(value, dtype=np.float64)
    shape = array.shape
    if not shape or shape[-1] != model.nv:
        raise ValueError(f"{name} must have {model.nv} values per state (model.joint_names order), got shape {shape}")
    return np.ascontiguousarray(array.reshape(math.prod(shape[:-1]), model.nv)), shape[:-1]


def matching(model, value, name, batch):
    """:func:`as_states` of ``value``, which must have the batch shape ``batch`` (that of ``q``)."""
    array, shape = as_states(model, value, name)
    if shape != batch:
        raise ValueError(f"{name} has batch shape {shape} but q has {batch}")
    return array


def unbatch(result, batch):
    """Give a kernel's ``(count, ...)`` result the caller's batch shape."""
    return result[0] if batch == () else result.reshape(batch + result.shape[1:])
