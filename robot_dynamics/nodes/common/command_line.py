"""The command line of the node executables (no rclpy until the node starts).

``dynamics_node``, ``simulator_node``, ``trajectory_publisher`` and ``trajectory_filter`` take, before ROS's own
``--ros-args ...``:

- ``-h``/``--help``: usage, the parameters with their defaults and the topics, written from the
  node's :class:`~robot_dynamics.nodes.common.parameters.Parameter` tuple; printed at once, nothing started;
- ``--urdf FILE_OR_ROBOT``: the robot's URDF file, or a bundled robot's name
  (:func:`robot_dynamics.description.robots.urdf_file`), read here and given to the node as its
  ``robot_description`` parameter (it takes precedence over one in a params file).

Then the executable says on stderr what it is doing, has its kernels loaded (``load_kernels``, the
entry point's compile step) and starts the node (:func:`~robot_dynamics.nodes.common.runner.run_node`).
Signals are the entry point's (``robot_dynamics_executables``) until the node spins, then
``run_node``'s.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
from dataclasses import dataclass

from ...input_files import MAX_URDF_BYTES, read_text_file

__all__ = ["MAX_URDF_BYTES", "help_text", "main"]

EXECUTORS = ("single", "events")  # runner.run_node's names for rclpy's executors


@dataclass(frozen=True)
class Executable:
    """One node executable: where its node class and its settings (plan) module are."""

    name: str
    node: str           # "module:Class"
    plan: str           # module with PARAMETERS, TOPICS (and SERVICES)
    node_name: str      # the default node name
    summary: str
    part: str | None    # the compile part of its kernels (robot_dynamics.compiling.PARTS), None: it has none
    executor: str       # its default executor, one of EXECUTORS


EXECUTABLES = {e.name: e for e in (
    Executable("dynamics_node", "robot_dynamics.nodes.dynamics.node:DynamicsNode",
               "robot_dynamics.nodes.dynamics.plan", "robot_dynamics",
               "Gravity, bias and computed torques and the mass matrix of the robot in robot_description, "
               "for every joint_states message.", "dynamics_node", "single"),
    Executable("simulator_node", "robot_dynamics.nodes.simulator.node:SimulatorNode",
               "robot_dynamics.nodes.simulator.plan", "robot_dynamics_simulator",
               "The forward dynamics of the robot in robot_description, integrated in (or faster than) real "
               "time: effort commands in, joint_states out.", "simulator", "events"),  # its paced timer keeps the pace only with the EventsExecutor's lower overhead
    Executable("trajectory_publisher", "robot_dynamics.nodes.trajectory_publisher.node:TrajectoryPublisher",
               "robot_dynamics.nodes.trajectory_publisher.plan", "trajectory_publisher",
               "Smooth multi-joint sinusoids around a home pose, or a JointTrajectory received on joint_trajectory, "
               "as desired_state for the dynamics node.", None, "single"),
    Executable("trajectory_filter", "robot_dynamics.nodes.trajectory_filter.node:TrajectoryFilter",
               "robot_dynamics.nodes.trajectory_filter.plan", "trajectory_filter",
               "A planned JointTrajectory in, out checked, with feed-forward efforts, or retimed within the robot's "
               "velocity, acceleration and effort limits; an infeasible one is never forwarded.", "library", "single"),
)}


def help_text(executable: Executable) -> str:
    """The ``--help`` epilog: parameters with type and default, topics, services."""
    from .parameters import DESCRIPTION_PARAMETERS, LOCK

    plan = importlib.import_module(executable.plan)
    wrap = textwrap.TextWrapper(width=100, initial_indent=" " * 6, subsequent_indent=" " * 6)
    lines = [f"parameters (--ros-args -p NAME:=VALUE or --params-file FILE; default node name "
             f"{executable.node_name!r}):"]
    lockable = LOCK in plan.PARAMETERS
    for p in (*DESCRIPTION_PARAMETERS, *plan.PARAMETERS):
        kind = p.type or ("list" if isinstance(p.default, list) else "number")
        limits = f", {p.low:g} .. {p.high:g}" if p.low is not None else ""
        fixed = ", read-only" if p.read_only else f", read-only with {LOCK.name}" if lockable and p.shapes_torque else ""
        lines.append(f"  {p.name} ({kind}{limits}{fixed}; default {_yaml(p.default)})")
        lines.extend(wrap.wrap(p.description))
    lines.append("topics (relative names follow the node's namespace):")
    width = max(len(t[0]) for t in plan.TOPICS)
    lines.extend(f"  {direction:<3} {topic:<{width}}  {kind}: {what}" for topic, kind, direction, what in plan.TOPICS)
    services = getattr(plan, "SERVICES", ())
    if services:
        lines.append("services:")
        lines.extend(f"  {name}  {kind}: {what}" for name, kind, what in services)
    return "\n".join(lines)


def _yaml(value) -> str:
    """A default value as written in a params file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    return repr(value)


def _parser(executable: Executable) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=executable.name,
        usage=f"{executable.name} [-h] [--urdf FILE_OR_ROBOT] [--executor {{{','.join(EXECUTORS)}}}] [--ros-args ...]",
        description=textwrap.fill(executable.summary, 100), epilog=help_text(executable),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urdf", metavar="FILE_OR_ROBOT",
                        help="the robot: a URDF file or a bundled robot's name (e.g. arm7_gripper), given to the "
                             "node as robot_description; without it the node looks for robot_description")
    parser.add_argument("--executor", choices=EXECUTORS,
                        help=f"rclpy's executor: single (SingleThreadedExecutor: keeps answering under a flood of "
                             f"messages) or events (EventsExecutor: about half the CPU per message, which a 1 kHz "
                             f"loop on a slow CPU needs, but a flood can wedge it for minutes); default "
                             f"{executable.executor} (docs/benchmarks.md)")
    return parser


def read_urdf(argument: str) -> str:
    """The text of the URDF that ``--urdf argument`` names; ValueError saying why not."""
    from robot_dynamics.description.robots import urdf_file

    try:
        path = urdf_file(argument)
    except LookupError as exc:
        raise ValueError(str(exc)) from None
    return read_text_file(path, MAX_URDF_BYTES, "URDF")


def main(name: str, args=None, load_kernels=None) -> int:
    """Run the executable ``name`` with the command-line arguments ``args`` (default
    ``sys.argv[1:]``); the process exit status. ``load_kernels(part)`` is called once the command
    line is read, for an executable with kernels, before rclpy starts."""
    executable = EXECUTABLES[name]
    argv = list(sys.argv[1:] if args is None else args)
    ours, ros = (argv[:argv.index("--ros-args")], argv[argv.index("--ros-args"):]) if "--ros-args" in argv \
        else (argv, [])
    options = _parser(executable).parse_args(ours)  # --help: prints and exits 0; a bad option: exits 2
    overrides = []
    if options.urdf is not None:
        try:
            xml = read_urdf(options.urdf)
        except ValueError as exc:
            print(f"{name}: --urdf: {exc}", file=sys.stderr)
            return 2
        overrides = [("robot_description", xml)]
    doing = "loading the dynamics kernels" if executable.part else "loading ROS"
    print(f"[{name}] starting: {doing}", file=sys.stderr, flush=True)
    if executable.part and load_kernels is not None:
        load_kernels(executable.part)

    from rclpy.parameter import Parameter

    from .runner import run_node

    module, cls = executable.node.split(":")
    node_class = getattr(importlib.import_module(module), cls)
    return run_node(node_class, args=[name, *ros], executor=options.executor or executable.executor,
                    parameter_overrides=[Parameter(n, value=v) for n, v in overrides])

