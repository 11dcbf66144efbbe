"""``robot-dynamics check-trajectory URDF TRAJECTORY``: the command around
:func:`robot_dynamics.trajectories.check.check_trajectory`.

Exit status: 0 when every sample is within the limits, 1 on a violation, 2 on bad input (one line
on stderr naming the input and the problem): a trajectory file beyond the reading bounds of
:mod:`robot_dynamics.trajectories.check`, a ``--rate`` giving too many samples, a payload the dynamics
node would refuse (:func:`robot_dynamics.nodes.common.safety.check_payload`, the rclpy-free rule), or a
torque that is not finite. No verdict is given on a result that is not finite.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from ..trajectories.check import DEFAULT_RATE, TrajectoryError
from .arguments import CLIError, load_model, positive_number, warn


def register(commands):
    parser = commands.add_parser("check-trajectory", help="does a planned trajectory stay within the effort and "
                                 "velocity limits? (exit 1 if not)")
    add_arguments(parser)
    parser.set_defaults(run=run)


def add_arguments(parser):
    parser.add_argument("urdf", metavar="URDF", help="URDF file, or the name of a bundled robot (see 'robots')")
    parser.add_argument("trajectory", metavar="TRAJECTORY",
                        help="a CSV file (t, q_<joint>... and optional qd_<joint>, qdd_<joint> columns), a YAML "
                             "JointTrajectory as 'ros2 topic echo' prints it, or a rosbag2 bag (directory, .db3, .mcap)")
    parser.add_argument("--topic", default=None, help="the bag's JointTrajectory topic (default: its only one)")
    parser.add_argument("--payload", nargs="+", metavar="VALUE", default=None,
                        help="LINK MASS [CX CY CZ [IXX IXY IXZ IYY IYZ IZZ]]: a payload fixed to LINK (kg, its "
                             "centre of mass in the link frame in m, its inertia about that centre in kg m^2)")
    parser.add_argument("--friction", action="store_true",
                        help="add the URDF's <dynamics> damping and friction (and the rotors' damping) to the torques")
    parser.add_argument("--rate", type=positive_number, default=DEFAULT_RATE,
                        help=f"samples per second between the waypoints (default {DEFAULT_RATE:g}, the controller's)")
    parser.add_argument("--no-mimic", action="store_true", help="ignore <mimic> tags: every moving joint is a coordinate")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def with_payload(model, values):
    """The model carrying ``--payload LINK MASS [CX CY CZ [IXX IXY IXZ IYY IYZ IZZ]]``, judged as the
    dynamics node judges its ``payload.*`` parameters: at most 10 times the robot's mass, within its
    reach, and finite, plausible gravity torques and mass matrix with it."""
    from ..nodes.common.safety import Plausibility, check_outputs_finite, check_outputs_plausible, check_payload

    if not values:
        return model
    link, numbers = values[0], values[1:]
    try:
        numbers = [float(v) for v in numbers]
    except ValueError:
        raise TrajectoryError(f"--payload: {' '.join(values[1:])!r} are not numbers") from None
    if len(numbers) not in (1, 4, 10) or numbers[0] < 0:
        raise TrajectoryError("--payload takes LINK MASS [CX CY CZ [IXX IXY IXZ IYY IYZ IZZ]] (mass >= 0)")
    com = numbers[1:4] if len(numbers) >= 4 else [0.0, 0.0, 0.0]
    inertia = numbers[4:10] if len(numbers) == 10 else [0.0] * 6
    try:
        plausibility = Plausibility(model)  # (the robot as parsed: a payload never widens its own bounds)
        with np.errstate(all="ignore"):  # (|com| of 1e200 overflows to inf: refused as beyond the reach)
            check_payload(plausibility, numbers[0], com)
        loaded = model.with_payload(link, numbers[0], com, inertia)
        check_outputs_finite(loaded, "--payload")
        check_outputs_plausible(loaded, plausibility, "--payload")
    except ValueError as error:
        raise TrajectoryError(f"--payload: {error}") from None
    return loaded


def _fraction(value):
    return "-" if value is None else f"{100 * value:.1f} %"


def print_report(check, out):
    out.write(f"{check.samples} samples over {check.duration:.3f} s, {check.interpolation} interpolation\n")
    width = max(len(name) for name in check.joint_names)
    out.write(f"{'joint':<{width}}  {'peak |tau|':>11}  {'of limit':>8}  {'peak |qd|':>10}  {'of limit':>8}\n")
    for name in check.joint_names:
        out.write(f"{name:<{width}}  {check.peak_effort[name]:>11.4g}  {_fraction(check.peak_effort_fraction[name]):>8}"
                  f"  {check.peak_velocity[name]:>10.4g}  {_fraction(check.peak_velocity_fraction[name]):>8}\n")
    for note in check.notes:
        out.write(f"note: {note}\n")
    if check.ok:
        out.write("within the effort and velocity limits\n")
    for v in check.violations:
        out.write(f"VIOLATION at t = {v.time:.4f} s: {v.joint} {v.quantity} {v.value:.6g} beyond its limit {v.limit:g}\n")


def run(args, out=None, err=None):
    """The command; returns the exit status."""
    from ..trajectories.check import check_trajectory, read_trajectory

    out, err = out or sys.stdout, err or sys.stderr
    try:
        try:
            model, _, load_warnings = load_model(args.urdf, args.command, not args.no_mimic)
        except CLIError as error:
            raise ValueError(str(error)) from None
        warn(load_warnings)
        model = with_payload(model, args.payload)
        check = check_trajectory(model, read_trajectory(args.trajectory, args.topic), rate=args.rate,
                                 friction=args.friction)
    except ValueError as error:  # TrajectoryError, a bad URDF, a bad --rate
        err.write(f"robot-dynamics check-trajectory: error: {error}\n")
        return 2
    except MemoryError:  # (the bounds keep every input below 1 GB: this is a last resort)
        err.write(f"robot-dynamics check-trajectory: error: {args.trajectory}: too large to check in memory\n")
        return 2
    if args.json:  # (rendered whole before a byte is written; strict JSON: never a bare NaN)
        out.write(json.dumps(check.as_dict(), indent=2, allow_nan=False) + "\n")
    else:
        print_report(check, out)
    return 0 if check.ok else 1
