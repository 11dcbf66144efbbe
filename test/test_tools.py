"""The tooling sub-package (``robot_dynamics.tools``): the node graphs described once, and the
import boundary (the core library never imports the tooling, the nodes or rclpy)."""

import ast
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.description.robots import bundled_robot_names, bundled_urdf
from robot_dynamics.tools import graph

PACKAGE = Path(rd.__file__).parent


def test_robot_setup_uses_the_config_for_the_demo_robot_and_limits_for_others():
    arm = rd.load_urdf(bundled_urdf("arm7_gripper"))
    q0, simulator, trajectory = graph.robot_setup(arm)
    np.testing.assert_allclose(q0, [0, -0.785, 0, -2.356, 0, 1.571, 0.785, 0.02])
    assert simulator == {} and trajectory == {}
    gantry = rd.load_urdf(bundled_urdf("cartesian_3dof"))
    q0, simulator, trajectory = graph.robot_setup(gantry)
    np.testing.assert_allclose(q0, [0.3, 0.2, -0.15])  # mid-range: 0 is at a limit of every axis
    assert simulator["initial_joint_names"] == list(gantry.joint_names)
    assert trajectory["home_positions"] == q0.tolist()
    q0, _, _ = graph.robot_setup(rd.load_urdf(bundled_urdf("planar_2r")))
    np.testing.assert_allclose(q0, [0, 0])


@pytest.mark.parametrize("robot", bundled_robot_names())
def test_simulation_graph_names_only_joints_of_its_robot(robot):
    """The start pose and the trajectory's home pose name the robot's own joints (or come from the
    config files, which name the demo robot's): every bundled robot's loop can run."""
    model = rd.load_urdf(bundled_urdf(robot))
    nodes = {node.executable: node for node in graph.simulation_graph(bundled_urdf(robot).read_text())}
    assert list(nodes) == ["simulator_node", "dynamics_node", "trajectory_publisher"]

    def merged(node):
        values = {}
        for layer in node.parameters:
            values.update(graph.config_values(layer) if isinstance(layer, Path) else layer)
        return values

    simulator, trajectory = merged(nodes["simulator_node"]), merged(nodes["trajectory_publisher"])
    assert set(simulator["initial_joint_names"]) <= set(model.joint_names)
    assert len(simulator["initial_positions"]) == len(simulator["initial_joint_names"])
    assert set(trajectory["home_joint_names"]) <= set(model.joint_names)
    dynamics = merged(nodes["dynamics_node"])
    assert dynamics["command_source"] == "computed" and dynamics["compensate_friction"] is True
    assert all(merged(node)["robot_description"] == bundled_urdf(robot).read_text() for node in nodes.values())


def test_simulation_graph_clock_and_command_source():
    urdf = bundled_urdf("planar_2r").read_text()
    simulator, dynamics, trajectory = graph.simulation_graph(urdf, use_sim_time=True, command_source="gravity")
    assert simulator.parameters[-1]["publish_clock"] is True and simulator.parameters[-1]["use_sim_time"] is False
    assert dynamics.parameters[-1]["use_sim_time"] is True and trajectory.parameters[-1]["use_sim_time"] is True
    assert dynamics.parameters[-1]["command_source"] == "gravity"
    with pytest.raises(ValueError, match="command_source 'bogus'"):
        graph.simulation_graph(urdf, command_source="bogus")


def test_simulation_graph_holds_the_arm_until_the_first_command_unless_the_users_file_says_otherwise(tmp_path):
    urdf = bundled_urdf("planar_2r").read_text()
    simulator = graph.simulation_graph(urdf)[0]
    assert simulator.parameters[1]["on_command_timeout"] == "hold_position"
    mine = tmp_path / "simulator.yaml"
    mine.write_text("/**:\n  ros__parameters:\n    on_command_timeout: brake\n")
    simulator = graph.simulation_graph(urdf, simulator_params=mine)[0]
    assert "on_command_timeout" not in simulator.parameters[1] and simulator.parameters[0] == mine


def test_a_namespaced_clock_is_remapped_in_every_node_and_the_trajectory_can_be_left_out(tmp_path):
    urdf = bundled_urdf("planar_2r").read_text()
    nodes = graph.simulation_graph(urdf, use_sim_time=True, clock_topic="/left/clock", trajectory=False)
    assert [n.executable for n in nodes] == ["simulator_node", "dynamics_node"]
    assert all(n.remappings == (("/clock", "/left/clock"),) for n in nodes)
    assert all(n.remappings == () for n in graph.simulation_graph(urdf, use_sim_time=True))
    assert all(n.remappings == () for n in graph.simulation_graph(urdf, clock_topic="/left/clock"))  # no sim time
    from robot_dynamics.tools import processes

    argv = processes.ros_args(["a.yaml"], "left", "robot_dynamics", remappings=nodes[1].remappings)
    assert argv[-2:] == ["-r", "/clock:=/left/clock"] and ["-r", "__ns:=/left"] == argv[3:5]


def test_a_users_params_file_is_every_nodes_last_layer_and_checked_against_their_names(tmp_path):
    urdf = bundled_urdf("planar_2r").read_text()
    mine = tmp_path / "mine.yaml"
    mine.write_text("robot_dynamics:\n  ros__parameters:\n    kp: [50.0]\n")
    nodes = graph.simulation_graph(urdf, extra_params=mine)
    assert all(n.parameters[-1] == mine for n in nodes)
    unused = graph.unused_layers(nodes, "left")
    # the section names /robot_dynamics, not /left/robot_dynamics: it applies to no node in "left"
    assert [node for layer, node, _ in unused if layer == mine] == [
        "/left/robot_dynamics_simulator", "/left/robot_dynamics", "/left/trajectory_publisher"]
    assert [node for layer, node, _ in graph.unused_layers(nodes, "") if layer == mine] == [
        "/robot_dynamics_simulator", "/trajectory_publisher"]
    assert graph.section_applies("/**/robot_dynamics", "/left/robot_dynamics")


def test_dynamics_graph_layers_the_params_file_under_the_description(tmp_path):
    params = tmp_path / "mine.yaml"
    nodes = graph.dynamics_graph("<robot/>", params_file=params, robot_state_publisher=True)
    assert [(n.package, n.executable) for n in nodes] == [("robot_dynamics", "dynamics_node"),
                                                          ("robot_state_publisher", "robot_state_publisher")]
    assert nodes[0].parameters == (params, {"robot_description": "<robot/>", "use_sim_time": False})


def _imports(path):
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module
            names.add(prefix)
            names.update(f"{prefix}.{alias.name}" for alias in node.names)
    return names


def test_the_core_never_imports_the_tooling_the_nodes_or_rclpy():
    core = [path for path in PACKAGE.rglob("*.py") if path.relative_to(PACKAGE).parts[0] not in ("nodes", "tools", "cli")]
    assert len(core) > 40
    for path in core:
        bad = sorted(name for name in _imports(path)
                     if name.startswith(("robot_dynamics.tools", "robot_dynamics.nodes", "robot_dynamics.cli", "rclpy")))
        assert not bad, f"{path.name} imports {bad}"


def test_the_tooling_never_imports_the_command_line():
    for path in (PACKAGE / "tools").rglob("*.py"):
        bad = sorted(name for name in _imports(path) if name.startswith("robot_dynamics.cli"))
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


@pytest.mark.parametrize("argv, exported, domain, source", [
    (["--domain-id", "66"], "9", "66", "--domain-id"),
    ([], "9", "9", "the exported ROS_DOMAIN_ID"),
])
def test_bench_simulator_runs_its_node_on_your_domain_and_says_which(monkeypatch, capsys, argv, exported, domain,
                                                                     source):
    """``bench simulator``'s node runs where the other commands' nodes do (``--domain-id``, the exported
    ROS_DOMAIN_ID, ``--isolated``), and the benchmark prints that domain."""
    pytest.importorskip("rclpy", reason="the node part needs ROS 2")
    from robot_dynamics.tools.benchmarks import simulator

    monkeypatch.setenv("ROS_DOMAIN_ID", exported)
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    environments = []
    monkeypatch.setattr(simulator, "library_table", lambda quick: [])
    monkeypatch.setattr(simulator, "print_library_table", lambda rows: None)
    monkeypatch.setattr(simulator, "robots", lambda: {"planar_2r": (bundled_urdf("planar_2r").read_text(),
                                                                    np.zeros(2))})
    monkeypatch.setattr(simulator, "node_run", lambda name, urdf, pose, duration, workdir, env:
                        environments.append(env) or (25.0, 90.0))
    assert simulator.main([*argv, "--duration", "1"]) == 0
    out = capsys.readouterr().out
    assert f"ROS_DOMAIN_ID={domain} ({source}; this machine only)" in out
    assert [env["ROS_DOMAIN_ID"] for env in environments] == [domain]
    assert "| planar_2r | 25.0x | 90 % |" in out
