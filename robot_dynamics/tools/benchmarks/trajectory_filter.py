"""Latency of the trajectory filter: a 7-joint, 50-point JointTrajectory on ``trajectory_in`` to its
answer on ``trajectory_out``, per mode.

    python -m robot_dynamics.tools.benchmarks.trajectory_filter [--trials 100] [--duration 3] [--domain-id N]

One ``trajectory_filter`` process per mode (``check``, ``feedforward``, ``retime``) runs the bundled
``arm7_gripper`` with a 3 kg payload on its hand; this process publishes the same trajectory (50
points with positions, velocities and accelerations over ``--duration`` s, within the limits so
that ``check`` forwards it) ``--trials`` times, one at a time, and times each answer from the
publication to its arrival. The goal: p99 <= 50 ms. The anchor, measured after each trial in
the same run (so that both see the same load), is the filter's own computation in this process
(reading the points, then ``filter_trajectory``): the ratio of the medians says what ROS transport,
conversions and the node's executor add to it, whatever the machine's load.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from robot_dynamics.tools.processes import NodeProcess, executable, ros_args, ros_environment

GOAL_MS = 50.0
MODES = ("check", "feedforward", "retime")
JOINTS = tuple(f"arm7_joint{k}" for k in range(1, 8))
PAYLOAD = {"payload.link": "arm7_hand", "payload.mass": 3.0, "payload.com": [0.0, 0.0, 0.1]}
START = np.array([-1.0, -0.8, 0.0, -2.4, -1.2, 0.8, 0.8])
GOAL = np.array([1.0, 0.5, 0.0, -1.4, 1.2, 2.6, 0.8])


def trajectory_points(count, duration):
    """``(t, q, qd, qdd)`` of ``count`` points: START to GOAL with a quintic time law over ``duration`` s."""
    t = np.linspace(0.0, duration, count)
    u = t / duration
    s, sd, sdd = (10 * u**3 - 15 * u**4 + 6 * u**5, (30 * u**2 - 60 * u**3 + 30 * u**4) / duration,
                  (60 * u - 180 * u**2 + 120 * u**3) / duration**2)
    d = GOAL - START
    return t, START + np.outer(s, d), np.outer(sd, d), np.outer(sdd, d)


def message(points):
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    t, q, qd, qdd = points
    msg = JointTrajectory(joint_names=list(JOINTS))
    msg.points = [JointTrajectoryPoint(positions=q[k].tolist(), velocities=qd[k].tolist(), accelerations=qdd[k].tolist(),
                                       time_from_start=Duration(sec=int(t[k]), nanosec=int(round((t[k] % 1) * 1e9))))
                  for k in range(t.size)]
    return msg


def in_process(mode, msg):
    """``filter()``: the filter's work on ``msg`` in this process (the anchor), returning the points it gives."""
    import robot_dynamics as rd
    from robot_dynamics.description.robots import bundled_urdf
    from robot_dynamics.nodes.common.joint_trajectory import read_joint_trajectory
    from robot_dynamics.nodes.trajectory_filter.plan import Settings, filter_trajectory, make_plan, warm_up

    plan = make_plan(rd.load_urdf(bundled_urdf("arm7_gripper")),
                     Settings(mode=mode, payload_link=PAYLOAD["payload.link"], payload_mass=PAYLOAD["payload.mass"],
                              payload_com=tuple(PAYLOAD["payload.com"])))
    warm_up(plan)

    def run():
        trajectory, _ = read_joint_trajectory(plan.model, msg.joint_names, msg.points)
        out = filter_trajectory(plan, trajectory)
        return len(msg.points) if out.trajectory is None else out.trajectory.t.size
    return run


def round_trips(publisher, arrived, msg, trials, anchor=None, timeout=10.0):
    """Seconds from each publication to its answer (``arrived`` set; one trajectory at a time), and of
    ``anchor()`` run after each (so that both see the same load)."""
    latencies, anchors = [], []
    for _ in range(trials):
        arrived.clear()
        start = time.perf_counter()
        publisher.publish(msg)
        if not arrived.wait(timeout):
            raise RuntimeError(f"no answer on trajectory_out within {timeout:g} s")
        latencies.append(time.perf_counter() - start)
        if anchor is not None:
            start = time.perf_counter()
            anchor()
            anchors.append(time.perf_counter() - start)
    return latencies, anchors


def first_answer(publisher, arrived, msg, process, timeout=60.0):
    """Publish ``msg`` each second until an answer arrives: until discovery has matched both topics
    both ways, a trajectory or its answer can be lost (a volatile topic keeps nothing for a late match)."""
    deadline = time.monotonic() + timeout
    while True:
        arrived.clear()
        publisher.publish(msg)
        if arrived.wait(1.0):
            return
        if time.monotonic() > deadline or not process.running():
            raise RuntimeError(f"no answer on trajectory_out within {timeout:g} s:\n{process.log_tail()}")


def measure(mode, msg, trials, workdir, env, anchor):
    """``(latencies, anchors)`` in s of one trajectory_filter process in ``mode``."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from trajectory_msgs.msg import JointTrajectory

    namespace = f"/bench_{mode}"
    process = NodeProcess("trajectory_filter", executable("trajectory_filter") + ["--urdf", "arm7_gripper"] + ros_args(
        namespace=namespace, parameters={"mode": mode, **PAYLOAD}), env, Path(workdir) / f"{mode}.log")
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("filter_bench", namespace=namespace, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=lambda: _spin(executor, context), daemon=True)
    spinner.start()
    try:
        publisher = node.create_publisher(JointTrajectory, "trajectory_in", 10)
        arrived = threading.Event()
        # raw: the answer as bytes, as a C++ controller takes it (rclpy would build a Python object per point)
        answers = node.create_subscription(JointTrajectory, "trajectory_out", lambda _msg: arrived.set(), 10, raw=True)
        deadline = time.monotonic() + 60.0
        while (publisher.get_subscription_count() == 0 or answers.get_publisher_count() == 0
               or "filter warmed up" not in process.log_tail(50)):
            if time.monotonic() > deadline or not process.running():
                raise RuntimeError(f"trajectory_filter did not start:\n{process.log_tail()}")
            time.sleep(0.05)
        first_answer(publisher, arrived, msg, process)
        while arrived.wait(1.0):  # the answers to any repeats of the first trajectory, until a quiet second
            arrived.clear()
        round_trips(publisher, arrived, msg, 3)  # warm: first calls
        return round_trips(publisher, arrived, msg, trials, anchor)
    finally:
        context.try_shutdown()
        spinner.join(5.0)
        node.destroy_node()
        process.stop()


def _spin(executor, context):
    try:
        while context.ok():
            executor.spin_once(timeout_sec=0.05)
    except Exception:  # noqa: BLE001 - the context shut down
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--points", type=int, default=50)
    parser.add_argument("--duration", type=float, default=3.0, help="seconds from the first point to the last")
    parser.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: a random private one)")
    args = parser.parse_args(argv)
    from robot_dynamics.compiling import compile_and_report

    compile_and_report(["library"], "the dynamics kernels", print)
    msg = message(trajectory_points(args.points, args.duration))
    env = ros_environment(args.domain_id)
    print(f"trajectory_filter: arm7_gripper (7 joints in the trajectory) with 3 kg, {args.points} points over "
          f"{args.duration:g} s, {args.trials} trials per mode, one at a time; ROS_DOMAIN_ID {env['ROS_DOMAIN_ID']}")
    print(f"{'mode':<12} {'points out':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'in-process p50':>14} "
          f"{'ratio p50':>10} {'goal p99':>9}")
    import os

    saved = {key: os.environ.get(key) for key in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")}
    os.environ.update({key: env[key] for key in saved})  # this process joins the private graph
    try:
        with tempfile.TemporaryDirectory(prefix="robot_dynamics_filter_bench_") as workdir:
            for mode in MODES:
                anchor = in_process(mode, msg)
                points = anchor()
                latencies, anchors = (np.array(v) * 1e3 for v in measure(mode, msg, args.trials, workdir, env, anchor))
                p50, p99 = np.percentile(latencies, [50, 99])
                inside = np.median(anchors)
                print(f"{mode:<12} {points:>10} {p50:>8.2f} {p99:>8.2f} {latencies.max():>8.2f} {inside:>14.2f} "
                      f"{p50 / inside:>10.1f} {GOAL_MS:>9.0f}", flush=True)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
