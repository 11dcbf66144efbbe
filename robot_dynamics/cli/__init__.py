"""``robot-dynamics``: the command-line tool for the person at the keyboard.

Subcommands::

    robot-dynamics robots                         the bundled robots and their files
    robot-dynamics compile [PART ...]             compile the dynamics kernels ahead, saying how long it took
    robot-dynamics info URDF                      joints, limits, masses, inertia bounds, warnings
    robot-dynamics gravity URDF --q ...           holding torques g(q)
    robot-dynamics mass-matrix URDF --q ...       M(q)
    robot-dynamics demo                           the closed-loop computed-torque demo (ROS 2)
    robot-dynamics sim [--robot URDF] [--namespace NS] [--sim-time] ...
                                                  the simulation graph, running until Ctrl-C (ROS 2)
    robot-dynamics excite URDF --duration S --output FILE
                                                  an excitation trajectory for identification
    robot-dynamics identify RECORDING --urdf URDF a calibrated URDF (and payload) from a recording
    robot-dynamics check-trajectory URDF TRAJECTORY
                                                  does a planned trajectory stay within the limits?
    robot-dynamics retime URDF TRAJECTORY         the shortest timing of its path within the velocity,
                                                  acceleration and effort limits, efforts filled
    robot-dynamics external-torques RECORDING --urdf URDF
                                                  the momentum observer's residual over a recording
    robot-dynamics demo-contact                   an arm driven into a wall: contact, collision, reaction
    robot-dynamics bench [core|node|simulator|scaling|contact] [OPTIONS]
                                                  the benchmarks (core, node and simulator need the
                                                  test extra; scaling needs matplotlib for its plot)

``URDF`` is a file path or the name of a bundled robot (``planar_2r``, ``arm7_gripper``,
``cartesian_3dof``). ``--q`` takes the joint values in model order (``--q 0 0.5``, also
``--q 0,0.5``) or by name (``--q theta2=0.5``; joints not named are 0). Errors are one line on
stderr and a non-zero exit status:

- 2: a command-line usage error (argparse), and bad input found before any work: to ``excite``,
  ``identify`` and ``external-torques`` (a recording, an option's value, an output path), to
  ``check-trajectory`` and ``retime`` (their URDF or robot name included: their 1 means a limit is
  exceeded, or no timing keeps it), and to
  ``sim`` and ``demo`` (a namespace, a ``--params`` file, ``--global-clock`` without ``--sim-time``,
  a domain ROS 2 does not accept, a duration, radius or frequency out of range), before a node starts;
- 1: an unreadable or invalid URDF or an unknown robot (every command but ``check-trajectory``), a
  bad ``--q``, a bad option value of ``demo-elastic`` or ``demo-contact``, a missing dependency, a
  graph that cannot start (another one already runs there, a node that ends or does not answer),
  and ``check-trajectory``'s verdict "beyond a limit".

Only the ``demo``, ``sim`` and ``bench`` subcommands need ROS 2 (rclpy) and matplotlib; the others need
only the core library.

Each module of this package adds its commands to the parser (``register(commands)``, each command's
``run(args)`` set as its default); a new command is a new module listed in :data:`COMMAND_MODULES`.
"""

import sys

from . import bench, check_trajectory, compiling, contact, demos, identification, info, joint_space, retime, robots, sim
from .arguments import CLIError, Parser

PROG = "robot-dynamics"

#: the modules that register commands, in the order ``--help`` lists them
COMMAND_MODULES = (robots, compiling, info, joint_space, demos, sim, identification, check_trajectory, retime, contact,
                   bench)


def build_parser():
    parser = Parser(prog=PROG, description="Rigid-body dynamics of robot arms from URDF, and ROS 2 nodes.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True
    for module in COMMAND_MODULES:
        module.register(commands)
    return parser


def main(argv=None):
    """Entry point of the ``robot-dynamics`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    benchmark_options = []
    if argv[:1] == ["bench"]:  # bench [WHICH ...] [options for the benchmarks, --help included]
        argv, benchmark_options = bench.split_options(argv)
    args = build_parser().parse_args(argv)
    args.benchmark_options = benchmark_options
    try:
        return args.run(args)
    except CLIError as error:
        sys.stderr.write(f"{PROG} {args.command}: error: {error}\n")
        return error.status
    except KeyboardInterrupt as interrupt:  # Ctrl-C; SIGTERM too where processes.interrupt_on_sigterm is set
        sys.stderr.write(f"{PROG} {args.command}: {getattr(interrupt, 'MESSAGE', 'interrupted')}\n")
        return getattr(interrupt, "STATUS", 130)

