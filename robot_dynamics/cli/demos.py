"""``robot-dynamics demo`` (the closed-loop computed-torque demo over ROS 2), ``demo-elastic``
(computed torque on an elastic-joint arm, in process), ``demo-payload`` (a payload estimated and
applied, in process) and ``demo-trajectory`` (a planner's timing against the torque limits and the
retimed one, tracked in the simulator, in process)."""

import sys

from .arguments import CLIError, load_model


def register(commands):
    from ..tools.demo import add_arguments
    from ..tools.elastic_demo import add_arguments as add_elastic_arguments

    demo = commands.add_parser("demo", help="closed-loop computed-torque demo: simulator + dynamics node (ROS 2)")
    add_arguments(demo)
    demo.set_defaults(run=run_demo)
    elastic = commands.add_parser("demo-elastic", help="computed torque on an elastic-joint arm, with and without "
                                  "the elastic model (in process, no ROS)")
    add_elastic_arguments(elastic)
    elastic.set_defaults(run=run_elastic_demo)
    from ..tools.payload_demo import add_arguments as add_payload_arguments

    payload = commands.add_parser("demo-payload", help="the arm given a payload its model does not know: tracking "
                                  "before, the payload estimated from four held poses, tracking after (in process, no ROS)")
    add_payload_arguments(payload)
    payload.set_defaults(run=run_payload_demo)

    from ..tools.trajectory_demo import add_arguments as add_trajectory_arguments

    trajectory = commands.add_parser("demo-trajectory", help="a planner's timing breaks the torque limits, the "
                                     "retimed one does not: both tracked under computed torque (in process, no ROS)")
    add_trajectory_arguments(trajectory)
    trajectory.set_defaults(run=run_trajectory_demo)


def run_demo(args):
    from ..tools.demo import DemoError, check_arguments, run_demo as run
    from ..tools.processes import interrupt_on_sigterm

    interrupt_on_sigterm()  # it starts the nodes: a SIGTERM stops them as a Ctrl-C does

    try:
        check_arguments(args)
        if args.task_space:
            from ..tools.task_space_demo import run_task_space_demo

            return run_task_space_demo(args, *load_model(args.robot, "demo"))
        return run(args, *load_model(args.robot, "demo"))
    except DemoError as error:
        raise CLIError(str(error), status=error.status) from None


def run_elastic_demo(args):
    from ..tools.elastic_demo import run_demo as run

    try:
        return run(args, sys.stdout)
    except ValueError as error:
        raise CLIError(str(error)) from None


def run_payload_demo(args):
    from ..tools.payload_demo import run_demo as run

    try:
        return run(args, sys.stdout, sys.stderr)
    except ValueError as error:
        raise CLIError(str(error)) from None


def run_trajectory_demo(args):
    from ..tools.trajectory_demo import run_demo as run

    return run(args, sys.stdout)
