"""``robot-dynamics demo --task-space``: the demo's graph with the loop closed in task space.

The graph of ``launch/simulation.launch.py`` (simulator, dynamics node, trajectory publisher as
subprocesses, on your ``ROS_DOMAIN_ID``, a private one with ``--isolated``: as the joint-space demo),
with two parameter layers on top:

    trajectory_publisher (cartesian.shape circle) --desired_pose/_twist/_accel--> dynamics_node
    (command_source task_space) --effort_command--> simulator_node --joint_states--> dynamics_node

The tool frame draws a circle of ``--radius`` m at ``--frequency`` Hz in the horizontal plane through
its start pose, orientation held; the dynamics node runs ``--task-space``'s law (``computed_torque``
or ``impedance``) with the start pose as its posture. The demo's recorder (:mod:`.demo.recorder`)
records the joint states and the desired poses; the summary and the plot give the Cartesian error:
the frame's pose from each joint state (:func:`robot_dynamics.frame_pose`) against the latest
desired pose received before it.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from . import graph
from .demo import DEFAULT_OUTPUT as JOINT_DEMO_OUTPUT
from .demo.analysis import DemoError, latency_ms, starvation_lines, window_rate
from .demo.closed_loop import Progress, closed_loop
from .demo.recorder import Recorder

DEFAULT_OUTPUT = Path("out") / "robot_dynamics_task_space_demo.png"
FRAMES = {"arm7_gripper": "arm7_tcp"}
#: The demo's gains. The loop runs over topics (a few ms of delay, the odd lost message): the wrist's
#: small inertia takes a soft rotation spring and little posture damping (D / I times the delay < 1).
LAW_PARAMETERS = {
    "computed_torque": {"task_space.kp": 400.0, "task_space.kd": 40.0},
    "impedance": {"task_space.stiffness": [1000.0, 1000.0, 1000.0, 10.0, 10.0, 10.0], "task_space.posture_kd": 0.5},
}  # the tool frame of a bundled robot; others: the last link


class _PoseRecorder(Recorder):
    """The demo's recorder, also recording ``desired_pose`` (as the run's desired samples)."""

    def __init__(self, model):
        super().__init__(model)
        from geometry_msgs.msg import PoseStamped
        from rclpy.qos import qos_profile_sensor_data

        self.node.create_subscription(PoseStamped, "desired_pose", self._on_pose, qos_profile_sensor_data)

    def _on_pose(self, msg):
        import time

        now = time.monotonic()
        p, o = msg.pose.position, msg.pose.orientation
        with self.lock:
            if self.run is not None:
                self.run.desired.add(now, self._seconds(msg.header.stamp), (np.array([p.x, p.y, p.z]),
                                                                             np.array([o.x, o.y, o.z, o.w])))


def _rotation(quaternion):
    x, y, z, w = quaternion
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def cartesian_errors(model, frame, run):
    """``(t, actual positions, desired positions, position errors (m), rotation errors (rad))`` of a run:
    each joint state's frame pose against the latest desired pose received before it."""
    from ..rigid_body.kinematics import frame_pose
    from ..rigid_body.task_space import pose_error

    received = np.asarray(run.desired.received)
    rows = [(t - run.start, q, int(np.searchsorted(received, t, side="right")) - 1)
            for t, (q, _, _) in zip(run.state.received, run.state.values) if run.start <= t <= run.end]
    rows = [row for row in rows if row[2] >= 0]
    if not rows:
        raise DemoError(f"{run.label}: nothing recorded (joint states {len(run.state)}, poses {len(run.desired)})")
    poses = frame_pose(model, np.array([q for _, q, _ in rows]), frame)
    position, rotation, desired = [], [], []
    for (_, _, k), pose in zip(rows, poses):
        p_d, quaternion = run.desired.values[k]
        target = np.eye(4)
        target[:3, :3], target[:3, 3] = _rotation(quaternion), p_d
        error = pose_error(target, pose)
        position.append(np.linalg.norm(error[3:]))
        rotation.append(np.linalg.norm(error[:3]))
        desired.append(p_d)
    return (np.array([t for t, _, _ in rows]), poses[:, :3, 3], np.array(desired), np.array(position),
            np.array(rotation))


def plot(errors, path, title):
    """PNG: the path seen from above (desired and actual), the position and rotation errors against time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, actual, desired, position, rotation = errors
    fig, axes = plt.subplots(1, 2, figsize=(14, 6))
    fig.suptitle(title)
    axes[0].plot(desired[:, 0], desired[:, 1], lw=5, alpha=0.3, label="desired")
    axes[0].plot(actual[:, 0], actual[:, 1], lw=1.2, label="actual")
    axes[0].set(title="tool frame seen from above", xlabel="x (m)", ylabel="y (m)")
    axes[0].axis("equal")
    axes[0].legend()
    axes[1].semilogy(t, np.maximum(position * 1e3, 1e-6), label="position error (mm)")
    axes[1].semilogy(t, np.maximum(rotation * 1e3, 1e-6), label="rotation error (mrad)")
    axes[1].set(title="Cartesian error", xlabel="time (s)")
    axes[1].legend()
    for ax in axes:
        ax.grid(alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _layered(node, values):
    return replace(node, parameters=node.parameters + (values,))


def task_space_graph(urdf_text, mode, radius, frequency):
    """The simulation graph on ``command_source: task_space`` (:func:`graph.simulation_graph`), with the
    demo's law, gains and circle."""
    simulator, dynamics, trajectory = graph.simulation_graph(urdf_text, command_source="task_space")
    dynamics = _layered(dynamics, {"task_space.mode": mode, **LAW_PARAMETERS[mode]})
    trajectory = _layered(trajectory, {"cartesian.size": float(radius), "cartesian.frequency": float(frequency)})
    return [simulator, dynamics, trajectory]


def run_task_space_demo(args, model, path, load_warnings=()):
    """The task-space demo on ``model`` (from ``path``); returns the exit status."""
    from . import processes

    frame = graph.TOOL_FRAMES.get(model.name, model.link_names[-1])
    env, domain = processes.graph_environment(args, lambda text: print(f"  warning: {text}", flush=True))
    print(f"robot_dynamics demo --task-space {args.task_space}: {model.name}, frame {frame}, a {args.radius:g} m "
          f"circle at {args.frequency:g} Hz, {args.duration:g} s", flush=True)
    print(f"  {domain}", flush=True)
    for warning in load_warnings:
        print(f"  warning: {warning}")
    workdir = Path(tempfile.mkdtemp(prefix="robot_dynamics_task_space_demo_"))
    log_dir = args.log_dir or workdir / "logs"
    recorder = _PoseRecorder(model)
    failed = True
    try:
        run = closed_loop(recorder, f"task space ({args.task_space})",
                          task_space_graph(path.read_text(), args.task_space, args.radius, args.frequency),
                          env, Path(log_dir) / "task_space", args.duration, Progress(args.quiet))
        failed = False
    finally:
        recorder.close()
        if args.log_dir is None and not failed:
            shutil.rmtree(workdir, ignore_errors=True)
    errors = cartesian_errors(model, frame, run)
    t, _, _, position, rotation = errors
    rms = float(np.sqrt(np.mean(position ** 2)))
    print(f"  joint states {len(run.state)}, desired poses {len(run.desired)}, computed torques {len(run.torques)}")
    state_rate, torque_rate, latency = window_rate(run.state, run), window_rate(run.torques, run), latency_ms(run)
    print(f"  rates           joint_states {state_rate:.0f} Hz, computed_torques {torque_rate:.0f} Hz"
          + (f"; latency p50 {latency[0]:.2f} ms, p99 {latency[1]:.2f} ms" if latency else ""))
    for line in starvation_lines(state_rate, torque_rate, latency, "task space"):
        print(line.replace("tracking errors below", "position and rotation errors below"))
    print(f"  position error  RMS {rms * 1e3:.3f} mm, max {position.max() * 1e3:.3f} mm")
    print(f"  rotation error  RMS {np.sqrt(np.mean(rotation ** 2)) * 1e3:.3f} mrad, max {rotation.max() * 1e3:.3f} mrad")
    print("  (each joint state's frame pose against the latest desired pose received before it: the topics' "
          "latency counts as error)")
    if not args.no_plot:
        output = plot(errors, DEFAULT_OUTPUT if args.output == JOINT_DEMO_OUTPUT else args.output,
                      f"robot_dynamics demo --task-space {args.task_space}: {model.name} {frame}")
        print(f"  plot            {output.resolve()}")
    return 0
