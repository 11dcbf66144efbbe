"""The ``excite`` and ``identify`` subcommands of ``robot-dynamics`` (arguments and what they print).

Every bad input (an option's value, a recording, an output path) is an error in ``ERRORS``: one
line naming the input and the problem, exit status 2; the options and the output path are
checked before any work, and nothing is written unless everything is (:mod:`.output`)."""

import io
import math
import warnings

import numpy as np

from . import excitation as ex
from .identify import IdentificationError
from .output import OutputError, check_directory, check_file, write_directory
from .pipeline import identify
from .reading import (
    add_recording_arguments, check_recording_arguments, drive_settings, one_line_warnings, read_recordings, recording_model,
)
from .recording import RecordingError
from .residuals import FOLDS, GAINS, collision_yaml, identified_thresholds, threshold_lines
from .report import (
    identified_urdf, parameter_table, payload_yaml, plausibility_notes, plot_validation, validation_lines,
)
from .samples import DEFAULT_CUTOFF
from .validation import parse_holdout, repeat_period
from .visibility import visibility_lines

ERRORS = (ex.ExcitationError, IdentificationError, RecordingError, OutputError)
MAX_HARMONICS = 50


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
    parser.add_argument("--scale", type=float, default=1.0, metavar="S",
                        help="shrink every joint's swing to S times the designed one, 0 < S <= 1 (default 1)")
    parser.add_argument("--max-amplitude", type=float, default=None, metavar="RAD",
                        help="cap each joint's swing about its centre at RAD (m for a prismatic joint)")
    parser.add_argument("--tool", default=None, metavar="FRAME",
                        help="the frame whose swept box is reported (default: the link that sweeps the largest)")


def add_identify_arguments(parser):
    add_recording_arguments(parser)
    parser.add_argument("--friction", action="store_true", help="identify viscous and Coulomb friction per joint")
    parser.add_argument("--torque-offsets", action="store_true",
                        help="identify a constant torque offset per joint and recording (a drive's bias)")
    parser.add_argument("--armature", action="store_true",
                        help="identify the armature (reflected rotor inertia) of every joint, not only of the joints "
                             "whose URDF <transmission> gives one")
    parser.add_argument("--payload", metavar="LINK",
                        help="identify only a payload fixed to LINK (the URDF is trusted for the robot)")
    parser.add_argument("--validate", metavar="RECORDING2",
                        help="validate on this recording (default: --holdout of the recordings)")
    parser.add_argument("--holdout", default="last",
                        help="the data kept out of the fit for validation: last, first, last:F or first:F (a fraction F "
                             "of each recording, default last:0.25), a bare fraction F, or kfold:N (N contiguous blocks, "
                             "each predicted by a fit on the others)")
    parser.add_argument("--excitation", metavar="FILE",
                        help="the excite CSV the robot played: its period tells whether the held-out part repeats it "
                             "(default: detected from the positions)")
    parser.add_argument("--output", default="identification", metavar="DIR", help="directory for the results")
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, metavar="HZ",
                        help=f"low-pass cut-off for positions and torques (default {DEFAULT_CUTOFF:g})")
    parser.add_argument("--gain", type=float, metavar="K_O",
                        help="observer gain K_O, 1/s, of the suggested collision thresholds (default: chosen from the "
                             f"data among {', '.join(map('{:g}'.format, GAINS))})")


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


def _positive(option, value, error=ex.ExcitationError):
    if not (math.isfinite(value) and value > 0):
        raise error(f"{option} {value:g}: give a positive, finite number")


def check_excite_arguments(args, model):
    """Refuse bad option values before any work (one line each)."""
    for option, value in (("--duration", args.duration), ("--period", args.period), ("--rate", args.rate)):
        _positive(option, value)
    if not 1 <= args.harmonics <= MAX_HARMONICS:
        raise ex.ExcitationError(f"--harmonics {args.harmonics}: give 1 to {MAX_HARMONICS}")
    if not 0 < args.margin <= 1:
        raise ex.ExcitationError(f"--margin {args.margin:g}: give a fraction in (0, 1]")
    if args.duration * args.rate + 1 > ex.MAX_ROWS:
        raise ex.ExcitationError(f"--duration {args.duration:g} s at --rate {args.rate:g} Hz is "
                                 f"{args.duration * args.rate:.3g} rows, over the {ex.MAX_ROWS} a trajectory file may "
                                 "hold: shorten it or lower the rate")
    ex.check_scaling(args.scale, args.max_amplitude)
    if args.tool is not None and args.tool not in model.link_names:
        raise ex.ExcitationError(f"--tool {args.tool!r}: no such link (links: {', '.join(model.link_names)})")
    check_file(args.output)


def run_excite(args, model, out, err):
    """``robot-dynamics excite``: design, print the figures that matter, write the CSV."""
    import robot_dynamics as rd

    check_excite_arguments(args, model)
    periods = max(1, round(args.duration / args.period))
    excitation = ex.design_excitation(model, args.period, args.harmonics, args.margin,
                                      _limits(model, args.velocity_limit, "velocity-limit"),
                                      _limits(model, args.acceleration_limit, "acceleration-limit"), seed=args.seed,
                                      armature=args.armature)
    excitation = ex.scaled(excitation, args.scale, args.max_amplitude)
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
    lower, upper = model.position_limits.T
    out.write(f"{'joint':24} {'start':>8} {'min q':>8} {'max q':>8} {'swing':>7} {'to limit':>8} {'max |qd|':>9} "
              f"{'max |qdd|':>9} {'max |tau|':>9}\n")
    for j, name in enumerate(model.joint_names):
        clearance = min(q[:, j].min() - lower[j], upper[j] - q[:, j].max())
        out.write(f"{name:24} {q[0, j]:8.3f} {q[:, j].min():8.3f} {q[:, j].max():8.3f} {np.ptp(q[:, j]):7.3f} "
                  f"{clearance:8.3f} {np.abs(qd[:, j]).max():9.3f} {np.abs(qdd[:, j]).max():9.3f} {np.abs(tau[:, j]).max():9.3g}\n")
        if np.abs(tau[:, j]).max() > model.effort_limits[j]:
            err.write(f"warning: {name} needs up to {np.abs(tau[:, j]).max():.3g} with this URDF, above its effort "
                      f"limit {model.effort_limits[j]:g}: lower --acceleration-limit or lengthen --period\n")
    _warn_workspace(model, excitation, q, args, err)
    if abs(duration - args.duration) > 1e-9:
        err.write(f"warning: --duration {args.duration:g} s rounded to {duration:g} s (whole periods of {args.period:g} s)\n")
    return 0


def _warn_workspace(model, excitation, q, args, err):
    """Before a real run: how far the joints swing and the box the tool sweeps (a real arm hits what is in it)."""
    widest = int(np.argmax(np.ptp(q, axis=0)))
    unit = "m" if model.joint_types[widest] == "prismatic" else "rad"
    frame, low, high = ex.swept_box(model, excitation, args.tool)
    err.write(f"warning: workspace: the joints swing by up to {np.ptp(q[:, widest]):.2f} {unit} ({model.joint_names[widest]}; "
              f"'swing' above, 'to limit' the margin kept to the URDF limits); {frame} sweeps x {low[0]:+.2f}..{high[0]:+.2f}, "
              f"y {low[1]:+.2f}..{high[1]:+.2f}, z {low[2]:+.2f}..{high[2]:+.2f} m in the base frame"
              + (" (below the base: through a table it stands on)" if low[2] < 0 else "") + ". Before playing it "
              "on a real arm, clear that volume (the table, people, cables: self-collision is not checked) and start "
              "smaller: --scale 0.3 or --max-amplitude 0.5\n")


def _independent(model, armature):
    from .identify import full_problem, structural_base

    return structural_base(full_problem(model, friction=False, armature=armature))[0]


def check_identify_arguments(args):
    """Refuse bad option values and an unusable output directory before any work."""
    _positive("--cutoff", args.cutoff, RecordingError)
    if args.gain is not None:
        _positive("--gain", args.gain, RecordingError)
    check_recording_arguments(args)
    check_directory(args.output, names=("identified.urdf", "parameters.txt", "payload.yaml", "collision.yaml",
                                        "validation.png"))
    return parse_holdout(args.holdout)


def _excitation_period(path):
    trajectory = ex.read_trajectory_csv(path)
    period, _ = repeat_period(trajectory.t, trajectory.q)
    return period


def run_identify(args, model, urdf_path, out, err):
    """``robot-dynamics identify``: identify, print the RMS errors and what the data cannot see,
    write DIR/identified.urdf etc. (all or nothing)."""
    with one_line_warnings(err):
        return _identify(args, model, urdf_path, out, err)


def _identify(args, model, urdf_path, out, err):
    holdout = check_identify_arguments(args)
    model, locks = recording_model(args, model, urdf_path)
    drive = drive_settings(args, model)
    recordings = read_recordings(args.recordings, args, locks)
    validation = read_recordings([args.validate], args, locks)[0] if args.validate else None
    period = _excitation_period(args.excitation) if args.excitation else None
    estimate, check = identify(recordings, model, friction=args.friction, payload=args.payload,
                               validation=validation, cutoff=args.cutoff, holdout=holdout,
                               armature=args.armature, offsets=args.torque_offsets, drive=drive, period=period)
    for note in plausibility_notes(estimate) if args.payload is None else ():
        warnings.warn(note, stacklevel=1)
    seen = visibility_lines(estimate)
    files = {"identified.urdf": identified_urdf(urdf_path, estimate, args.payload),
             "parameters.txt": parameter_table(estimate, check) + "\n" + "\n".join(seen) + "\n"}
    if args.payload:
        files["payload.yaml"] = payload_yaml(args.payload, estimate.x[:10])
    thresholds = _thresholds(args, estimate, check, recordings, validation, model, urdf_path, locks, drive, holdout)
    if thresholds:
        files["collision.yaml"] = thresholds[1]
    files = {name: text.encode() for name, text in files.items()}
    try:
        image = io.BytesIO()
        plot_validation(image, model.joint_names, check, model.joint_types)
        files["validation.png"] = image.getvalue()
    except ImportError:
        err.write("warning: no validation plot: matplotlib is not installed "
                  "(pip install 'robot_dynamics[plot]', or pip install matplotlib)\n")
    write_directory(args.output, files)
    out.write(headline(estimate) + "\n")
    out.write("\n".join(validation_lines(model.joint_names, check)) + "\n")
    out.write("\n".join(seen[:1]) + "\n")
    if thresholds:
        out.write("\n".join(thresholds[0]) + "\n")
    out.write("wrote " + ", ".join(str(args.output) + "/" + name for name in files) + "\n")
    return 0


def _thresholds(args, estimate, check, recordings, validation, model, urdf_path, locks, drive, holdout):
    """(lines to print, collision.yaml) of the cross-validated collision thresholds (:mod:`.residuals`), or
    None, warned, when the data cannot give them."""
    folds = holdout.folds if holdout.kind == "kfold" else FOLDS
    try:
        found, held, friction = identified_thresholds(estimate, check, recordings, validation, model, urdf_path, locks,
                                                      drive, args.cutoff, folds, args.gain, args.payload)
    except IdentificationError as error:
        warnings.warn(f"no collision thresholds: {error}", stacklevel=1)
        return None
    label = f"{args.validate} (validation)" if args.validate else check.label
    return threshold_lines(model, found, held, label), collision_yaml(model, found, friction, drive)


def headline(estimate):
    """What to believe of the estimate, in one line that the same data always give alike."""
    within = int(np.sum(2 * estimate.base_std <= 0.1 * np.abs(estimate.base_ols)))
    return (f"{len(estimate.base_names)} base parameters from {estimate.samples} states; condition number "
            f"{estimate.condition:.4g}; {within} of {len(estimate.base_names)} known within +-10 % (2 sigma, from "
            f"residuals correlated over {estimate.correlation_time:.3g} s)")
