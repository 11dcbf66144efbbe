"""Soak and flood of the dynamics node: what a long run at 1 kHz and a flood of messages do to it.

``soak``: ``dynamics_node`` with Panda-7 (``command_source: computed``) answers joint states at
``--rate`` for ``--duration`` seconds; every ``--every`` seconds one line: the node's resident memory
(RSS), the round-trip latency p50/p99/max of that window and the messages it lost.

``flood`` (``--flood``): ``--publishers`` processes publish joint states and desired states to the
node as fast as they can for ``--duration`` seconds; then the node's first answer time and the
p50/max of 50 round trips at 100 Hz, its RSS before and after, and how long SIGINT takes to end it
(its exit status). ``--executor events`` runs the node with rclpy's EventsExecutor instead of
the SingleThreadedExecutor it uses, for the comparison in docs/benchmarks.md.

Run: ``python -m robot_dynamics.tools.benchmarks.soak [--duration 600] [--every 30]`` or
``python -m robot_dynamics.tools.benchmarks.soak --flood [--duration 10] [--executor events]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from robot_dynamics.tools.benchmarks.node import Driver, _env, _stop, robot_urdf
from robot_dynamics.child_processes import die_with_parent

NAMESPACE = "/soak"
FLOOD_ANSWER_TIMEOUT = 60.0  # s after the flood: a node still silent then is reported as wedged


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid``, MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def start_node(tmp: Path, executor: str) -> subprocess.Popen:
    params = tmp / "params.yaml"
    params.write_text("/**:\n  ros__parameters:\n"
                      f"    robot_description: {json.dumps(robot_urdf('panda7'))}\n"
                      "    command_source: computed\n    desired_timeout: 1.0\n")
    cmd = [sys.executable, "-m", "robot_dynamics.tools.benchmarks.soak", "--node", executor,
           "--ros-args", "--params-file", str(params), "-r", f"__ns:={NAMESPACE}"]
    return subprocess.Popen(cmd, stdout=open(tmp / "node.log", "wb"), stderr=subprocess.STDOUT, env=_env(),
                            preexec_fn=die_with_parent())


def first_answer(driver: Driver, proc, seq: int, timeout: float = 30.0) -> tuple[int, float]:
    """Send until the node answers; ``(next sequence number, seconds from the first send)``."""
    start = time.monotonic()
    answered = driver.n_answers
    while driver.n_answers == answered:
        if time.monotonic() - start > timeout or proc.poll() is not None:
            raise RuntimeError("no answer from the node")
        driver.publish_desired()
        driver.send(seq)
        seq += 1
        driver.spin_for(0.01, until=lambda: driver.n_answers > answered)
    return seq, time.monotonic() - start


def window(driver: Driver, first: int, count: int) -> dict:
    sent, received = driver.sent[first:first + count], driver.received[first:first + count]
    latency = (received - sent)[~np.isnan(received)] * 1e3
    pick = (lambda f: float(f(latency))) if latency.size else (lambda f: float("nan"))
    return {"p50": pick(lambda x: np.percentile(x, 50)), "p99": pick(lambda x: np.percentile(x, 99)),
            "max": pick(np.max), "lost": int(count - latency.size)}


def soak(node, executor, duration: float, every: float, rate: float) -> list[dict]:
    import robot_dynamics as rd

    names = rd.load_urdf(robot_urdf("panda7")).joint_names
    windows = max(1, int(round(duration / every)))
    per_window = int(rate * every)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_node(Path(tmp), "single")
        driver = Driver(node, executor, NAMESPACE, names, 1000 + int(rate * 2) + windows * per_window)
        try:
            driver.spin_for(30.0, until=lambda: driver.pub.get_subscription_count() > 0
                            and driver.sub.get_publisher_count() > 0)
            seq, _ = first_answer(driver, proc, 0)
            driver.run(rate, seq, int(rate * 2), 0.1)  # warm-up
            seq += int(rate * 2)
            start = time.monotonic()
            for k in range(windows):
                driver.run(rate, seq, per_window, 0.1)
                row = {"t (s)": round(time.monotonic() - start), "RSS (MB)": rss_mb(proc.pid),
                       **window(driver, seq, per_window), "sent": per_window}
                seq += per_window
                rows.append(row)
                print(format_row(row), flush=True)
        finally:
            driver.close()
            _stop(proc)
    return rows


def format_row(r: dict) -> str:
    return (f"| {r['t (s)']} | {r['RSS (MB)']:.1f} | {r['sent']} | {r['p50']:.3f} | {r['p99']:.3f} "
            f"| {r['max']:.3f} | {r['lost']} |")


def flooder(namespace: str, duration: float) -> int:
    """Publish joint states and desired states to ``namespace`` as fast as possible."""
    import rclpy
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    import robot_dynamics as rd
    from robot_dynamics.nodes.common.base import COMMAND_INPUT_QOS, JOINT_STATES_QOS

    names = list(rd.load_urdf(robot_urdf("panda7")).joint_names)
    with rclpy.init(args=[]) as init:
        node = rclpy.create_node("flooder", context=init.context)
        states = node.create_publisher(JointState, f"{namespace}/joint_states", JOINT_STATES_QOS)
        desired = node.create_publisher(JointTrajectory, f"{namespace}/desired_state", COMMAND_INPUT_QOS)
        state = JointState(name=names, position=[0.1] * len(names), velocity=[0.0] * len(names))
        point = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(positions=[0.2] * len(names))])
        deadline = time.monotonic() + duration
        n = 0
        while time.monotonic() < deadline:
            state.header.stamp.sec = 1_000_000 + n  # (never one of the driver's sequence numbers)
            states.publish(state)
            desired.publish(point)
            n += 1
        node.destroy_node()
    print(f"flooder sent {n} joint states and {n} desired states", flush=True)
    return 0


def flood(node, executor, duration: float, publishers: int, node_executor: str) -> dict:
    import robot_dynamics as rd

    names = rd.load_urdf(robot_urdf("panda7")).joint_names
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_node(Path(tmp), node_executor)
        driver = Driver(node, executor, NAMESPACE, names, 100_000)
        try:
            driver.spin_for(30.0, until=lambda: driver.pub.get_subscription_count() > 0
                            and driver.sub.get_publisher_count() > 0)
            seq, _ = first_answer(driver, proc, 0)
            rss_before = rss_mb(proc.pid)
            cmd = [sys.executable, "-m", "robot_dynamics.tools.benchmarks.soak", "--flooder", NAMESPACE,
                   "--duration", str(duration)]
            flooders = [subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          preexec_fn=die_with_parent())
                        for _ in range(publishers)]
            while any(f.poll() is None for f in flooders):
                driver.spin_for(0.1)  # (the driver's own subscription drains meanwhile)
            sent = " / ".join(f.stdout.read().decode(errors="replace").strip().splitlines()[-1:][0]
                              if f.returncode == 0 else f"flooder exit {f.returncode}" for f in flooders)
            try:
                seq, first = first_answer(driver, proc, seq, timeout=FLOOD_ANSWER_TIMEOUT)
                driver.run(100.0, seq, 50, 0.1)
                after = window(driver, seq, 50)
            except RuntimeError:  # wedged
                first, after = float("inf"), {"p50": float("nan"), "max": float("nan"), "lost": 50}
            rss_after = rss_mb(proc.pid)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(60.0)
            except subprocess.TimeoutExpired:
                code = None
            exit_s = time.monotonic() - t0
        finally:
            driver.close()
            _stop(proc)
    return {"executor": node_executor, "publishers": publishers, "flood (s)": duration, "flooders": sent,
            "first answer (ms)": first * 1e3, "p50 after (ms)": after["p50"], "max after (ms)": after["max"],
            "lost after": after["lost"], "RSS before (MB)": rss_before, "RSS after (MB)": rss_after,
            "SIGINT to exit (s)": exit_s, "exit status": code}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench_soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=None, help="seconds (soak 600, flood 10)")
    parser.add_argument("--every", type=float, default=30.0, help="soak: seconds per report line (default 30)")
    parser.add_argument("--rate", type=float, default=1000.0, help="soak: joint states per second (default 1000)")
    parser.add_argument("--flood", action="store_true", help="the flood instead of the soak")
    parser.add_argument("--publishers", type=int, default=3, help="flood: publisher processes (default 3)")
    parser.add_argument("--executor", default="single", choices=["single", "events"],
                        help="flood: the node's executor (default single, the node's own)")
    parser.add_argument("--node", choices=["single", "events"], help=argparse.SUPPRESS)
    parser.add_argument("--flooder", metavar="NAMESPACE", help=argparse.SUPPRESS)
    args, ros_args = parser.parse_known_args(argv)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if args.node:  # the node under test, started by start_node
        from robot_dynamics.nodes.dynamics.node import DynamicsNode
        from robot_dynamics.nodes.common.runner import run_node

        return run_node(DynamicsNode, args=["dynamics_node", *ros_args], executor=args.node)
    if args.flooder:
        return flooder(args.flooder, args.duration)
    if ros_args:
        parser.error(f"unrecognized arguments: {' '.join(ros_args)}")
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    with rclpy.init(args=[]) as init:
        node = rclpy.create_node("bench_soak_driver", context=init.context)
        executor = SingleThreadedExecutor(context=init.context)
        executor.add_node(node)
        try:
            if args.flood:
                result = flood(node, executor, args.duration or 10.0, args.publishers, args.executor)
                for key, value in result.items():
                    print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
            else:
                duration = args.duration or 600.0
                print(f"soak: panda7 at {args.rate:g} Hz for {duration:g} s, a line every {args.every:g} s")
                print("| t (s) | RSS (MB) | sent | p50 (ms) | p99 (ms) | max (ms) | lost |\n|---|---|---|---|---|---|---|",
                      flush=True)
                rows = soak(node, executor, duration, args.every, args.rate)
                lost = sum(r["lost"] for r in rows)
                sent = sum(r["sent"] for r in rows)
                print(f"lost {lost} of {sent}; RSS {rows[0]['RSS (MB)']:.1f} -> {rows[-1]['RSS (MB)']:.1f} MB")
        finally:
            executor.shutdown(timeout_sec=1.0)
            node.destroy_node()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
