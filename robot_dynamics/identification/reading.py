"""The recording options and checks that ``identify`` and ``external-torques`` share: one reader
(:func:`read_recordings`), one set of options (:func:`add_recording_arguments`), one set of checks.

``--lock JOINT=VALUE`` holds a joint the recording lacks (refused beyond the joint's limits, or
on a joint the recording moves); ``--passive JOINT`` declares an unactuated joint (its torque is
0); ``--effort-sign``, ``--effort-scale`` and ``--position-unit`` undo a drive's conventions
(:mod:`.drive`); ``--rate`` times a CSV without a ``t`` column.  Warnings print as one line each
(:func:`one_line_warnings`)."""

import contextlib
import math
import warnings

import numpy as np

from .drive import parse_effort_signs
from .pipeline import DriveSettings
from .recording import RecordingError, read_recording

MOVING = 1e-3  # rad or m: a recorded joint whose positions span more than this moves


def add_recording_arguments(parser, several=True):
    if several:
        parser.add_argument("recordings", nargs="+", metavar="RECORDING",
                            help="rosbag2 directory (sqlite3 or MCAP) or CSV file; several are fitted together")
    else:
        parser.add_argument("recording", metavar="RECORDING", help="rosbag2 directory (sqlite3 or MCAP) or CSV file")
    parser.add_argument("--urdf", required=True, help="the robot's URDF (file or bundled robot name)")
    parser.add_argument("--lock", action="append", default=[], metavar="JOINT=VALUE",
                        help="hold a joint the recording lacks at a position (rad or m), folded into its parent link "
                             "like a fixed joint (repeatable; joints that mimic it follow)")
    parser.add_argument("--passive", action="append", default=[], metavar="JOINT",
                        help="an unactuated joint (a sliding stand, a free wheel): its torque is 0 whatever the "
                             "recording says (repeatable)")
    parser.add_argument("--topic", default="joint_states", help="JointState topic in a bag (default joint_states)")
    parser.add_argument("--rate", type=float, metavar="HZ", help="sampling rate of a CSV recording without a t column")
    parser.add_argument("--effort-sign", nargs="+", default=[], metavar="SIGN",
                        help="-1 for every joint, or joint=-1 pairs: drives that report effort with the opposite sign")
    parser.add_argument("--effort-scale", type=float, default=1.0, metavar="S",
                        help="multiply the recorded efforts by S (0.001 for efforts in mN m; default 1)")
    parser.add_argument("--position-unit", choices=("rad", "deg"), default="rad",
                        help="unit of the recorded revolute positions and velocities (default rad)")


def check_recording_arguments(args):
    """Refuse bad option values before any work."""
    if args.rate is not None and not (math.isfinite(args.rate) and args.rate > 0):
        raise RecordingError(f"--rate {args.rate:g}: give a positive, finite number")
    if not (math.isfinite(args.effort_scale) and args.effort_scale != 0):
        raise RecordingError(f"--effort-scale {args.effort_scale:g}: give a finite, non-zero factor")


def parse_locks(values, model):
    """{joint: position} from ['joint=0.02', ...]; a position outside the joint's limits is refused."""
    locks = {}
    for item in values:
        name, _, value = (part.strip() for part in item.partition("="))
        try:
            position = float(value)
            if not name or not math.isfinite(position):
                raise ValueError
        except ValueError:
            raise RecordingError(f"--lock {item!r}: give JOINT=VALUE with a finite position (rad or m)") from None
        if name in model.joint_names:
            lower, upper = model.position_limits[model.joint_names.index(name)]
            if not lower - 1e-9 <= position <= upper + 1e-9:
                raise RecordingError(f"--lock {item}: outside its limits [{lower:g}, {upper:g}]")
        locks[name] = position
    return locks


def recording_model(args, model, urdf_path):
    """The model the recordings are read against: ``model`` with the ``--lock`` joints held."""
    import robot_dynamics as rd

    if not args.lock:
        return model, {}
    locks = parse_locks(args.lock, model)
    try:
        return rd.load_urdf(urdf_path, locks=locks), locks
    except rd.URDFError as error:
        raise RecordingError(f"--lock: {error}") from None


def drive_settings(args, model):
    unknown = [name for name in args.passive if name not in model.joint_names]
    if unknown:
        raise RecordingError(f"--passive {unknown[0]}: not a joint of {model.name!r} "
                             f"(joints: {', '.join(model.joint_names)})")
    return DriveSettings(parse_effort_signs(model, args.effort_sign), args.effort_scale,
                         math.pi / 180 if args.position_unit == "deg" else 1.0, tuple(args.passive))


def check_locks(recording, locks):
    """Refuse a lock on a joint whose recorded positions move: the fit would discard that motion."""
    for name, value in locks.items():
        if name not in recording.series["q"]:
            continue
        positions = recording.series["q"][name][1]
        positions = positions[np.isfinite(positions)]
        if len(positions) and np.ptp(positions) > MOVING:
            raise RecordingError(f"{recording.source}: --lock {name}={value:g}, but the recording moves {name} over "
                                 f"[{positions.min():.4g}, {positions.max():.4g}]: locking it would discard that motion "
                                 f"(drop --lock {name})")


def read_recordings(paths, args, locks):
    """The recordings at ``paths``, each checked against the locks."""
    recordings = [read_recording(path, args.topic, args.rate) for path in paths]
    for recording in recordings:
        check_locks(recording, locks)
    return recordings


@contextlib.contextmanager
def one_line_warnings(err):
    """Every warning raised inside (the library's and numpy's alike), written to ``err`` as one line
    ``warning: <message>``, without Python's source line."""
    def show(message, *_):
        err.write(f"warning: {message}\n")

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        yield
