#!/usr/bin/env python3
"""The CPU the force/torque sensor compensation adds to the dynamics node per message (arm7_gripper, sensor at arm7_hand).

Two ``DynamicsNode`` objects in this process, one with ``ft_sensor.frame`` and one without, otherwise alike
(``command_source: gravity``; no subscriber, so the node computes only the command), take the same
messages through their callbacks, called directly: per round, each joint_states message followed by one
raw ``ft_sensor/wrench`` reading (1 kHz each), the CPU of the callbacks, outputs published included,
without the executor's and DDS's share. The two are timed in alternation, many rounds, and the medians
compared: the difference is what the compensation costs per (state, reading) pair, as the CPU of the
whole process (DDS's threads too, which a publish wakes) and of the callbacks' thread alone. Also the prediction
alone (``ForceTorqueSensor.reading``) and Pinocchio's ``rnea`` of the same arm as an anchor (a test extra).

Goal (issue 35): <= 15 us per message.

    robot-dynamics bench ft_sensor [--messages 2000 | --duration 2] [--rounds 15] [--quick]
    python -m robot_dynamics.tools.benchmarks.ft_sensor
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.rigid_body.sensor import ForceTorqueSensor
from robot_dynamics.tools.benchmarks.node_pair import alternating_rounds, close_pair, dynamics_node_pair

Q = np.array([0.1, -0.4, 0.2, -2.0, 0.3, 1.8, 0.6, 0.02])
FRAME = "arm7_hand"
GOAL_US = 15.0


def _messages(model, count):
    """(joint_states, wrench) pairs: the arm swinging slowly, 1 kHz stamps, a reading of the tool's weight."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    sensor = ForceTorqueSensor(model, FRAME)
    out = []
    for k in range(count):
        t = k * 1e-3
        q, qd = Q + 0.1 * np.sin(t), np.full(model.nv, 0.1 * np.cos(t))
        state = JointState(name=list(model.joint_names), position=q.tolist(), velocity=qd.tolist())
        reading = WrenchStamped()
        for msg in (state, reading):
            msg.header.stamp.sec, msg.header.stamp.nanosec = 1 + k // 1000, (k % 1000) * 1_000_000
        reading.header.frame_id = FRAME
        w = sensor.reading(q, qd, np.zeros(model.nv))
        f, m = reading.wrench.force, reading.wrench.torque
        m.x, m.y, m.z, f.x, f.y, f.z = (float(x) for x in w)
        out.append((state, serialize_message(reading)))  # (the node subscribes it raw)
    return out


def _callback_us(node, messages):
    """``(process, thread)``: CPU microseconds per (joint_states, reading) pair of ``node``'s callbacks (the
    reading's only with the sensor), of the whole process (DDS's threads too) and of this thread alone."""
    on_wrench = node._ft_sensor._on_wrench
    sensor_on = node._ft_sensor.plan is not None
    start, thread = time.process_time_ns(), time.thread_time_ns()
    for state, reading in messages:
        node._on_joint_states(state)
        if sensor_on:
            on_wrench(reading)
    return ((time.process_time_ns() - start) / len(messages) / 1e3,
            (time.thread_time_ns() - thread) / len(messages) / 1e3)


def measure(messages_per_round, rounds):
    import pinocchio as pin
    import rclpy

    urdf = bundled_urdf("arm7_gripper").read_text()
    model = rd.load_urdf(urdf)
    pin_model = pin.buildModelFromXML(urdf)
    pin_data = pin_model.createData()
    rclpy.init()
    try:
        without, with_sensor, executor = dynamics_node_pair(
            urdf, {"ft_sensor.frame": FRAME, "ft_sensor.range": [500.0, 50.0]}, "ft")
        base, extra = alternating_rounds(without, with_sensor, _messages(model, messages_per_round), rounds,
                                         _callback_us)
        published = with_sensor._ft_sensor._n_published
        close_pair(without, with_sensor, executor)
    finally:
        rclpy.try_shutdown()
    sensor = ForceTorqueSensor(model, FRAME)
    qd, qdd, out = np.full(model.nv, 0.1), np.zeros(model.nv), np.empty(6)
    start = time.process_time_ns()
    for _ in range(messages_per_round):
        sensor.reading(Q, qd, qdd, out)
    alone = (time.process_time_ns() - start) / messages_per_round / 1e3
    pq, pv = np.zeros(pin_model.nq), np.full(pin_model.nv, 0.1)
    start = time.process_time_ns()
    for _ in range(messages_per_round):
        pin.rnea(pin_model, pin_data, pq, pv, pv)
    anchor = (time.process_time_ns() - start) / messages_per_round / 1e3
    return {"without": statistics.median(b[0] for b in base), "with": statistics.median(e[0] for e in extra),
            "thread_without": statistics.median(b[1] for b in base), "thread_with": statistics.median(e[1] for e in extra),
            "alone": alone, "anchor": anchor, "published": published}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench_ft_sensor", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000, help="(state, reading) pairs per round (default 2000)")
    parser.add_argument("--duration", type=float, help="seconds of 1 kHz pairs per round (instead of --messages)")
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds (default 15)")
    parser.add_argument("--quick", action="store_true", help="3 rounds (a smoke run)")
    args = parser.parse_args(argv)
    messages = args.messages if args.duration is None else max(1, int(args.duration * 1000))
    r = measure(messages, 3 if args.quick else args.rounds)
    added, thread = r["with"] - r["without"], r["thread_with"] - r["thread_without"]
    print("\nDynamics node, arm7_gripper: CPU per joint_states message + F/T reading (median of alternating rounds, us)")
    print("| CPU of | node without F/T | with F/T compensation | added | prediction alone | Pinocchio rnea (anchor) |")
    print("|---|---|---|---|---|---|")
    print(f"| the process | {r['without']:.1f} | {r['with']:.1f} | {added:.1f} | {r['alone']:.1f} | {r['anchor']:.2f} |")
    print(f"| the callbacks' thread | {r['thread_without']:.1f} | {r['thread_with']:.1f} | {thread:.1f} | | |")
    for what, value in (("process", added), ("callbacks' thread", thread)):
        print(f"added ({what}) {value:.1f} us = {value / r['without']:.2f} x the node without it, {value / r['anchor']:.1f} x "
              f"the anchor: {'ok' if value <= GOAL_US else 'MISSED'} against {GOAL_US:g} us")
    print(f"({r['published']} compensated readings published)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
