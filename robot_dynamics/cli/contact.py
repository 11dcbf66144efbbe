"""``robot-dynamics external-torques RECORDING --urdf URDF`` and ``demo-contact``: thin adapters over
:mod:`robot_dynamics.tools.external_torques` and :mod:`robot_dynamics.tools.contact_demo`."""

import sys

from .arguments import CLIError, load_model, warn


def register(commands):
    from ..tools.external_torques import add_arguments

    parser = commands.add_parser("external-torques", help="the momentum observer's external torques over a "
                                 "joint_states recording (rosbag2 or CSV): residual per joint, RMS, peak, suggested "
                                 "collision thresholds")
    add_arguments(parser)
    parser.set_defaults(run=run)

    from ..tools.contact_demo import add_arguments as add_demo_arguments

    demo = commands.add_parser("demo-contact", help="an arm driven into a wall under computed torque: the observer's "
                               "wrench estimate against the true contact force, collision and the gravity hold "
                               "(in process, no ROS)")
    add_demo_arguments(demo)
    demo.set_defaults(run=run_demo)


def run_demo(args):
    from ..compiling import compile_and_report
    from ..tools.contact_demo import run_demo as run_contact_demo
    from .arguments import COMMAND_KERNELS, say

    compile_and_report(COMMAND_KERNELS["demo-contact"], "the dynamics kernels", say)
    try:
        return run_contact_demo(args, sys.stdout)
    except ValueError as error:
        raise CLIError(str(error)) from None


def run(args):
    from ..tools import external_torques

    model, path, load_warnings = load_model(args.urdf, args.command)
    warn(load_warnings)
    try:
        return external_torques.run(args, model, path, sys.stdout, sys.stderr)
    except external_torques.ERRORS as error:  # bad input: a recording, an option's value, an output path
        raise CLIError(str(error), status=2) from None
