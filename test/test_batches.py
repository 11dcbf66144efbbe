"""robot_dynamics.rigid_body.batches: any batch shape (..., n) to the kernels' (count, n) and back, the
1 kHz short path without a copy, and wrong shapes refused by name."""

import types

import numpy as np
import pytest

from robot_dynamics.rigid_body.batches import as_states, matching, unbatch

MODEL = types.SimpleNamespace(nv=3)


def test_one_state_in_the_kernels_layout_is_taken_without_a_copy():
    q = np.array([0.1, 0.2, 0.3])
    states, batch = as_states(MODEL, q, "q")
    assert batch == () and states.shape == (1, 3)
    assert np.shares_memory(states, q)


@pytest.mark.parametrize("value", [[0.1, 2, 3], np.arange(3, dtype=np.float32), np.arange(6.0)[::2]])
def test_other_single_states_are_converted_to_float64_c_contiguous(value):
    states, batch = as_states(MODEL, value, "q")
    assert batch == () and states.dtype == np.float64 and states.flags.c_contiguous
    np.testing.assert_array_equal(states[0], np.asarray(value, dtype=np.float64))


def test_a_batch_is_flattened_in_order_and_unbatched_back():
    q = np.arange(2 * 4 * 3, dtype=float).reshape(2, 4, 3)
    states, batch = as_states(MODEL, q, "q")
    assert batch == (2, 4) and states.shape == (8, 3)
    np.testing.assert_array_equal(states[5], q[1, 1])
    result = states * 10.0  # a kernel's (count, n) result
    np.testing.assert_array_equal(unbatch(result, batch), q * 10.0)
    matrices = np.arange(8 * 3 * 3.0).reshape(8, 3, 3)  # (count, n, n) results keep their trailing shape
    assert unbatch(matrices, batch).shape == (2, 4, 3, 3)
    np.testing.assert_array_equal(unbatch(matrices, batch)[1, 2], matrices[6])
    np.testing.assert_array_equal(unbatch(states[:1], ()), q[0, 0])


@pytest.mark.parametrize("value", [1.0, [], [1.0, 2.0], np.zeros((2, 4))])
def test_a_wrong_length_is_refused_naming_the_argument(value):
    with pytest.raises(ValueError, match=r"qd must have 3 values per state"):
        as_states(MODEL, value, "qd")


def test_matching_needs_the_batch_shape_of_q():
    qd = np.zeros((2, 3))
    np.testing.assert_array_equal(matching(MODEL, qd, "qd", (2,)), qd)
    with pytest.raises(ValueError, match=r"qdd has batch shape \(2,\) but q has \(\)"):
        matching(MODEL, qd, "qdd", ())
