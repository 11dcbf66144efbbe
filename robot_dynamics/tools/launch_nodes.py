"""What ``launch/*.launch.py`` share: the graphs of :mod:`robot_dynamics.tools.graph` as launch_ros nodes.

Imported by the launch files only (it needs ROS 2's ``launch`` and ``launch_ros``). Every check of
a launch argument happens before the first node starts, so a bad argument ends the launch with a
message naming it and leaves nothing running; and a node that ends (a bad parameter, a crash) ends
the whole launch, since the other nodes of a loop cannot work without it.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

from launch.actions import DeclareLaunchArgument, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from ..child_processes import die_with_parent
from ..description.robots import PACKAGE, urdf_file
from .graph import params_sections, unused_layers
from .processes import LAUNCHER_PID

INTERRUPTED = 128 + signal.SIGINT  # the exit status of a process ended by a Ctrl-C (robot-dynamics compile's)

BOOLEAN = ("true", "false")


class LaunchArgumentError(RuntimeError):
    """A launch argument that cannot be used; the message names it."""


def boolean_argument(name, default, description):
    """A true/false launch argument (launch refuses any other value, naming the argument)."""
    return DeclareLaunchArgument(name, default_value=default, choices=list(BOOLEAN), description=description)


def argument(context, name):
    """The value of launch argument ``name``."""
    return LaunchConfiguration(name).perform(context)


def flag(context, name):
    """A :func:`boolean_argument` as a bool."""
    return argument(context, name) == "true"


def urdf_text(context, name="urdf"):
    """The URDF text a ``urdf:=`` argument means: a file, or the name of a bundled robot."""
    try:
        return urdf_file(argument(context, name)).read_text()
    except (LookupError, OSError) as error:
        raise LaunchArgumentError(f"launch argument {name}: {error}") from None


def params_file(context, name):
    """The params file of launch argument ``name``: it must exist (running on defaults would hide a
    typo) and be a ROS 2 params file (:func:`params_sections`)."""
    path = Path(argument(context, name)).expanduser()
    if not path.is_file():
        raise LaunchArgumentError(f"launch argument {name}: no such params file {str(path)!r}")
    try:
        params_sections(path)
    except ValueError as exc:
        raise LaunchArgumentError(f"launch argument {name}: {exc}") from None
    return path


def require_package(package, because):
    """Refuse to start anything if ROS 2 package ``package`` is not installed."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        get_package_prefix(package)
    except (PackageNotFoundError, LookupError, ValueError):
        raise LaunchArgumentError(f"{because}, but the ROS 2 package {package!r} is not installed "
                                  f"(apt install ros-$ROS_DISTRO-{package.replace('_', '-')})") from None


def compile_ahead(*parts):
    """``robot-dynamics compile PART ...`` before any node starts (the nodes would otherwise each
    compile what numba's cache lacks, at once, on the same cores): a child process in the launch's
    process group, so a Ctrl-C ends it too. If it fails, each node compiles its own kernels, saying so."""
    import launch.logging

    log = launch.logging.get_logger("robot_dynamics")
    status = subprocess.run([sys.executable, "-m", "robot_dynamics_executables", "compile", *parts],
                            stdin=subprocess.DEVNULL,
                            preexec_fn=die_with_parent()).returncode
    if status == INTERRUPTED:
        log.info("compiling the dynamics kernels interrupted")
    elif status != 0:
        log.warning(f"compiling the dynamics kernels failed (exit status {status}): each node compiles its own")


def launch_nodes(graph, namespace):
    """launch_ros ``Node`` actions for a graph; any node ending shuts the launch down.  A params file
    none of whose sections applies to the node it configures is warned about (:func:`~.graph.unused_layers`):
    a misspelt node name would leave the node on its defaults without a word."""
    import launch.logging

    for layer, fully_qualified, sections in unused_layers(graph, namespace):
        launch.logging.get_logger("robot_dynamics").warning(
            f"params file {str(layer)!r}: none of its sections ({', '.join(sections)}) applies to the node "
            f"{fully_qualified}, which runs on its defaults for what the file sets (name it, or use /**)")
    # our nodes end with this process however it ends, SIGKILL included (processes.end_with_launcher)
    launcher = {LAUNCHER_PID: str(os.getpid())}
    return [
        Node(package=node.package, executable=node.executable, name=node.name, namespace=namespace,
             output="screen", parameters=[_layer(layer) for layer in node.parameters],
             additional_env=launcher if node.package == PACKAGE else None, remappings=list(node.remappings),
             on_exit=Shutdown(reason=f"{node.name} ended"))
        for node in graph
    ]


def _layer(layer):
    if isinstance(layer, Path):
        return str(layer)
    # a string stays a string (launch_ros would read "<robot ...>" or "1.0" as YAML otherwise)
    return {name: ParameterValue(value, value_type=str) if isinstance(value, str) else value
            for name, value in layer.items()}
