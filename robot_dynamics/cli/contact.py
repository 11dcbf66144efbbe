"""``robot-dynamics external-torques RECORDING --urdf URDF``: a thin adapter over
:mod:`robot_dynamics.tools.external_torques`."""

import sys

from .arguments import CLIError, load_model, warn


def register(commands):
    from ..tools.external_torques import add_arguments

    parser = commands.add_parser("external-torques", help="the momentum observer's external torques over a "
                                 "joint_states recording (rosbag2 or CSV): residual per joint, RMS, peak, suggested "
                                 "collision thresholds")
    add_arguments(parser)
    parser.set_defaults(run=run)


def run(args):
    from ..tools import external_torques

    model, _, load_warnings = load_model(args.urdf, args.command)
    warn(load_warnings)
    try:
        return external_torques.run(args, model, sys.stdout, sys.stderr)
    except external_torques.ERRORS as error:
        raise CLIError(str(error)) from None
