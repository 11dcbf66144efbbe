"""The package's two node graphs, described once.

``launch/dynamics.launch.py`` and ``launch/simulation.launch.py`` turn these descriptions into
``launch_ros`` nodes (:mod:`robot_dynamics.tools.launch_nodes`); :mod:`robot_dynamics.tools.processes`
starts the same descriptions as plain subprocesses (``robot-dynamics demo``, the tests, machines
without ``ros2 launch``). A graph is a list of :class:`NodeLaunch`: which executable, the node's
name, and its parameter layers in order, a later layer winning: a YAML file of ``config/``, then a
dictionary of values (the URDF as ``robot_description``, the clock, the loop's wiring).

The simulation graph follows the robot: ``config/simulator.yaml`` and
``config/trajectory_publisher.yaml`` name the joints of the demo robot (arm7_gripper); for a robot
without those joints the start pose and the trajectory's home pose are chosen from its joint
limits (:func:`robot_setup`).

Nothing here imports rclpy or launch.
"""

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..description.robots import PACKAGE, share_file
from ..description.urdf import load_urdf

#: What the dynamics node may send as ``effort_command`` (its ``command_source`` parameter).
COMMAND_SOURCES = ("none", "gravity", "computed", "task_space")
#: The tool frame of a bundled robot, which ``command_source: task_space`` controls (others: the last link).
TOOL_FRAMES = {"arm7_gripper": "arm7_tcp"}
#: ``command_source: task_space``: the dynamics node's law and the trajectory publisher's circle.
TASK_SPACE = {"task_space.mode": "computed_torque", "task_space.kp": 400.0, "task_space.kd": 40.0}
CIRCLE = {"cartesian.shape": "circle", "cartesian.size": 0.05, "cartesian.frequency": 0.25}

#: The trajectory of a robot other than the demo robot: every joint swings around its home pose.
DEFAULT_MOTION = {"amplitude": [0.2], "frequency": [0.25], "phase": [0.0]}

#: The simulator's start-up setting in the graph: a joint never commanded (or whose command went
#: stale) is held where it is by its drive (``g(q)`` plus a critically damped return), so the arm
#: never falls while the other nodes start, nor if the dynamics node stops. A simulator params file
#: of the user's that sets ``on_command_timeout`` wins.
START_UP = {"on_command_timeout": "hold_position"}

#: ``/clock``: with ``use_sim_time`` the simulator publishes it and the other nodes follow it.
CLOCK = "/clock"


@dataclass(frozen=True)
class NodeLaunch:
    """One node of a graph: ``package``'s ``executable`` named ``name``, with ``parameters``.

    ``parameters`` is a tuple of layers applied in order: a ``Path`` (a ROS 2 params file) or a
    dict of parameter values; ``remappings`` rename topics of the node (``-r from:=to``).
    """

    executable: str
    name: str
    parameters: tuple
    package: str = PACKAGE
    remappings: tuple = ()  # (from, to) topic names, e.g. ("/clock", "/left/clock")


def config_file(name):
    """The bundled ``config/<name>`` file."""
    return share_file("config", name)


def config_values(path):
    """The ``/**: ros__parameters:`` dictionary of a params file (nested keys kept nested)."""
    import yaml

    tree = yaml.safe_load(Path(path).read_text()) or {}
    return (tree.get("/**") or {}).get("ros__parameters") or {}


def robot_setup(model, simulator_params=None):
    """(start pose q0, simulator overrides, trajectory overrides) for the simulation graph.

    If the simulator's params file names joints of ``model`` in ``initial_joint_names``, the files
    are used as they are and q0 is their start pose. Otherwise the robot starts at rest at q = 0,
    or mid-range for a joint whose limits leave no room around 0, and the trajectory moves every
    joint around that pose by :data:`DEFAULT_MOTION`.

    >>> from robot_dynamics import examples
    >>> q0, simulator, trajectory = robot_setup(load_urdf(examples.TWO_LINK_URDF))
    >>> q0.tolist(), simulator["initial_joint_names"], trajectory["home_positions"]
    ([0.0, 0.0], ['shoulder', 'elbow'], [0.0, 0.0])
    """
    simulator = config_values(simulator_params or config_file("simulator.yaml"))
    names = simulator.get("initial_joint_names") or []
    if names and all(name in model.joint_names for name in names):
        q0 = np.zeros(model.nv)
        for name, value in zip(names, simulator.get("initial_positions") or []):
            q0[model.joint_names.index(name)] = value
        return q0, {}, {}
    q0 = np.zeros(model.nv)
    for k, (lower, upper) in enumerate(model.position_limits):
        if math.isfinite(lower) and math.isfinite(upper):
            margin = 0.1 * (upper - lower)
            if not lower + margin < 0 < upper - margin:
                q0[k] = 0.5 * (lower + upper)
        elif math.isfinite(lower) and lower >= 0 or math.isfinite(upper) and upper <= 0:
            q0[k] = lower + 0.5 if math.isfinite(lower) else upper - 0.5
    joints = list(model.joint_names)
    start = {"initial_joint_names": joints, "initial_positions": q0.tolist(), "initial_velocities": [0.0] * model.nv}
    home = {"home_joint_names": joints, "home_positions": q0.tolist(), **DEFAULT_MOTION}
    return q0, start, home


def dynamics_graph(urdf_text, params_file=None, use_sim_time=False, robot_state_publisher=False):
    """The graph of ``launch/dynamics.launch.py``: the dynamics node (and robot_state_publisher).

    >>> [node.name for node in dynamics_graph("<robot/>")]
    ['robot_dynamics']
    """
    description = {"robot_description": urdf_text, "use_sim_time": bool(use_sim_time)}
    graph = [NodeLaunch("dynamics_node", "robot_dynamics",
                        (Path(params_file or config_file("dynamics.yaml")), description))]
    if robot_state_publisher:
        graph.append(NodeLaunch("robot_state_publisher", "robot_state_publisher", (description,),
                                package="robot_state_publisher"))
    return graph


def simulation_graph(urdf_text, use_sim_time=False, command_source="computed", compensate_friction=True,
                     simulator_params=None, dynamics_params=None, trajectory_params=None, clock_topic=CLOCK,
                     extra_params=None, trajectory=True, autostart=True):
    """The graph of ``launch/simulation.launch.py``: the closed computed-torque loop.

    ``trajectory_publisher --desired_state--> dynamics_node --effort_command--> simulator_node
    --joint_states--> dynamics_node``; with ``command_source="task_space"`` the trajectory publisher
    draws a circle with the tool frame (``desired_pose`` ...) and the dynamics node controls it in task
    space (:data:`TASK_SPACE`, :data:`CIRCLE`). The dynamics node sends ``command_source`` and, with
    ``compensate_friction``, models the URDF friction that the simulator applies (an exact model
    of the simulated robot). With ``use_sim_time`` the simulator publishes ``/clock`` and the
    other two follow it; another ``clock_topic`` (``/left/clock``) is a clock of this graph's
    own, remapped in all three nodes, so that two simulators never both publish ``/clock``.
    The simulator holds every joint until its first command (:data:`START_UP`). ``extra_params``
    (a params file of the user's, its sections naming the nodes they set) is every node's last
    layer; ``trajectory=False`` leaves the trajectory publisher out (``desired_state`` is then
    the user's to publish); ``autostart=False`` starts it waiting for its ``~/restart`` (what
    ``robot-dynamics sim`` calls once the dynamics node answers).

    >>> from robot_dynamics import examples
    >>> [node.executable for node in simulation_graph(examples.TWO_LINK_URDF)]
    ['simulator_node', 'dynamics_node', 'trajectory_publisher']
    """
    if command_source not in COMMAND_SOURCES:
        raise ValueError(f"command_source {command_source!r}: choose one of {', '.join(COMMAND_SOURCES)}")
    files = {name: Path(given or config_file(default)) for name, given, default in (
        ("simulator", simulator_params, "simulator.yaml"),
        ("dynamics", dynamics_params, "dynamics.yaml"),
        ("trajectory", trajectory_params, "trajectory_publisher.yaml"))}
    model = load_urdf(urdf_text)
    q0, start, home = robot_setup(model, files["simulator"])
    start_up = START_UP if simulator_params is None or \
        "on_command_timeout" not in config_values(simulator_params) else {}
    remap = ((CLOCK, clock_topic),) if use_sim_time and clock_topic != CLOCK else ()
    last = (Path(extra_params),) if extra_params else ()
    description = {"robot_description": urdf_text}
    clock = {"use_sim_time": bool(use_sim_time)}
    task, circle = {}, {}
    if command_source == "task_space":  # the tool frame follows a circle through its start pose, posture q0
        frame = TOOL_FRAMES.get(model.name, model.link_names[-1])
        task = {**TASK_SPACE, "task_space.frame": frame, "task_space.posture": q0.tolist()}
        circle = {**CIRCLE, "cartesian.frame": frame, "home_joint_names": list(model.joint_names),
                  "home_positions": q0.tolist()}
    nodes = [
        NodeLaunch("simulator_node", "robot_dynamics_simulator", (
            files["simulator"], {**description, **start, **start_up, "use_sim_time": False,
                                 "publish_clock": bool(use_sim_time)}, *last), remappings=remap),
        NodeLaunch("dynamics_node", "robot_dynamics", (
            files["dynamics"], {**description, **clock, "command_source": command_source,
                                "compensate_friction": bool(compensate_friction), **task}, *last), remappings=remap),
        NodeLaunch("trajectory_publisher", "trajectory_publisher", (
            files["trajectory"], {**description, **home, **clock, **circle, **({} if autostart else {"autostart": False})},
            *last), remappings=remap),
    ]
    return nodes if trajectory else nodes[:2]


def params_sections(path):
    """The node names of a ROS 2 params file's ``ros__parameters`` sections (keys nested under
    namespace keys joined by ``/``); ValueError if the file is no params file (a URDF, plain YAML)."""
    import yaml

    path = Path(path)
    try:
        tree = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{str(path)!r} is not a ROS 2 params file: not YAML ({' '.join(str(exc).split())[:200]})") \
            from None
    sections = []

    def walk(mapping, prefix):
        for key, value in mapping.items():
            if isinstance(value, dict):
                name = f"{prefix}/{str(key).strip('/')}"
                if "ros__parameters" in value:
                    sections.append(name)
                else:
                    walk(value, name)

    if isinstance(tree, dict):
        walk(tree, "")
    if not sections:
        raise ValueError(f"{str(path)!r} is not a ROS 2 params file: it has no 'NODE: ros__parameters:' section")
    return sections


def section_applies(section, node):
    """Whether a params-file section names the fully qualified ``node``: a fully qualified name whose
    leading ``/`` may be left out, ``*`` standing for one name and ``**`` for any number of them.

    >>> section_applies("/**", "/left/robot_dynamics"), section_applies("robot_dynamics", "/left/robot_dynamics")
    (True, False)
    """
    pattern = re.escape("/" + section.lstrip("/")).replace(r"/\*\*", "(/[^/]+)*").replace(r"\*", "[^/]+")
    return re.fullmatch(pattern, node) is not None


def unused_layers(graph, namespace):
    """``(params file, node, its sections)`` for each params file of a node none of whose sections
    applies to that node (a misspelt node name would leave it on its defaults without a word)."""
    found = []
    for node in graph:
        fully_qualified = fully_qualified_name(namespace, node.name)
        for layer in node.parameters:
            if isinstance(layer, Path):
                sections = params_sections(layer)
                if not any(section_applies(section, fully_qualified) for section in sections):
                    found.append((layer, fully_qualified, sections))
    return found


def fully_qualified_name(namespace, name):
    """``/ns/name`` (``/name`` without a namespace)."""
    return "/".join(["", *filter(None, (namespace or "").split("/")), name])
