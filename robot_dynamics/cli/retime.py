"""``robot-dynamics retime URDF TRAJECTORY``: the command around
:func:`robot_dynamics.trajectories.retime.retime` (and ``--feedforward-only``: :func:`~robot_dynamics.
trajectories.retime.feedforward`).

It reads what ``check-trajectory`` reads, prints the old and new duration and the joint and limit
that set the pace of each waypoint segment, and writes the result (``--output``: CSV with ``qd_``,
``qdd_``, ``tau_`` columns, or YAML JointTrajectory with ``effort`` filled, by the extension) and a
figure (``--plot``). Exit status: 0 done, 1 no timing keeps the limits (the joint, time and torque on
stderr), 2 bad input (one line on stderr naming the input and the problem).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from ..trajectories.check import DEFAULT_RATE, TrajectoryError
from .arguments import CLIError, load_model, positive_number, warn
from .check_trajectory import with_payload

NAME = "retime"


def register(commands):
    parser = commands.add_parser(NAME, help="the shortest timing of a trajectory's path within the velocity, "
                                 "acceleration and effort limits, with feed-forward efforts (exit 1 if none)")
    parser.add_argument("urdf", metavar="URDF", help="URDF file, or the name of a bundled robot (see 'robots')")
    parser.add_argument("trajectory", metavar="TRAJECTORY",
                        help="a CSV file (t, q_<joint>... and optional qd_, qdd_ columns), a YAML JointTrajectory as "
                             "'ros2 topic echo' prints it, or a rosbag2 bag (directory, .db3, .mcap): its waypoints' "
                             "positions are the path")
    parser.add_argument("--topic", default=None, help="the bag's JointTrajectory topic (default: its only one)")
    parser.add_argument("--effort-margin", type=_margin, default=1.0, metavar="F",
                        help="the fraction of each URDF effort limit the timing may use (0 < F <= 1, default 1)")
    parser.add_argument("--acceleration-limit", type=positive_number, nargs="+", default=None, metavar="A",
                        help="joint acceleration limits in rad/s^2 (m/s^2): one for every joint, or one per joint in "
                             "the model's order (the URDF has none; default: only the efforts limit them)")
    parser.add_argument("--feedforward-only", action="store_true",
                        help="keep the timing: only fill each waypoint's effort with the inverse-dynamics torque")
    parser.add_argument("--output", "-o", default=None, metavar="FILE",
                        help="write the result: .csv (t, q_, qd_, qdd_, tau_ columns) or .yaml (JointTrajectory, "
                             "effort filled)")
    parser.add_argument("--plot", default=None, metavar="FILE", help="a figure of |tau| / limit over time before and after "
                        "(.png, .pdf, .svg; needs matplotlib)")
    parser.add_argument("--payload", nargs="+", metavar="VALUE", default=None,
                        help="LINK MASS [CX CY CZ [IXX IXY IXZ IYY IYZ IZZ]]: a payload fixed to LINK (as check-trajectory)")
    parser.add_argument("--friction", action="store_true",
                        help="add the URDF's <dynamics> damping and friction (and the rotors' damping) to the torques")
    parser.add_argument("--rate", type=positive_number, default=DEFAULT_RATE,
                        help=f"points per second written (default {DEFAULT_RATE:g}, the controller's rate)")
    parser.add_argument("--gridpoints", type=int, default=None, help="grid points along the path (default 400)")
    parser.add_argument("--no-mimic", action="store_true", help="ignore <mimic> tags: every moving joint is a coordinate")
    parser.set_defaults(run=run)


def _margin(text):
    value = positive_number(text)
    if value > 1:
        import argparse

        raise argparse.ArgumentTypeError(f"give a fraction in (0, 1], got {text!r}")
    return value


def _acceleration_limits(model, values):
    if values is None or len(values) == 1:
        return None if values is None else values[0]
    if len(values) != model.nv:
        raise TrajectoryError(f"--acceleration-limit: give one value or {model.nv} (one per joint: "
                              f"{', '.join(model.joint_names)}), got {len(values)}")
    return np.array(values)


def _output_checked(args):
    """Refuse an output or plot file of a kind not written, and a plot without matplotlib, before the work."""
    if args.output is not None and Path(args.output).suffix.lower() not in (".csv", ".yaml", ".yml"):
        raise TrajectoryError(f"--output {args.output}: give a .csv or .yaml file")
    for option, name in (("--output", args.output), ("--plot", args.plot)):
        folder = Path(name).parent if name is not None else None
        if folder is not None and not (folder.is_dir() and os.access(folder, os.W_OK)):
            raise TrajectoryError(f"{option} {name}: {folder} is not a directory this user can write to")
    if args.plot is not None:
        if Path(args.plot).suffix.lower() not in (".png", ".pdf", ".svg"):
            raise TrajectoryError(f"--plot {args.plot}: give a .png, .pdf or .svg file")
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise TrajectoryError("--plot needs matplotlib: pip install robot_dynamics[demo]") from None


def _bindings(binding, trajectory):
    """Consecutive segments with the same binding joint and limit, as lines."""
    lines, start = [], 0
    for k in range(1, len(binding) + 1):
        if k == len(binding) or binding[k][1:] != binding[start][1:]:
            first, last = binding[start][0], binding[k - 1][0]
            span = f"segment {first + 1}" if first == last else f"segments {first + 1}-{last + 1}"
            lines.append(f"  {span:<18} (t = {trajectory.t[first]:.3f}-{trajectory.t[last + 1]:.3f} s given): "
                         f"{binding[start][1]} {binding[start][2]}")
            start = k
    return lines


def _peaks(model, trajectory):
    """Each joint's peak |effort| / limit of ``trajectory``'s points."""
    index = {name: k for k, name in enumerate(model.joint_names)}
    return {name: float(np.abs(trajectory.effort[:, c]).max() / model.effort_limits[index[name]])
            for c, name in enumerate(trajectory.joint_names)
            if name in index and np.isfinite(model.effort_limits[index[name]]) and model.effort_limits[index[name]] > 0}


def _plot(path, model, timings, friction):
    """|tau| / limit over time of each ``(title, trajectory)`` of ``timings`` (as joint_trajectory_controller
    interpolates it), a panel each, each joint a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..trajectories.check import _model_states, _placement, _torques, sample

    figure, axes = plt.subplots(len(timings), 1, figsize=(10, 3 * len(timings)), sharey=True, squeeze=False)
    axes = axes[:, 0]
    limits = np.where(model.effort_limits > 0, model.effort_limits, np.inf)
    for axis, (title, trajectory) in zip(axes, timings):
        t, *states = sample(trajectory)
        tau = _torques(model, *_model_states(model, _placement(model, trajectory, []), *states), friction, 0.01)
        for k, name in enumerate(model.joint_names):
            axis.plot(t - t[0], np.abs(tau[:, k]) / limits[k], label=name, linewidth=1)
        axis.axhline(1.0, color="k", linestyle="--", linewidth=0.8)
        axis.set_title(f"{title}: {t[-1] - t[0]:.3f} s")
        axis.set_ylabel("|tau| / limit")
    axes[-1].set_xlabel("time (s)")
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # (beside the curves, not over them)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def run(args, out=None, err=None):
    """The command; returns the exit status."""
    from ..trajectories.reading import read_trajectory
    from ..trajectories.retime import DEFAULT_GRIDPOINTS, InfeasiblePath, feedforward, retime
    from ..trajectories.writing import write_trajectory

    out, err = out or sys.stdout, err or sys.stderr
    try:
        _output_checked(args)
        try:
            model, _, load_warnings = load_model(args.urdf, NAME, not args.no_mimic)
        except CLIError as error:
            raise ValueError(str(error)) from None
        warn(load_warnings)
        model = with_payload(model, args.payload)
        trajectory = read_trajectory(args.trajectory, args.topic)
        if args.feedforward_only:
            result, filled = None, feedforward(model, trajectory, friction=args.friction)
        else:
            result = retime(model, trajectory, args.effort_margin, _acceleration_limits(model, args.acceleration_limit),
                            args.friction, args.rate, args.gridpoints or DEFAULT_GRIDPOINTS)
            filled = result.trajectory
        if args.output is not None:
            write_trajectory(args.output, filled)
        if args.plot is not None:
            _plot(args.plot, model, [("given timing", trajectory)] + ([("retimed", filled)] if result else []),
                  args.friction)
    except InfeasiblePath as error:
        err.write(f"robot-dynamics {NAME}: infeasible: {error}\n")
        return 1
    except ValueError as error:  # TrajectoryError, a bad URDF or payload
        err.write(f"robot-dynamics {NAME}: error: {error}\n")
        return 2
    except MemoryError:
        err.write(f"robot-dynamics {NAME}: error: {args.trajectory}: too large to retime in memory\n")
        return 2
    for note in filled.notes:
        out.write(f"note: {note}\n")
    if result is None:
        out.write(f"efforts filled at {filled.t.size} waypoints; the timing is unchanged "
                  f"({filled.t[-1] - filled.t[0]:.3f} s)\n")
    else:
        out.write(f"duration: {result.duration_before:.3f} s given, {result.duration_after:.3f} s retimed "
                  f"({filled.t.size} points at {args.rate:g} Hz, {result.gridpoints} grid points)\n")
        out.write("pace set by (joint, limit):\n" + "\n".join(_bindings(result.binding, trajectory)) + "\n")
    peaks = _peaks(model, filled)
    if peaks:
        worst = max(peaks, key=peaks.get)
        out.write(f"peak |effort| / limit: {100 * peaks[worst]:.1f} % ({worst})"
                  + (" - beyond the limit: retime it" if result is None and peaks[worst] > 1 else "") + "\n")
    if args.output is not None:
        out.write(f"wrote {args.output}\n")
    if args.plot is not None:
        out.write(f"wrote {args.plot}\n")
    return 0
