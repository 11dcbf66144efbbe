"""The seeds' other derivations of the equations of motion, as independent cross-checks of the core.

The core (``dynamics.py``) runs on recursive Newton-Euler.  Here the same
``tau = M(q) qdd + C(q, qd) qd + g(q)`` comes out of the other routes the seeds describe:

- :func:`lagrange_euler_terms`: Lagrange-Euler with 4x4 homogeneous transforms (Milićević et
  al. §2, eqs. 2.3-2.15), ``O(n^4)``;
- :func:`closed_form_terms`: the matrix assembly of Lynch & Park §9.4 (eqs. 9.72-9.84),
  ``M = A^T L^T G L A`` with ``L = (I - Gamma)^-1`` (``G``: the spatial inertias, ``Gamma(q)``: the
  parent adjoints);
- :func:`christoffel_symbols` / :func:`christoffel_coriolis_matrix`: the Lagrangian route through
  the Christoffel symbols of ``M`` (Lynch & Park eqs. 9.86-9.87, Spong eq. 6.63);
- :func:`dalembert_terms`: the generalized D'Alembert equations (Milićević et al. §4, eqs.
  4.1-4.5), chains of revolute joints only;
- :func:`inertia_bounds`: Spong's bounds ``lambda_min I <= M(q) <= lambda_max I``, over samples.

None of them calls the core's dynamics kernels: each builds its own 4x4 link transforms
``T_{parent,i} = M_i e^{[A_i] q_i}`` (Lynch & Park eqs. 9.50 and 3.88).
They are written to be read against the equations, not to be fast, and take one state
(``q``, ``qd`` of shape ``(n,)``): no batches.  Mimic joints are followed by the affine map
``q_joints = E q + o`` (:meth:`RobotModel.joint_map`, so ``M = E^T M_joints E``) everywhere except in
D'Alembert's chains.
"""

import numpy as np

from .dynamics import mass_matrix
from .batches import as_states
from .kinematics import _homogeneous
from .model import FIRST_MOMENT, INERTIA, KIND, MASS, ORIGIN_P, ORIGIN_R, PARENT, REVOLUTE, SCREW
from ..spatial import spatial_inertia_matrix

COMPLEX_STEP = 1e-20  # Im M(q + i h e_k) / h = dM/dq_k to round-off: no truncation error at this h


# ----------------------------------------------------------------------------- shared pieces

def _require_joints(model):
    if model.nv == 0:
        raise ValueError(f"{model.name!r} has no moving joints: it has no equations of motion")


def _state(model, value, name):
    """One finite state of ``model.nv`` values (these cross-checks take no batches)."""
    _require_joints(model)
    states, batch = as_states(model, value, name)
    if batch != ():
        raise ValueError(f"{name}: the cross-check formulations take one state of {model.nv} values, not a batch")
    if not np.all(np.isfinite(states)):
        raise ValueError(f"{name} contains NaN or inf")
    return states[0]


def _skew(v):
    """``[v]``, the 3x3 matrix of ``v x`` (Lynch & Park eq. 3.30)."""
    x, y, z = v
    return np.array([[0 * x, -z, y], [z, 0 * x, -x], [-y, x, 0 * x]])  # 0 * x keeps a complex dtype


def _screw_matrix(A):
    """``[A] = [[ [omega], v ], [0, 0]]``, the 4x4 form of a twist (Lynch & Park eq. 3.70)."""
    S = np.zeros((4, 4))
    S[:3, :3] = _skew(A[:3])
    S[:3, 3] = A[3:]
    return S


def _screw_exponentials(screws, theta):
    """``e^{[A] theta}`` for unit screws ``A = (w, v)`` (Lynch & Park eq. 3.88), shape ``(len(theta), 4, 4)``.

    ``R = I + sin(theta) [w] + (1 - cos(theta)) [w]^2`` and
    ``p = (I theta + (1 - cos(theta)) [w] + (theta - sin(theta)) [w]^2) v``; a prismatic joint
    (``w = 0``) gives ``R = I``, ``p = v theta``.  Elementwise, so ``theta`` may be complex.
    """
    w = np.array([_skew(A[:3]) for A in screws])
    w2 = np.einsum("bij,bjk->bik", w, w)
    theta = theta[:, None, None]
    sine, versine = np.sin(theta), 1.0 - np.cos(theta)
    T = np.zeros((len(screws), 4, 4), dtype=theta.dtype)
    T[:, :3, :3] = np.eye(3) + sine * w + versine * w2
    T[:, :3, 3] = np.einsum("bij,bj->bi", np.eye(3) * theta + versine * w + (theta - sine) * w2, screws[:, 3:])
    T[:, 3, 3] = 1.0
    return T


def _joint_transforms(model, q):
    """``T_{parent,i} = M_i e^{[A_i] q_i}`` for every body (Lynch & Park eq. 9.50), shape ``(nb, 4, 4)``.

    ``q`` may be complex (for the complex-step derivative of :func:`christoffel_symbols`).
    """
    E, offset = model.joint_map()
    home = _homogeneous(model.bodies[:, np.r_[ORIGIN_R, ORIGIN_P]])
    return np.einsum("bij,bjk->bik", home, _screw_exponentials(model.bodies[:, SCREW], E @ q + offset))


def _world_transforms(model, relative):
    """``T_{0i} = T_{0,parent} T_{parent,i}``: every body frame in the root frame."""
    world = np.array(relative)
    for i, parent in enumerate(model.topology[:, PARENT]):
        if parent >= 0:
            world[i] = world[parent] @ relative[i]
    return world


def _on_path(model):
    """``path[j, k]``: body ``k`` is body ``j`` or one of its ancestors, i.e. joint ``k`` moves body ``j``."""
    nb = len(model.topology)
    path = np.zeros((nb, nb), dtype=bool)
    for j, parent in enumerate(model.topology[:, PARENT]):
        if parent >= 0:
            path[j] = path[parent]
        path[j, j] = True
    return path


def _rotational_inertias(model):
    """``Ibar_i``: each body's 3x3 rotational inertia about its frame origin, in its axes."""
    xx, xy, xz, yy, yz, zz = model.bodies[:, INERTIA].T
    return np.stack([np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1), np.stack([xz, yz, zz], -1)], -2)


def _inverse(T):
    """``T^-1 = [[R^T, -R^T p], [0, 1]]`` (plain transposes, so complex entries stay analytic)."""
    R, p = T[..., :3, :3], T[..., :3, 3]
    inverse = np.zeros_like(T)
    inverse[..., :3, :3] = np.swapaxes(R, -1, -2)
    inverse[..., :3, 3] = -np.einsum("...ji,...j->...i", R, p)
    inverse[..., 3, 3] = 1.0
    return inverse


def _adjoint(T):
    """``[Ad_T] = [[R, 0], [[p] R, R]]`` (Lynch & Park eq. 3.83)."""
    R, p = T[:3, :3], T[:3, 3]
    Ad = np.zeros((6, 6), dtype=T.dtype)
    Ad[:3, :3] = Ad[3:, 3:] = R
    Ad[3:, :3] = _skew(p) @ R
    return Ad


def _ad(V):
    """``[ad_V] = [[ [omega], 0 ], [ [v], [omega] ]]`` (Lynch & Park eq. 9.29)."""
    ad = np.zeros((6, 6), dtype=V.dtype)
    ad[:3, :3] = ad[3:, 3:] = _skew(V[:3])
    ad[3:, :3] = _skew(V[3:])
    return ad


# ----------------------------------------------------------------------------- Lagrange-Euler

def _pseudo_inertias(model):
    """``J_i = integral of r r^T dm`` in homogeneous coordinates ``r = (x, y, z, 1)``: ``[[S, m c], [m c^T, m]]``.

    ``S = tr(Ibar)/2 1 - Ibar`` turns the inertia tensor about the frame origin into second moments.
    """
    Ibar = _rotational_inertias(model)
    J = np.zeros((len(Ibar), 4, 4))
    J[:, :3, :3] = 0.5 * np.trace(Ibar, axis1=1, axis2=2)[:, None, None] * np.eye(3) - Ibar
    J[:, :3, 3] = J[:, 3, :3] = model.bodies[:, FIRST_MOMENT]
    J[:, 3, 3] = model.bodies[:, MASS]
    return J


def lagrange_euler_terms(model, q, qd):
    """``(D, h, c)`` of ``tau = D(q) qdd + h(q, qd) + c(q)`` by Lagrange-Euler with 4x4 transforms.

    Milićević et al. §2: with ``U_jk = d(0A_j)/dq_k`` and ``U_jkm = dU_jk/dq_m`` (eq. 2.3) and the
    pseudo-inertia ``J_j`` of each link,

    - ``D_ik = sum_j Tr(U_jk J_j U_ji^T)`` (eq. 2.11),
    - ``h_i = sum_km h_ikm qd_k qd_m``, ``h_ikm = sum_j Tr(U_jkm J_j U_ji^T)`` (eqs. 2.13-2.14),
    - ``c_i = -sum_j m_j g U_ji r_j`` (eq. 2.15, ``g`` the physical gravity, ``r_j`` the CoM),

    summed over every body ``j`` the joints move (``U_jk = 0`` when joint ``k`` does not move body
    ``j``), so trees are covered.  The derivatives of ``0A_j`` come from the joints' 4x4 screws in
    the root frame, ``Q_k = 0A_k [A_k] 0A_k^-1``: ``U_jk = Q_k 0A_j`` and, for joint ``k`` at or
    above joint ``m``, ``U_jkm = Q_k Q_m 0A_j``.  Revolute, continuous and prismatic joints; mimic
    joints through ``D = E^T D_joints E``.  One state; ``O(n^4)`` (the ``h_ikm``).

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)  # Lynch & Park §9.1, m = L = 1
    >>> D, h, c = rd.lagrange_euler_terms(arm, [0.0, 0.5], [1.0, 1.0])
    >>> h.round(4)  # (-m2 L1 L2 sin q2 (2 qd1 qd2 + qd2^2), m2 L1 L2 sin q2 qd1^2)
    array([-1.4383,  0.4794])
    """
    q, qd = _state(model, q, "q"), _state(model, qd, "qd")
    E, _ = model.joint_map()
    world = _world_transforms(model, _joint_transforms(model, q))
    Q = world @ np.array([_screw_matrix(A) for A in model.bodies[:, SCREW]]) @ _inverse(world)
    path = _on_path(model)
    U = np.einsum("kab,jbc->jkac", Q, world) * path[:, :, None, None]
    order = np.arange(len(Q))
    QQ = Q[np.minimum.outer(order, order)] @ Q[np.maximum.outer(order, order)]  # the upper joint's Q first
    U2 = np.einsum("kmab,jbc->jkmac", QQ, world) * (path[:, :, None] & path[:, None, :])[..., None, None]
    UJ = U @ _pseudo_inertias(model)[:, None]  # U_ji J_j; Tr(X J U^T) = sum_ab X_ab (U J)_ab, J symmetric
    D = np.einsum("jkab,jiab->ik", U, UJ, optimize=True)
    h_ikm = np.einsum("jkmab,jiab->ikm", U2, UJ, optimize=True)
    qd_joints = E @ qd
    h = np.einsum("ikm,k,m->i", h_ikm, qd_joints, qd_joints)
    gravity = np.append(model.gravity, 0.0)
    mass_times_centre = np.column_stack([model.bodies[:, FIRST_MOMENT], model.bodies[:, MASS]])  # m_j r_j
    c = -np.einsum("a,jiab,jb->i", gravity, U, mass_times_centre)
    return E.T @ D @ E + np.diag(model.armature), E.T @ h, E.T @ c  # + the rotors (Spong Ex. 6.1)


# ----------------------------------------------------------------------------- Lynch & Park §9.4

def _constant_blocks(model):
    """``(A, G)`` of Lynch & Park eqs. 9.64-9.65: the stacked joint screws and the spatial inertias.

    ``A`` (``6 nb x n``) holds each joint's screw in the columns of its coordinates (times their
    factors, ``E``); the block-diagonal ``G`` is kept as its ``nb`` blocks of 6 x 6.
    """
    nb = len(model.topology)
    E, _ = model.joint_map()
    A = (model.bodies[:, SCREW][:, :, None] * E[:, None, :]).reshape(6 * nb, model.nv)
    b = model.bodies
    G = np.array([spatial_inertia_matrix(b[i, MASS], tuple(b[i, FIRST_MOMENT]), tuple(b[i, INERTIA])) for i in range(nb)])
    return A, G


def _block_diagonal_times(blocks, x):
    """``diag(blocks) x`` for the block-diagonal matrices of eqs. 9.65-9.67 (``G``, ``[ad_V]``, ...).

    ``x`` has ``6 nb`` rows."""
    return np.einsum("bij,bj->bi", blocks, x.reshape(len(blocks), 6)).ravel()


def _gamma_blocks(model, q):
    """The blocks of ``Gamma(q)`` (Lynch & Park eq. 9.68), and the relative transforms; ``q`` may be complex.

    ``Gamma[i]`` is the block in row ``i``, column ``parent(i)``: ``Ad_{T_{i,parent}}`` (zero for a
    body on the base).  The book's subdiagonal placed by the parent array, so trees follow.
    """
    relative = _joint_transforms(model, q)
    Gamma = np.zeros((len(relative), 6, 6), dtype=relative.dtype)
    for i, parent in enumerate(model.topology[:, PARENT]):
        if parent >= 0:
            Gamma[i] = _adjoint(_inverse(relative[i]))
    return Gamma, relative


def _times_Gamma(model, Gamma, x):
    """``Gamma x``: block ``i`` is ``Ad_{T_{i,parent}} x_parent``."""
    x = x.reshape(len(Gamma), 6)
    parents = model.topology[:, PARENT]
    return np.einsum("bij,bj->bi", Gamma, np.where((parents >= 0)[:, None], x[parents], 0.0)).ravel()


def _times_L(model, Gamma, x, transpose=False):
    """``L x`` (or ``L^T x``) with ``L = (I - Gamma)^-1`` (eq. 9.76), never formed: solve ``(I - Gamma) y = x``.

    Forward substitution ``y_i = x_i + Gamma_i y_parent``; for ``L^T`` the backward one,
    ``y_parent += Gamma_i^T y_i`` from the leaves.  ``x`` has ``6 nb`` rows.
    """
    y = x.reshape(len(Gamma), 6, -1).astype(np.result_type(Gamma, x))
    parents = model.topology[:, PARENT]
    bodies = range(len(Gamma))
    for i in reversed(bodies) if transpose else bodies:
        if parents[i] >= 0:
            if transpose:
                y[parents[i]] += Gamma[i].T @ y[i]
            else:
                y[i] += Gamma[i] @ y[parents[i]]
    return y.reshape(x.shape)


def _closed_form_mass_matrix(model, Gamma, A, G):
    """``M = A^T L^T G L A`` (eq. 9.82), i.e. ``sum_i J_i^T G_i J_i`` over the blocks ``J_i`` of ``L A`` (eq. 9.61)."""
    J = _times_L(model, Gamma, A).reshape(len(G), 6, -1)
    return np.einsum("bin,bim->nm", J, np.einsum("bij,bjm->bim", G, J))


def closed_form_terms(model, q, qd):
    """``(M, c, g)`` from the closed-form matrix assembly of Lynch & Park §9.4 (eqs. 9.72-9.84).

    With ``L = (I - Gamma)^-1`` (eq. 9.76) and ``V = L A qd`` (eq. 9.77; a fixed base, ``V_base = 0``):

    - ``M = A^T L^T G L A`` (eq. 9.82);
    - ``c = A^T L^T (-G L [ad_{A qd}] Gamma - [ad_V]^T G) V`` (eq. 9.83);
    - ``g = A^T L^T G L Vdot_base`` with ``Vdot_base`` holding ``Ad_{T_i0} (0, -g)`` for the bodies on
      the base (eq. 9.84).

    The seed prints ``+[ad_{A qd}]`` in eqs. 9.73/9.83; the recursion it assembles (eq. 9.55's
    ``[V_i, A_i] qd_i = -[ad_{A_i qd_i}] Ad_{T_{i,i-1}} V_{i-1}``) gives the minus used here.
    ``Gamma`` and the block-diagonal matrices are kept as their 6 x 6 blocks and ``L`` is applied by
    block substitution, never formed.  Trees follow from Gamma's blocks (placed by the parent array),
    mimic joints from ``A``.  One state; ``O(n^3)`` (the ``n x n`` sum of eq. 9.82).

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> M, c, g = rd.closed_form_terms(arm, [0.0, 0.0], [0.0, 0.0])
    >>> M.round(12), g.round(12)  # M of Lynch & Park §9.1; holding torques (3 g, g)
    (array([[5., 2.],
           [2., 1.]]), array([29.43,  9.81]))
    """
    q, qd = _state(model, q, "q"), _state(model, qd, "qd")
    A, G = _constant_blocks(model)
    Gamma, relative = _gamma_blocks(model, q)
    M = _closed_form_mass_matrix(model, Gamma, A, G) + np.diag(model.armature)  # + the rotors (Spong Ex. 6.1)
    V = _times_L(model, Gamma, A @ qd)
    ad_A_qd = np.array([_ad(twist) for twist in (A @ qd).reshape(-1, 6)])
    ad_V_transposed = np.array([_ad(twist).T for twist in V.reshape(-1, 6)])
    Vdot = _times_L(model, Gamma, _block_diagonal_times(ad_A_qd, _times_Gamma(model, Gamma, V)))
    inner = -_block_diagonal_times(G, Vdot) - _block_diagonal_times(ad_V_transposed, _block_diagonal_times(G, V))
    c = A.T @ _times_L(model, Gamma, inner, transpose=True)
    base_acceleration = np.concatenate([np.zeros(3), -model.gravity])
    Vdot_base = np.zeros(6 * len(relative))
    for i, parent in enumerate(model.topology[:, PARENT]):
        if parent < 0:
            Vdot_base[6 * i:6 * i + 6] = _adjoint(_inverse(relative[i])) @ base_acceleration
    g = A.T @ _times_L(model, Gamma, _block_diagonal_times(G, _times_L(model, Gamma, Vdot_base)), transpose=True)
    return M, c, g


# ----------------------------------------------------------------------------- Christoffel symbols

def christoffel_symbols(model, q):
    """The Christoffel symbols ``symbols[i, j, k] = 1/2 (dm_ij/dq_k + dm_ik/dq_j - dm_jk/dq_i)``
    (Lynch & Park eq. 9.86's ``Gamma_ijk``).

    Spong's ``c_ijk`` (eq. 6.63) is ``symbols[k, i, j]``.  ``dM/dq_k`` is the complex-step derivative
    ``Im M(q + i h e_k) / h`` (``h = 1e-20``) of the closed-form mass matrix of eq. 9.82: exact to
    round-off, with no step-size trade-off, and independent of the core's CRBA.  One state;
    ``n`` closed-form evaluations, ``O(n^4)``.

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> symbols = rd.christoffel_symbols(arm, [0.0, 0.5])
    >>> round(float(symbols[1, 0, 0]), 4), round(float(symbols[0, 0, 1]), 4)  # +-m2 L1 L2 sin q2
    (0.4794, -0.4794)
    """
    q = _state(model, q, "q")
    A, G = _constant_blocks(model)
    def mass_matrix_982(q):
        return _closed_form_mass_matrix(model, _gamma_blocks(model, q)[0], A, G)

    dM = np.array([mass_matrix_982(q + 1j * COMPLEX_STEP * e).imag / COMPLEX_STEP for e in np.eye(model.nv)])
    return 0.5 * (dM.transpose(1, 2, 0) + dM.transpose(1, 0, 2) - dM)


def christoffel_coriolis_matrix(model, q, qd):
    """``C_ij = sum_k symbols[i, j, k] qd_k`` over the :func:`christoffel_symbols` (Lynch & Park eq. 9.87, Spong eq. 6.67).

    The Coriolis matrix for which ``Mdot - 2C`` is skew-symmetric (Lynch & Park Prop. 9.1,
    Spong Prop. 6.1) and ``C qd = c``.  One state.

    >>> import numpy as np, robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> C = rd.christoffel_coriolis_matrix(arm, [0.3, 0.5], [1.0, -2.0])
    >>> np.allclose(C, rd.coriolis_matrix(arm, [0.3, 0.5], [1.0, -2.0]))
    True
    """
    return christoffel_symbols(model, q) @ _state(model, qd, "qd")


# ----------------------------------------------------------------------------- generalized D'Alembert

def _revolute_chain(model):
    """Raise ValueError unless ``model`` is a chain of revolute joints without mimic joints (paper §4)."""
    why = "dalembert_terms implements the generalized D'Alembert equations for chains of revolute joints " \
          "(Milićević et al. §4)"
    if model.couplings:
        raise ValueError(f"{why}, but {model.name!r} has mimic joints ({', '.join(model.couplings)}); "
                         "load it with mimic=False or use lagrange_euler_terms / closed_form_terms")
    for i, (parent, kind) in enumerate(model.topology[:, [PARENT, KIND]]):
        if kind != REVOLUTE:
            raise ValueError(f"{why}, but joint {model.body_joints[i]!r} of {model.name!r} is prismatic")
        if parent != i - 1:
            raise ValueError(f"{why}, but {model.name!r} is a tree: joint {model.body_joints[i]!r} does not "
                             "follow the joint before it")


def dalembert_terms(model, q, qd):
    """``(D, h_tran + h_rot, c)`` of ``tau = D qdd + h_tran + h_rot + c`` (Milićević et al. §4, eqs. 4.1-4.5).

    In world coordinates, with ``z_i`` joint ``i``'s axis through the body origin ``p_i``, ``r_s``
    link ``s``'s centre of mass, ``I_s`` its inertia about the CoM in its own axes (``sR0`` takes
    world vectors into them), ``p*_k = p_{k+1} - p_k`` and ``c_s = r_s - p_s``:

    - ``D_ij = sum_{s >= i, j} (sR0 z_i)^T I_s (sR0 z_j) + m_s [z_j x (r_s - p_j)] . [z_i x (r_s - p_i)]`` (4.2);
    - ``h_tran_i = sum_{s >= i} m_s a_s . [z_i x (r_s - p_i)]`` (4.3), where ``a_s`` is the velocity
      part of the CoM acceleration ``sum_{k<s} (w_k x (w_k x p*_k) + b_k x p*_k) + w_s x (w_s x c_s) + b_s x c_s``
      with ``w_s = sum_{p<=s} qd_p z_p`` and ``b_s = sum_{p<=s} w_{p-1} x qd_p z_p``;
    - ``h_rot_i = sum_{s >= i} (sR0 z_i)^T [I_s sR0 b_s + (sR0 w_s) x (I_s sR0 w_s)]`` (4.4);
    - ``c_i = -g . [z_i x sum_{j >= i} m_j (r_j - p_i)]`` (4.5), ``g`` the physical gravity.

    Chains of revolute (or continuous) joints only; other models raise ValueError saying why.
    One state; ``O(n^3)`` (the ``D_ij``).

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> D, h, c = rd.dalembert_terms(arm, [0.0, 0.0], [0.0, 0.0])
    >>> c.round(12)  # (m1 + m2) g L1 + m2 g L2, m2 g L2
    array([29.43,  9.81])
    """
    _revolute_chain(model)
    q, qd = _state(model, q, "q"), _state(model, qd, "qd")
    world = _world_transforms(model, _joint_transforms(model, q))
    R, p = world[:, :3, :3], world[:, :3, 3]
    z = np.einsum("sab,sb->sa", R, model.bodies[:, SCREW][:, :3])  # revolute chains: the screw is (axis, 0)
    m = model.bodies[:, MASS]
    local_centre = model.bodies[:, FIRST_MOMENT] / np.where(m > 0, m, 1.0)[:, None]
    r = p + np.einsum("sab,sb->sa", R, local_centre)
    I = _rotational_inertias(model) - m[:, None, None] * (
        np.einsum("sa,sa->s", local_centre, local_centre)[:, None, None] * np.eye(3)
        - np.einsum("sa,sb->sab", local_centre, local_centre))  # Steiner, back to the CoM
    moves = np.tril(np.ones((len(m), len(m)), dtype=bool))  # [s, i]: joint i moves link s (i <= s)
    lever = np.cross(z[None, :], r[:, None] - p[None, :]) * moves[..., None]  # [s, i] = z_i x (r_s - p_i)
    axes_in_link = np.einsum("sba,ib->sia", R, z) * moves[..., None]          # [s, i] = sR0 z_i
    D = np.einsum("six,sxy,sjy->ij", axes_in_link, I, axes_in_link) + np.einsum("s,six,sjx->ij", m, lever, lever)

    w = np.cumsum(qd[:, None] * z, axis=0)
    w_before = np.vstack([np.zeros(3), w[:-1]])
    b = np.cumsum(np.cross(w_before, qd[:, None] * z), axis=0)
    link_vectors = p[1:] - p[:-1]  # p*_k, fixed in link k
    along_links = np.cross(w[:-1], np.cross(w[:-1], link_vectors)) + np.cross(b[:-1], link_vectors)
    to_centre = r - p
    a = (np.vstack([np.zeros(3), np.cumsum(along_links, axis=0)])
         + np.cross(w, np.cross(w, to_centre)) + np.cross(b, to_centre))
    h_tran = np.einsum("s,sx,six->i", m, a, lever)
    w_link, b_link = np.einsum("sba,sb->sa", R, w), np.einsum("sba,sb->sa", R, b)
    link_torque = np.einsum("sxy,sy->sx", I, b_link) + np.cross(w_link, np.einsum("sxy,sy->sx", I, w_link))
    h_rot = np.einsum("six,sx->i", axes_in_link, link_torque)
    c = -np.einsum("x,six,s->i", model.gravity, lever, m)
    return D + np.diag(model.armature), h_tran + h_rot, c  # + the rotors (Spong Ex. 6.1)


# ----------------------------------------------------------------------------- inertia bounds

def configurations_within_limits(model, count, seed=0):
    """``count`` configurations drawn uniformly within the position limits, reproducibly from ``seed``.

    Joints without finite limits (continuous ones) are drawn in ``[-pi, pi]``.

    >>> import robot_dynamics as rd
    >>> configurations_within_limits(rd.load_urdf(rd.examples.TWO_LINK_URDF), 3).shape
    (3, 2)
    """
    lower, upper = model.position_limits.T
    lower = np.where(np.isfinite(lower), lower, -np.pi)
    upper = np.where(np.isfinite(upper), upper, np.pi)
    return np.random.default_rng(seed).uniform(lower, upper, (count, model.nv))


def inertia_bounds(model, samples=1000, seed=0):
    """``(lambda_min, lambda_max)``: the extreme eigenvalues of ``M(q)`` over sampled configurations.

    Spong ch. 6, bounds on the inertia matrix: ``lambda_min I <= M(q) <= lambda_max I``; for robots
    whose joints are all revolute the bounds are uniform in ``q``.  Sampling estimates them from
    inside: the true bounds are at least this wide.  ``samples`` is either a count of configurations drawn with
    :func:`configurations_within_limits` (``seed``) or an array of configurations, shape ``(N, n)``.
    ``M`` by the core (batched CRBA).

    >>> import robot_dynamics as rd
    >>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)  # M = m l^2 = 1 everywhere
    >>> rd.inertia_bounds(pendulum, 10)
    (1.0, 1.0)
    """
    _require_joints(model)
    if isinstance(samples, (int, np.integer)):
        if samples < 1:
            raise ValueError(f"samples must be at least 1, got {samples}")
        samples = configurations_within_limits(model, int(samples), seed)
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 2 or samples.shape[1] != model.nv or not len(samples):
        raise ValueError(f"samples must be a count or an (N, {model.nv}) array of configurations, "
                         f"got shape {samples.shape}")
    eigenvalues = np.linalg.eigvalsh(mass_matrix(model, samples))
    return float(eigenvalues.min()), float(eigenvalues.max())
