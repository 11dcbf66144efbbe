"""The ``excite`` and ``identify`` subcommands of ``robot-dynamics`` (arguments and what they print)."""

import math
import warnings
from pathlib import Path

import numpy as np

from . import excitation as ex
from .identify import DEFAULT_CUTOFF, DEFAULT_HOLDOUT, IdentificationError, identify
from .recording import RecordingError, read_recording
from .report import identified_urdf, parameter_table, payload_yaml, plot_validation, validation_lines

ERRORS = (ex.ExcitationError, IdentificationError, RecordingError)


def add_excite_arguments(parser):
    parser.add_argument("--duration", type=float, required=True, metavar="S",
                        help="length of the trajectory, s (rounded to whole periods)")
    parser.add_argument("--output", required=True, metavar="FILE", help="CSV file to write: t, q_*, qd_*, qdd_*")
    parser.add_argument("--period", type=float, default=ex.DEFAULT_PERIOD, metavar="S",
                        help=f"period of the Fourier series, s (default {ex.DEFAULT_PERIOD:g})")
    parser.add_argument("--harmonics", type=int, default=ex.DEFAULT_HARMONICS,
                        help=f"harmonics per joint (default {ex.DEFAULT_HARMONICS})")
    parser.add_argument("--rate", type=float, default=500.0, metavar="HZ", help="samples per second in the file (default 500)")
    parser.add_argument("--margin", type=float, default=ex.DEFAULT_MARGIN,
                        help=f"fraction of each limit to use (default {ex.DEFAULT_MARGIN:g})")
    parser.add_argument("--velocity-limit", nargs="+", default=[], metavar="LIMIT",
                        help=f"override the URDF's velocity limits: one value for every joint or name=value "
                             f"(default: the URDF's, else {ex.DEFAULT_VELOCITY_LIMIT:g})")
    parser.add_argument("--acceleration-limit", nargs="+", default=[], metavar="LIMIT",
                        help=f"acceleration limits: one value or name=value (default {ex.DEFAULT_ACCELERATION_LIMIT:g})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the optimisation's random starts (default 0)")
    parser.add_argument("--armature", action="store_true",
                        help="design for identify --armature (the armature of every joint estimated)")


def add_identify_arguments(parser):
    parser.add_argument("recording", metavar="RECORDING", help="rosbag2 directory (sqlite3 or MCAP) or CSV file")
    parser.add_argument("--urdf", required=True, help="the robot's URDF (file or bundled robot name)")
    parser.add_argument("--topic", default="joint_states", help="JointState topic in a bag (default joint_states)")
    parser.add_argument("--friction", action="store_true", help="identify viscous and Coulomb friction per joint")
    parser.add_argument("--armature", action="store_true",
                        help="identify the armature (reflected rotor inertia) of every joint, not only of the joints "
                             "whose URDF <transmission> gives one")
    parser.add_argument("--payload", metavar="LINK",
                        help="identify only a payload fixed to LINK (the URDF is trusted for the robot)")
    parser.add_argument("--validate", metavar="RECORDING2",
                        help="validate on this recording (default: hold out the end of RECORDING)")
    parser.add_argument("--output", default="identification", metavar="DIR", help="directory for the results")
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, metavar="HZ",
                        help=f"low-pass cut-off for positions and torques (default {DEFAULT_CUTOFF:g})")
    parser.add_argument("--holdout", type=float, default=DEFAULT_HOLDOUT,
                        help=f"fraction held out for validation without --validate (default {DEFAULT_HOLDOUT:g})")


def _limits(model, values, what):
    """{joint: limit} from ['2.0'] (every joint) or ['name=2.0', ...]."""
    if not values:
        return {}
    try:
        if len(values) == 1 and "=" not in values[0]:
            return dict.fromkeys(model.joint_names, float(values[0]))
        return {name: float(value) for name, _, value in (item.partition("=") for item in values)}
    except ValueError:
        raise ex.ExcitationError(f"--{what}: give one number or name=number pairs, not {' '.join(values)}") from None


def run_excite(args, model, out, err):
    """``robot-dynamics excite``: design, print the figures that matter, write the CSV."""
    import robot_dynamics as rd

    if not (math.isfinite(args.duration) and args.duration > 0 and args.period > 0 and args.rate > 0):
        raise ex.ExcitationError("--duration, --period and --rate must be positive")
    periods = max(1, round(args.duration / args.period))
    excitation = ex.design_excitation(model, args.period, args.harmonics, args.margin,
                                      _limits(model, args.velocity_limit, "velocity-limit"),
                                      _limits(model, args.acceleration_limit, "acceleration-limit"), seed=args.seed,
                                      armature=args.armature)
    duration = periods * args.period
    rotors = ex.estimated_armature(model, args.armature)
    ex.write_trajectory_csv(args.output, excitation, duration, args.rate)
    t = np.linspace(0, args.period, 2000)
    q, qd, qdd = excitation(t)
    tau = rd.inverse_dynamics(model, q, qd, qdd)
    out.write(f"excitation for {model.name}: {periods} period(s) of {args.period:g} s = {duration:g} s, "
              f"{args.harmonics} harmonics, written to {args.output} at {args.rate:g} Hz\n")
    out.write(f"condition number of the base regressor over one period: "
              f"{ex.regressor_condition(model, excitation, _independent(model, args.armature), 500, rotors):.4g}\n")
    out.write(f"{'joint':24} {'start':>8} {'min q':>8} {'max q':>8} {'max |qd|':>9} {'max |qdd|':>9} {'max |tau|':>9}\n")
    for j, name in enumerate(model.joint_names):
        out.write(f"{name:24} {q[0, j]:8.3f} {q[:, j].min():8.3f} {q[:, j].max():8.3f} {np.abs(qd[:, j]).max():9.3f} "
                  f"{np.abs(qdd[:, j]).max():9.3f} {np.abs(tau[:, j]).max():9.3g}\n")
        if np.abs(tau[:, j]).max() > model.effort_limits[j]:
            err.write(f"warning: {name} needs up to {np.abs(tau[:, j]).max():.3g} with this URDF, above its effort "
                      f"limit {model.effort_limits[j]:g}: lower --acceleration-limit or lengthen --period\n")
    if abs(duration - args.duration) > 1e-9:
        err.write(f"warning: --duration {args.duration:g} s rounded to {duration:g} s (whole periods of {args.period:g} s)\n")
    return 0


def _independent(model, armature):
    from .identify import full_problem, structural_base

    return structural_base(full_problem(model, friction=False, armature=armature))[0]


def run_identify(args, model, urdf_path, out, err):
    """``robot-dynamics identify``: identify, print the RMS errors, write DIR/identified.urdf etc."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recording = read_recording(args.recording, args.topic)
        validation = read_recording(args.validate, args.topic) if args.validate else None
        estimate, check = identify(recording, model, friction=args.friction, payload=args.payload,
                                   validation=validation, cutoff=args.cutoff, holdout=args.holdout,
                                   armature=args.armature)
    for warning in caught:
        err.write(f"warning: {warning.message}\n")
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    written = [output / "identified.urdf", output / "parameters.txt"]
    written[0].write_text(identified_urdf(urdf_path, estimate, args.payload))
    written[1].write_text(parameter_table(estimate, check))
    if args.payload:
        written.append(output / "payload.yaml")
        written[-1].write_text(payload_yaml(args.payload, estimate.x[:10]))
    try:
        plot_validation(output / "validation.png", model.joint_names, check)
        written.append(output / "validation.png")
    except ImportError:
        err.write("warning: no plot: matplotlib is not installed (pip install matplotlib)\n")
    out.write(f"{len(estimate.base_names)} base parameters from {estimate.samples} states; condition number "
              f"{estimate.condition:.4g}; largest relative standard deviation "
              f"{estimate.relative_std.max():.3g} % ({estimate.base_names[int(np.argmax(estimate.relative_std))]})\n")
    out.write("\n".join(validation_lines(model.joint_names, check)) + "\n")
    out.write("wrote " + ", ".join(str(path) for path in written) + "\n")
    return 0
