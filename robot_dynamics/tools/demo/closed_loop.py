"""One closed-loop run of the demo: start the graph, wait for the loop, reset it, record, stop."""

import sys
import time

import numpy as np

from .. import processes
from ..sim_watch import second_graph
from .analysis import DemoError, Run

SETTLE_TIMEOUT = 45.0  # s: start-up of three Python processes + discovery on a busy 2-core machine


class Progress:
    """One updating line on a terminal; a line per second otherwise (logs, CI)."""

    def __init__(self, quiet=False, stream=None):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self._last = 0.0

    def update(self, text, force=False):
        if self.quiet:
            return
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r\033[K" + text)
            self.stream.flush()
        elif force or now - self._last >= 1.0:
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last = now

    def done(self, text):
        if self.quiet:
            return
        self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
        self.stream.flush()


def _graph_died(nodes):
    for node in nodes:
        if not node.running():
            return node
    return None


def closed_loop(recorder, label, nodes_to_start, env, log_dir, duration, progress, pd_gains=None, first=True):
    """Start the graph, wait for the loop to run, record ``duration`` seconds, stop the graph. The
    ``first`` run of the demo starts nothing where a graph already runs: before it, a previous run's
    nodes may still be known to discovery."""
    if first:
        progress.update(f"[{label}] looking for a graph already running on the domain", force=True)
        refusal = second_graph(recorder.node, "", None, f"ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']}",
                               "rerun with --isolated or another --domain-id")
        if refusal:
            raise DemoError(refusal)
    nodes = processes.start_graph(nodes_to_start, env, log_dir)
    run = Run(label=label, joint_names=recorder.names)
    try:
        with recorder.lock:
            recorder.run = run
        started = time.monotonic()
        need_torques = pd_gains is None
        while True:  # wait for the nodes to start, load the model and discover each other
            states, desired, torques = recorder.counts()
            if states and desired and (torques or not need_torques):
                break
            waited = time.monotonic() - started
            dead = _graph_died(nodes)
            if dead is not None:
                raise DemoError(f"{dead.name} exited with status {dead.process.returncode}: "
                                f"{dead.log_tail(1) or 'no output'} (log: {dead.log_path})")
            if waited > SETTLE_TIMEOUT:
                waiting = [what for what, n in (("joint_states", states), ("desired_state", desired),
                                                ("computed_torques", torques if need_torques else 1)) if not n]
                raise DemoError(f"{label}: no {', '.join(waiting)} after {SETTLE_TIMEOUT:.0f} s "
                                f"(node logs in {log_dir})")
            progress.update(f"[{label}] starting the nodes ... {waited:4.1f} s")
            time.sleep(0.1)
        if pd_gains is not None:
            with recorder.lock:
                recorder.pd_gains = pd_gains
        # Until now the simulated arm moved under whatever command there was (none at first):
        # start both runs from the same state, at rest at home, with the trajectory at t = 0.
        progress.update(f"[{label}] resetting the simulator and the trajectory", force=True)
        failed = recorder.restart_motion()
        if failed:
            raise DemoError(f"{label}: {', '.join(failed)} did not answer (node logs in {log_dir})")
        run.start = time.monotonic()
        at_start = recorder.counts()
        while True:
            now = time.monotonic()
            elapsed = now - run.start
            if elapsed >= duration:
                break
            dead = _graph_died(nodes)
            if dead is not None:
                raise DemoError(f"{dead.name} exited during the run (status {dead.process.returncode}; "
                                f"log: {dead.log_path})")
            states, desired, torques = (c - c0 for c, c0 in zip(recorder.counts(), at_start))
            bar = int(20 * elapsed / duration)
            rates = f"joint_states {states / max(elapsed, 1e-3):3.0f} Hz  desired_state {desired / max(elapsed, 1e-3):3.0f} Hz"
            if need_torques:
                rates += f"  computed_torques {torques / max(elapsed, 1e-3):3.0f} Hz"
            progress.update(f"[{label}] [{'#' * bar}{'.' * (20 - bar)}] {elapsed:4.1f}/{duration:g} s  {rates}")
            time.sleep(0.1)
        run.end = time.monotonic()
    finally:
        with recorder.lock:
            recorder.run = None
            recorder.pd_gains = None
        processes.stop_all(nodes)
    progress.done(f"[{label}] done: {len(run.state)} joint states recorded")
    return run


def pd_gains(model, q0, kp, kd):
    """Joint PD gains with the computed-torque loop's stiffness at q0: K = k diag M(q0)."""
    import robot_dynamics as rd

    inertia = np.diagonal(rd.mass_matrix(model, q0))
    return kp * inertia, kd * inertia
