"""Round-trip latency of the dynamics node: joint_states -> computed_torques.

One run measures, in this order, each case next to its baseline:

=============  ==========  ======================================================================
case           rate        responder
=============  ==========  ======================================================================
echo 7         1000 Hz     a bare rclpy node (same executor loop, same QoS) that answers each
                           JointState with a JointState of the same size (names + efforts)
panda7         1000 Hz     ``dynamics_node`` with Panda (example-robot-data, fingers fixed); with
                           ``--listen all`` the driver also subscribes to gravity_torques, bias_torques
                           and mass_matrix, which the node then computes and publishes for every message;
                           with ``--listen external`` the node has ``external_torque.enabled``, the
                           joint states carry efforts and the driver also subscribes to
                           external_wrench_estimate (the wrench at the tool)
echo 32        500 Hz      the echo node with talos_reduced-sized messages
talos_reduced  500 Hz      ``dynamics_node`` with talos_reduced (32 joints)
=============  ==========  ======================================================================

The driver (this process) publishes JointState (name, position, velocity) from a paced thread,
a sequence number in ``header.stamp``, and records the arrival of each answer in its executor;
latency = answer arrival - publication, lost = published - answered (after a drain). Each
responder runs in its own process; its CPU use over the window is read from ``/proc``, and divided
by the messages it answered, its CPU per message: the dynamics node's is quoted as a ratio to the echo's.

Run: ``robot-dynamics bench node [--duration 10] [--executor events] [--listen all]`` or
``python -m robot_dynamics.tools.benchmarks.node``
(:func:`main`). Needs example-robot-data for the robots. Don't run it on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from robot_dynamics.tools.benchmarks.robots import example_robot_path, panda7_urdf
from robot_dynamics.child_processes import die_with_parent

ANSWER_TOPIC = "computed_torques"
#: the ``dynamics_node`` executable's entry point, run by this interpreter (the arguments follow)
DYNAMICS_NODE = "import sys, robot_dynamics_executables as e; sys.exit(e.dynamics_node())"


def robot_urdf(name: str) -> str:
    if name == "panda7":
        return panda7_urdf()
    return example_robot_path(name).read_text()


# --- the echo node (baseline) --------------------------------------------------------------------
def echo_node_class():
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from robot_dynamics.nodes.common.converters import as_float_array
    from robot_dynamics.nodes.common.base import OUTPUT_QOS
    from robot_dynamics.nodes.common.base import JOINT_STATES_QOS

    class EchoNode(Node):
        """Answers every JointState with a JointState of the same stamp, names and size."""

        def __init__(self):
            super().__init__("echo")
            self._pub = self.create_publisher(JointState, ANSWER_TOPIC, OUTPUT_QOS)
            self.create_subscription(JointState, "joint_states", self._on_state, JOINT_STATES_QOS)

        def _on_state(self, msg):
            out = JointState()
            out.header.stamp = msg.header.stamp
            out.name = msg.name
            out.effort = as_float_array(np.frombuffer(msg.position) if len(msg.position) else [])
            self._pub.publish(out)

    return EchoNode


# --- driver ----------------------------------------------------------------------------------------
def _env():
    env = dict(os.environ)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    repo = Path(__file__).resolve().parents[2]
    if (repo / "setup.py").is_file():
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH", "")]))
    return env


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def _stop(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(5.0)
        except subprocess.TimeoutExpired:
            pass


class Driver:
    """Publishes joint states at a fixed rate and times the answers."""

    def __init__(self, node, executor, namespace: str, names, capacity: int, listen: str = "computed"):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        from robot_dynamics.nodes.common.base import OUTPUT_QOS
        from robot_dynamics.nodes.common.base import COMMAND_INPUT_QOS, JOINT_STATES_QOS

        self.node, self.executor = node, executor
        self.names = list(names)
        self.pub = node.create_publisher(JointState, f"{namespace}/joint_states", JOINT_STATES_QOS)
        self.desired = node.create_publisher(Float64MultiArray, f"{namespace}/desired_accelerations", COMMAND_INPUT_QOS)
        self.sub = node.create_subscription(JointState, f"{namespace}/{ANSWER_TOPIC}", self._on_answer, OUTPUT_QOS)
        from geometry_msgs.msg import WrenchStamped

        others = {"computed": (), "external": ((WrenchStamped, "external_wrench_estimate"),),
                  "all": ((JointState, "gravity_torques"), (JointState, "bias_torques"),
                          (Float64MultiArray, "mass_matrix"))}[listen]
        self.others = [node.create_subscription(kind, f"{namespace}/{topic}", lambda msg: None, OUTPUT_QOS)
                       for kind, topic in others]
        self.with_efforts = listen == "external"
        self.sent = np.full(capacity, np.nan)
        self.received = np.full(capacity, np.nan)
        self.seq = 0
        self.n_answers = 0
        rng = np.random.default_rng(0)
        self.q = rng.uniform(-0.5, 0.5, len(self.names))
        self.qd = rng.uniform(-0.5, 0.5, len(self.names))
        self._JointState = JointState
        self._Float64MultiArray = Float64MultiArray

    def close(self):
        self.node.destroy_publisher(self.pub)
        self.node.destroy_publisher(self.desired)
        self.node.destroy_subscription(self.sub)
        for sub in self.others:
            self.node.destroy_subscription(sub)

    def _on_answer(self, msg):
        t = time.perf_counter()
        seq = msg.header.stamp.sec
        if 0 <= seq < len(self.received) and np.isnan(self.received[seq]):
            self.received[seq] = t
            self.n_answers += 1

    def publish_desired(self):
        self.desired.publish(self._Float64MultiArray(data=[0.0] * len(self.names)))

    def send(self, seq: int):
        msg = self._JointState()
        msg.header.stamp.sec = seq
        msg.name = self.names
        msg.position = self.q.tolist()
        msg.velocity = self.qd.tolist()
        if self.with_efforts:
            msg.effort = self.q.tolist()
        self.sent[seq] = time.perf_counter()
        self.pub.publish(msg)

    def spin_for(self, seconds: float, until=None):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.01)
            if until is not None and until():
                return True
        return until() if until is not None else True

    def run(self, rate: float, first: int, count: int, desired_every: float | None):
        """Publish ``count`` messages with sequence numbers ``first..`` at ``rate`` Hz from a thread
        while this thread spins the executor; returns when all are sent plus a 0.5 s drain."""
        period = 1.0 / rate
        done = threading.Event()

        def pace():
            start = time.perf_counter()
            next_desired = start
            for k in range(count):
                target = start + k * period
                while True:
                    left = target - time.perf_counter()
                    if left <= 0:
                        break
                    time.sleep(left if left > 0.0005 else 0)
                if desired_every is not None and time.perf_counter() >= next_desired:
                    self.publish_desired()
                    next_desired += desired_every
                self.send(first + k)
            done.set()

        thread = threading.Thread(target=pace, daemon=True)
        thread.start()
        while not done.is_set():
            self.executor.spin_once(timeout_sec=0.01)
        thread.join()
        self.spin_for(0.5)


def run_case(node, executor, label, kind, robot, rate, duration, namespace, command_source="none",
             responder_executor="single", listen="computed"):
    """One responder process, warm-up, measured window; a dict of results."""
    import robot_dynamics as rd

    xml = robot_urdf(robot)
    names = rd.load_urdf(xml).joint_names
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "echo":
            cmd = [sys.executable, "-m", "robot_dynamics.tools.benchmarks.node", "--echo-node",
                   "--executor", responder_executor, "--ros-args"]
        else:
            params = Path(tmp) / "params.yaml"
            params.write_text(
                "/**:\n  ros__parameters:\n"
                f"    robot_description: {json.dumps(xml)}\n"
                f"    command_source: {json.dumps(command_source)}\n"
                "    desired_timeout: 1.0\n"
                + ("    external_torque.enabled: true\n" if listen == "external" else "")
            )
            cmd = [sys.executable, "-c", DYNAMICS_NODE, "--executor", responder_executor,
                   "--ros-args", "--params-file", str(params)]
        cmd += ["-r", f"__ns:={namespace}"]
        log = open(Path(tmp) / "responder.log", "w+b")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=_env(), preexec_fn=die_with_parent())
        warm = int(rate * 2.0)
        capacity = warm * 4 + int(rate * duration) + 10
        driver = Driver(node, executor, namespace, names, capacity, listen if kind == "dynamics" else "computed")
        driver.with_efforts = listen == "external"  # (the echo answers the same messages)
        try:
            # discovery, model loading, first answer: send slowly until answered
            ok = driver.spin_for(30.0, until=lambda: driver.pub.get_subscription_count() > 0
                                 and all(sub.get_publisher_count() > 0 for sub in [driver.sub, *driver.others]))
            if not ok:
                raise RuntimeError(f"{label}: responder not discovered")
            seq = 0
            deadline = time.monotonic() + 30.0
            while driver.n_answers == 0:
                if time.monotonic() > deadline or proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"{label}: no answer from the responder:\n{log.read().decode(errors='replace')}")
                driver.publish_desired()
                driver.send(seq)
                seq += 1
                driver.spin_for(0.05, until=lambda: driver.n_answers > 0)
            # warm-up at the full rate, then the measured window
            desired_every = 0.1 if kind == "dynamics" else None
            driver.run(rate, seq, warm, desired_every)
            first = seq + warm
            count = int(rate * duration)
            cpu0, t0 = _cpu_seconds(proc.pid), time.monotonic()
            driver.run(rate, first, count, desired_every)
            cpu_seconds = _cpu_seconds(proc.pid) - cpu0
            cpu = cpu_seconds / (time.monotonic() - t0)
        finally:
            driver.close()
            _stop(proc)
            log.close()
    sent = driver.sent[first:first + count]
    received = driver.received[first:first + count]
    latency = (received - sent)[~np.isnan(received)] * 1e3
    return {
        "case": label, "rate": rate, "joints": len(names), "sent": count,
        "p50": float(np.percentile(latency, 50)) if latency.size else float("nan"),
        "p99": float(np.percentile(latency, 99)) if latency.size else float("nan"),
        "max": float(latency.max()) if latency.size else float("nan"),
        "lost": int(count - latency.size), "cpu": cpu * 100,
        "cpu_per_message": cpu_seconds / max(latency.size, 1) * 1e6,  # (per message answered)
    }


def format_table(rows) -> str:
    lines = [
        "| case | rate (Hz) | joints | sent | p50 (ms) | p99 (ms) | max (ms) | lost | responder CPU | CPU per message (µs) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['rate']:.0f} | {r['joints']} | {r['sent']} | {r['p50']:.3f} | {r['p99']:.3f} "
            f"| {r['max']:.3f} | {r['lost']} | {r['cpu']:.0f} % | {r['cpu_per_message']:.0f} |"
        )
    return "\n".join(lines)


def verdict(rows) -> list[str]:
    """The issue's targets, checked against the table."""
    by = {r["case"]: r for r in rows}
    out = []
    if "echo 7" in by and "panda7" in by:
        echo, panda = by["echo 7"], by["panda7"]
        out.append(f"panda7 lost {panda['lost']} (target 0): {'ok' if panda['lost'] == 0 else 'MISSED'}")
        ok = panda["p50"] <= echo["p50"] + 0.100
        out.append(f"panda7 p50 {panda['p50']:.3f} <= echo p50 + 0.100 = {echo['p50'] + 0.100:.3f} ms: "
                   f"{'ok' if ok else 'MISSED'}")
        ratio = panda["cpu_per_message"] / echo["cpu_per_message"]
        out.append(f"panda7 CPU per message {panda['cpu_per_message']:.0f} us = {ratio:.2f} x echo's "
                   f"{echo['cpu_per_message']:.0f} us (target <= 1.4): {'ok' if ratio <= 1.4 else 'MISSED'}")
        ok = panda["p99"] <= 2 * echo["p99"]
        out.append(f"panda7 p99 {panda['p99']:.3f} <= 2 x echo p99 = {2 * echo['p99']:.3f} ms: "
                   f"{'ok' if ok else 'MISSED'}")
    if "talos_reduced" in by:
        lost = by["talos_reduced"]["lost"]
        out.append(f"talos_reduced lost {lost} (target 0): {'ok' if lost == 0 else 'MISSED'}")
    return out


def main(argv=None) -> int:
    """``robot-dynamics bench node``: run the cases, print the table."""
    parser = argparse.ArgumentParser(prog="bench_node", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per case (default 10)")
    parser.add_argument("--cases", default="echo7,panda7,echo32,talos_reduced",
                        help="comma-separated subset of echo7,panda7,echo32,talos_reduced")
    parser.add_argument("--command-source", default="none", choices=["none", "gravity", "computed"],
                        help="command_source of the dynamics node (effort_command costs one more publish)")
    parser.add_argument("--executor", default="single", choices=["single", "events"],
                        help="rclpy executor of the responders, echo and dynamics node alike (default single, "
                             "the dynamics node's own; dynamics_node --executor)")
    parser.add_argument("--listen", default="computed", choices=["computed", "all", "external"],
                        help="what the driver subscribes to: computed_torques only (default), every output "
                             "(the node computes and publishes only what someone listens to), or computed_torques "
                             "and external_wrench_estimate with external_torque.enabled (efforts sent)")
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    parser.add_argument("--echo-node", action="store_true", help=argparse.SUPPRESS)
    args, ros_args = parser.parse_known_args(argv)
    if args.echo_node:  # the baseline responder, started by run_case
        from robot_dynamics.nodes.common.runner import run_node

        return run_node(echo_node_class(), args=["bench_echo", *ros_args], executor=args.executor)
    if ros_args:
        parser.error(f"unrecognized arguments: {' '.join(ros_args)}")

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    import rclpy
    from rclpy.experimental import EventsExecutor

    cases = {
        "echo7": ("echo 7", "echo", "panda7", 1000.0),
        "panda7": ("panda7", "dynamics", "panda7", 1000.0),
        "echo32": ("echo 32", "echo", "talos_reduced", 500.0),
        "talos_reduced": ("talos_reduced", "dynamics", "talos_reduced", 500.0),
    }
    selected = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in selected if c not in cases]
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {list(cases)}")
    rows = []
    with rclpy.init(args=[]) as init:
        node = rclpy.create_node("bench_driver", context=init.context)
        executor = EventsExecutor(context=init.context)
        executor.add_node(node)
        try:
            for i, key in enumerate(selected):
                label, kind, robot, rate = cases[key]
                print(f"running {label} at {rate:.0f} Hz for {args.duration:g} s ...", flush=True)
                rows.append(run_case(node, executor, label, kind, robot, rate, args.duration, f"/bench{i}",
                                     args.command_source, args.executor, args.listen))
        finally:
            executor.shutdown(timeout_sec=1.0)
            node.destroy_node()
    print()
    print(format_table(rows))
    for line in verdict(rows):
        print(line)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
