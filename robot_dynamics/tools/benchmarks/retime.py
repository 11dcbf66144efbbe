"""retime against toppra and Drake: a 60-waypoint path of the 7-joint Panda, velocity and effort limits.

    robot-dynamics bench retime [--waypoints 60] [--repeat 20]

Each row: the median solve time over ``--repeat`` runs, the duration found, and the worst |tau| / limit of
the result judged by Pinocchio's RNEA at 1 kHz (the points joint_trajectory_controller samples). Rows:

- ours, solve: the path, its dynamics on the grid (one batched inverse-dynamics call) and the
  reachability analysis: what toppra's ``compute_parameterization`` does;
- ours, retime: the whole :func:`~robot_dynamics.trajectories.retime.retime`, its 1 kHz points, their
  efforts and the checks included (what a user calls);
- toppra + Pinocchio: ``toppra.algorithm.TOPPRA`` with ``JointTorqueConstraint`` calling Pinocchio's
  RNEA once per grid point (how toppra users write it), ``compute_parameterization``; judged on its
  ``compute_trajectory`` sampled at 1 kHz;
- toppra + Pinocchio, 1 kHz out: the same, then what ``retime`` also delivers: ``compute_trajectory``
  sampled every 1 ms and each point's effort by Pinocchio's RNEA (how a toppra user fills a
  JointTrajectory's ``effort``);
- Drake: ``Toppra`` with ``AddJointTorqueLimit`` on a ``MultibodyPlant`` of the same URDF (if ``drake``
  is installed: a benchmark-only extra, ``pip install drake``).

The goals (docs/benchmarks.md): ours ≤ 5 ms at 100 grid points and no slower than toppra + Pinocchio
at 100 and 1000, in the same run; durations within 1 % of theirs at 1000 grid points.
"""

import argparse
import statistics
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.tools.benchmarks.robots import panda7_urdf
from robot_dynamics.trajectories.check import Trajectory
from robot_dynamics.trajectories import retime as ours

GRIDS = (100, 1000)
RATE = 1000.0


def panda_path(model, waypoints):
    """A 6 s path through ``waypoints`` poses of the Panda, away from its joint limits."""
    t = np.linspace(0.0, 6.0, waypoints)
    base = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.7])
    q = base + 0.8 * np.sin(np.outer(t / 6.0 * np.pi, np.arange(1, 8) * 0.37) + np.arange(7))
    return Trajectory(model.joint_names, t, q)


def _median_ms(run, repeat):
    run()  # (compile, warm)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times)


def _worst(oracle, limits, q, qd, qdd):
    import pinocchio as pin

    data = oracle.createData()
    tau = np.array([pin.rnea(oracle, data, *state) for state in zip(q, qd, qdd)])
    return float(np.abs(tau / limits).max())


def _ours_solve(model, trajectory, gridpoints):
    path = ours._Path(model, trajectory, [])
    s = np.linspace(path.start, path.end, gridpoints)
    each = lambda limits: np.tile(ours._limit(limits), (gridpoints, 1))  # noqa: E731 (one row per grid point)
    return ours._parametrize(model, path, s, ours._path_dynamics(path, s), each(model.effort_limits),
                             each(model.velocity_limits), each(np.full(model.nv, np.inf)), False)


def _toppra(oracle, model, trajectory, gridpoints):
    import pinocchio as pin
    import toppra

    data = oracle.createData()
    path = toppra.SplineInterpolator(trajectory.t, trajectory.q)
    constraints = [
        toppra.constraint.JointVelocityConstraint(np.stack([-model.velocity_limits, model.velocity_limits], 1)),
        toppra.constraint.JointTorqueConstraint(lambda q, qd, qdd: pin.rnea(oracle, data, q, qd, qdd),
                                                np.stack([-model.effort_limits, model.effort_limits], 1), np.zeros(7))]
    grid = np.linspace(trajectory.t[0], trajectory.t[-1], gridpoints)
    return toppra.algorithm.TOPPRA(constraints, path, gridpoints=grid)


def _toppra_points(oracle, model, trajectory, gridpoints):
    """What ``retime`` delivers, the toppra way: the solve, its trajectory sampled every 1 ms and each
    point's effort by Pinocchio's RNEA (the JointTrajectory a controller takes, feed-forward filled)."""
    import pinocchio as pin

    output = _toppra(oracle, model, trajectory, gridpoints).compute_trajectory(0, 0)
    t = np.arange(0.0, output.duration, 1.0 / RATE)
    q, qd, qdd = output(t), output(t, 1), output(t, 2)
    data = oracle.createData()
    return [pin.rnea(oracle, data, q[k], qd[k], qdd[k]).copy() for k in range(len(t))]


def _drake(urdf_text, model, trajectory, gridpoints):
    """(solve, result duration and 1 kHz states) with Drake's Toppra; None if drake is not installed."""
    try:
        from pydrake.multibody.parsing import Parser
        from pydrake.multibody.plant import MultibodyPlant
        from pydrake.common import configure_logging  # noqa: F401 (drake's logger: its URDF notes silenced below)
        from pydrake.multibody.optimization import Toppra
        from pydrake.trajectories import PiecewisePolynomial
    except ImportError:
        return None
    import logging

    logging.getLogger("drake").setLevel(logging.ERROR)  # (the Panda URDF's <safety_controller>: not used here)
    plant = MultibodyPlant(0.0)
    Parser(plant).AddModelsFromString(urdf_text, "urdf")
    plant.WeldFrames(plant.world_frame(), plant.GetFrameByName("panda_link0"))
    plant.Finalize()
    spline = PiecewisePolynomial.CubicWithContinuousSecondDerivatives(trajectory.t, trajectory.q.T, False)
    # (False: not-a-knot ends, as ours and toppra's spline)
    grid = np.linspace(trajectory.t[0], trajectory.t[-1], gridpoints)

    def solve():
        toppra = Toppra(spline, plant, grid)
        toppra.AddJointVelocityLimit(-model.velocity_limits, model.velocity_limits)
        toppra.AddJointTorqueLimit(-model.effort_limits, model.effort_limits)
        return toppra.SolvePathParameterization()

    return solve, spline


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waypoints", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    import pinocchio as pin

    urdf = panda7_urdf()
    model = rd.load_urdf(urdf)
    oracle = pin.buildModelFromXML(urdf)
    trajectory = panda_path(model, args.waypoints)
    print(f"retime, Panda {model.nv} joints, {args.waypoints} waypoints over {trajectory.t[-1]:g} s given, URDF "
          f"velocity and effort limits; median of {args.repeat} runs; worst |tau|/limit by Pinocchio at 1 kHz")
    print(f"{'method':<31} {'grid':>5} {'solve ms':>9} {'duration s':>11} {'worst |tau|/limit':>18}")
    rows = {}
    for gridpoints in GRIDS:
        result = ours.retime(model, trajectory, gridpoints=gridpoints)
        judged = _worst(oracle, model.effort_limits, result.trajectory.q, result.trajectory.qd, result.trajectory.qdd)
        rows["ours, solve", gridpoints] = (_median_ms(lambda: _ours_solve(model, trajectory, gridpoints), args.repeat),
                                           result.duration_after, judged)
        rows["ours, retime (1 kHz out)", gridpoints] = (
            _median_ms(lambda: ours.retime(model, trajectory, gridpoints=gridpoints), args.repeat),
            result.duration_after, judged)
        try:
            instance = _toppra(oracle, model, trajectory, gridpoints)
        except ImportError:
            instance = None
        if instance is not None:
            solve = lambda: _toppra(oracle, model, trajectory, gridpoints).compute_parameterization(0, 0)  # noqa: E731
            output = instance.compute_trajectory(0, 0)
            t = np.arange(0.0, output.duration, 1.0 / RATE)
            rows["toppra + Pinocchio", gridpoints] = (
                _median_ms(solve, args.repeat), output.duration,
                _worst(oracle, model.effort_limits, output(t), output(t, 1), output(t, 2)))
            rows["toppra + Pinocchio, 1 kHz out", gridpoints] = (
                _median_ms(lambda: _toppra_points(oracle, model, trajectory, gridpoints), args.repeat),
                output.duration, rows["toppra + Pinocchio", gridpoints][2])
        drake = _drake(urdf, model, trajectory, gridpoints)
        if drake is not None:
            solve, spline = drake
            timing = solve()
            if timing is None:
                rows["Drake Toppra", gridpoints] = (_median_ms(solve, args.repeat), float("nan"), float("nan"))
            else:
                t = np.arange(timing.start_time(), timing.end_time(), 1.0 / RATE)
                s = np.array([timing.value(x)[0, 0] for x in t])
                sd = np.array([timing.EvalDerivative(x, 1)[0, 0] for x in t])
                sdd = np.array([timing.EvalDerivative(x, 2)[0, 0] for x in t])
                dq = np.array([spline.EvalDerivative(x, 1)[:, 0] for x in s])
                q = np.array([spline.value(x)[:, 0] for x in s])
                ddq = np.array([spline.EvalDerivative(x, 2)[:, 0] for x in s])
                rows["Drake Toppra", gridpoints] = (
                    _median_ms(solve, args.repeat), timing.end_time() - timing.start_time(),
                    _worst(oracle, model.effort_limits, q, dq * sd[:, None], ddq * sd[:, None] ** 2 + dq * sdd[:, None]))
    for (method, gridpoints), (ms, duration, worst) in rows.items():
        print(f"{method:<31} {gridpoints:>5} {ms:>9.2f} {duration:>11.4f} {worst:>18.4f}")
    if not any(method == "Drake Toppra" for method, _ in rows):
        print("(Drake: not installed - pip install drake)")
    for gridpoints in GRIDS:
        anchor = rows.get(("toppra + Pinocchio", gridpoints))
        if anchor:
            print(f"grid {gridpoints}: ours solve / toppra + Pinocchio = {rows['ours, solve', gridpoints][0] / anchor[0]:.2f}, "
                  f"ours retime / toppra + Pinocchio = {rows['ours, retime (1 kHz out)', gridpoints][0] / anchor[0]:.2f}, "
                  f"ours retime / toppra + Pinocchio, 1 kHz out = "
                  f"{rows['ours, retime (1 kHz out)', gridpoints][0] / rows['toppra + Pinocchio, 1 kHz out', gridpoints][0]:.2f}; "
                  f"duration ours / theirs = {rows['ours, solve', gridpoints][1] / anchor[1]:.4f}")
    return 0


if __name__ == "__main__":
    main()
