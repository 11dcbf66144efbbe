"""What every ``robot-dynamics`` command shares: the one-line errors, the URDF argument and ``--q``."""

import argparse
import math
import sys
import warnings

import numpy as np


class CLIError(Exception):
    """A user error: printed as one line on stderr, exit status ``status`` (1; 2 for bad input found
    before any work: see :mod:`robot_dynamics.cli` for which)."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (plus where to find help) and exit status 2."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


def positive_number(text):
    """An argparse ``type``: a finite number above 0 (``--rate``), else a one-line usage error (exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"give a positive, finite number, got {text!r}")
    return value


def add_urdf_argument(parser):
    parser.add_argument("urdf", metavar="URDF", help="URDF file, or the name of a bundled robot (see 'robots')")


def resolve_urdf(argument):
    """The URDF file for a command-line argument: an existing file, else a bundled robot name."""
    from ..description.robots import urdf_file

    try:
        return urdf_file(argument)
    except LookupError as exc:
        raise CLIError(str(exc)) from None


#: the compile parts (:data:`robot_dynamics.compiling.PARTS`) whose kernels each command calls
COMMAND_KERNELS = {
    "info": ("dynamics_node",),
    "gravity": ("dynamics_node",),
    "mass-matrix": ("dynamics_node",),
    "excite": ("dynamics_node", "library"),
    "identify": ("dynamics_node", "estimators", "library"),  # the collision thresholds run the observer
    "estimate-payload": ("dynamics_node", "library"),
    "demo": ("dynamics_node", "simulator"),  # the nodes': compiled once here, not by each at once
    "check-trajectory": ("dynamics_node", "library"),  # batched inverse dynamics; --friction
    "retime": ("dynamics_node", "library"),  # batched inverse dynamics, the reachability kernel; --friction
    "external-torques": ("dynamics_node", "estimators"),
    "demo-contact": ("dynamics_node", "simulator", "estimators"),
}


def load_model(argument, command, mimic=True):
    """(model, path, [warning messages]) for a URDF argument of ``command``; load warnings are captured.
    On the first use after installing, the command's kernels compile first, saying so."""
    import robot_dynamics as rd
    from ..compiling import compile_and_report

    path = resolve_urdf(argument)
    compile_and_report(COMMAND_KERNELS[command], "the dynamics kernels", say)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = rd.load_urdf(path, mimic=mimic)
        except rd.URDFError as error:
            raise CLIError(f"cannot load {str(path)!r}: {error}") from None
    return model, path, [str(w.message) for w in caught]


def say(line):
    """A line of progress on stderr (stdout is the command's result)."""
    print(line, file=sys.stderr, flush=True)


def warn(messages):
    for message in messages:
        sys.stderr.write(f"warning: {message}\n")


def parse_configuration(model, values):
    """Joint positions in model order from ``--q`` values (positional list or name=value pairs)."""
    if not values:
        return np.zeros(model.nv)
    tokens = [token for value in values for token in value.replace(",", " ").split()]
    named = ["=" in token for token in tokens]
    if any(named) and not all(named):
        raise CLIError("--q: give either all values in model order or only name=value pairs, not a mix")
    if not all(named):
        try:
            q = np.array([float(token) for token in tokens])
        except ValueError as error:
            raise CLIError(f"--q: {error}") from None
        if q.shape != (model.nv,):
            raise CLIError(
                f"--q: {model.name} has {model.nv} joints ({', '.join(model.joint_names)}) "
                f"but {len(tokens)} values were given"
            )
    else:
        q = np.zeros(model.nv)
        index = {name: i for i, name in enumerate(model.joint_names)}
        seen = set()
        for token in tokens:
            name, _, text = token.partition("=")
            if name in model.couplings:
                masters = ", ".join(repr(master) for master, _ in model.couplings[name][0])
                verb = "mimics" if len(model.couplings[name][0]) == 1 else "follows"
                raise CLIError(f"--q: joint {name!r} {verb} {masters}: give {masters} instead")
            if name not in index:
                raise CLIError(f"--q: unknown joint {name!r} (joints: {', '.join(model.joint_names)})")
            if name in seen:
                raise CLIError(f"--q: joint {name!r} given twice")
            seen.add(name)
            try:
                q[index[name]] = float(text)
            except ValueError:
                raise CLIError(f"--q: {text!r} is not a number (for joint {name!r})") from None
    bad = [name for name, value in zip(model.joint_names, q) if not math.isfinite(value)]
    if bad:
        raise CLIError(f"--q: non-finite value for {', '.join(bad)}")
    return q


def limit_notes(model, q):
    lower, upper = model.position_limits.T
    return [
        f"{name} = {value:g} is outside its limits [{lo:g}, {hi:g}]"
        for name, value, lo, hi in zip(model.joint_names, q, lower, upper)
        if value < lo or value > hi
    ]


def json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value).__name__)


def add_model_arguments(parser):
    """The URDF argument, ``--no-mimic`` and ``--json`` of the commands that print one model's values."""
    add_urdf_argument(parser)
    parser.add_argument("--no-mimic", action="store_true", help="ignore <mimic> tags: every moving joint is a coordinate")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser
