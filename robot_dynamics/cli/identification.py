"""``robot-dynamics excite URDF`` (an excitation trajectory) and ``identify RECORDING --urdf URDF``
(a calibrated URDF, friction and payload): thin adapters over :mod:`robot_dynamics.identification.commands`."""

import sys

from .arguments import CLIError, add_urdf_argument, load_model, warn


def register(commands):
    from ..identification.commands import add_excite_arguments, add_identify_arguments

    excite = commands.add_parser("excite", help="excitation trajectory for identification (Fourier series, CSV)")
    add_urdf_argument(excite)
    add_excite_arguments(excite)
    excite.set_defaults(run=run)
    identify = commands.add_parser("identify", help="identified URDF, friction and payload from "
                                   "joint_states recordings (rosbag2 or CSV)")
    add_identify_arguments(identify)
    identify.set_defaults(run=run)


def run(args):
    from ..identification import commands

    model, path, load_warnings = load_model(args.urdf, args.command)
    warn(load_warnings)
    try:
        if args.command == "excite":
            return commands.run_excite(args, model, sys.stdout, sys.stderr)
        return commands.run_identify(args, model, path, sys.stdout, sys.stderr)
    except commands.ERRORS as error:  # bad input: a recording, an option's value, an output path
        raise CLIError(str(error), status=2) from None
