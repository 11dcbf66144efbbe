"""The closed computed-torque loop over real topics: simulator + dynamics node + trajectory publisher.

Three node processes (Panda-7, home pose, no damping or friction in the simulator: the dynamics
node's model is then exact), wired as in launch/simulation.launch.py:

    trajectory_publisher --desired_state--> dynamics_node --effort_command--> simulator_node
    simulator_node --joint_states--> dynamics_node

The trajectory: every joint swings 0.3 rad at 0.25 Hz around the home pose, phases 0.5 rad apart,
with a 1 s smooth start.  Each run pauses the simulator, resets it to the home pose at rest,
restarts the trajectory, waits for the controller's commands, resumes, and records 4 s of
``joint_states`` and ``desired_state``.  The tracking error: at every joint state's stamp, the
latest desired point stamped before it, extrapolated with its velocity and acceleration to that
instant, minus the state; RMS over all joints and the window [0.5 s, 4 s] of simulated time.

Measured here (2 cores shared with other work; kp = 100 1/s^2, kd = 20 1/s; three runs):

=================================================  ======================  ==================
run                                                RMS tracking error      bound
=================================================  ======================  ==================
computed torque, exact model                       0.4 - 0.9 mrad          < 5 mrad
computed torque, dynamics node's payload.mass      ~ 50 mrad               > 3x exact, < 0.1
  1 kg too heavy (0.1 m beyond panda_hand)
PD only: Kp = kp diag M(q0), Kd = kd diag M(q0),   140 - 290 mrad          > 20x exact
  no model (the loop closed by this test)
=================================================  ======================  ==================

The exact-model error is what the loop's latency leaves (a command answers a state one to two
physics steps old; the desired state is up to 2 ms old): more than two orders of magnitude below
PD only, whose error is mostly gravity sag (the light wrist joints collapse by up to ~2 rad).
A wrong payload hurts most on the light wrist joints (1 kg at 0.1 m is ~1 N m on an inertia of
~0.02 kg m^2).  Gravity compensation only (``command_source: gravity``), from rest at home: the
arm holds its pose; drift measured 0 over 3 s (the holding torque the dynamics node computes from
the published state is the simulator's bias term to the last bit), bound 1 mrad.
"""

import math
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed (pip install .[ros])")

# Tracking errors of a loop closed over DDS in real time: measured alone, after the parallel run.
pytestmark = pytest.mark.realtime

from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

import robot_dynamics as rd  # noqa: E402

from ros_helpers import NodeProcess, RosHarness, wait_until, write_params  # noqa: E402

from robot_dynamics.tools.benchmarks.robots import panda7_urdf  # noqa: E402

HOME = [0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8]
KP, KD = 100.0, 20.0
RECORD = 4.0       # s of closed loop per run
SKIP = 0.5         # s at the start of a run left out of the RMS
START_TIMEOUT = 45.0
SIMULATOR, DYNAMICS, TRAJECTORY = "/robot_dynamics_simulator", "/robot_dynamics", "/trajectory_publisher"
COMMAND_TIMEOUT_WARNING = "no effort command for"  # the simulator's warning when it zeroes a stale command


class Loop:
    """The three processes, this test's recorder, and (for the PD-only run) its PD controller."""

    def __init__(self, tmp_path):
        configs = {
            "simulator_node": {"initial_positions": HOME, "apply_damping": False, "apply_friction": False,
                               "command_timeout": 0.1},
            "dynamics_node": {"command_source": "computed", "kp": [KP], "kd": [KD]},
            "trajectory_publisher": {"home_positions": HOME, "amplitude": [0.3], "frequency": [0.25],
                                     "phase": [0.5 * k for k in range(7)], "ramp_time": 1.0},
        }
        self.processes = {}
        for name, params in configs.items():
            merged = write_params(tmp_path / f"{name}.yaml", {"robot_description": panda7_urdf(), **params})
            self.processes[name] = NodeProcess(name, tmp_path / f"{name}.log", merged)
        self.model = rd.load_urdf(panda7_urdf())
        self.names = list(self.model.joint_names)
        self.harness = RosHarness("closed_loop_probe")
        self.lock = threading.Lock()
        self.states, self.desired, self.commands, self.computed = [], [], [], []
        self.pd_gains = None
        node = self.harness.node
        from rclpy.qos import qos_profile_sensor_data
        node.create_subscription(JointState, "joint_states", self._on_state, qos_profile_sensor_data)
        node.create_subscription(JointTrajectory, "desired_state", self._on_desired, qos_profile_sensor_data)
        node.create_subscription(Float64MultiArray, "effort_command", self._on_command, qos_profile_sensor_data)
        node.create_subscription(JointState, "computed_torques", self._on_computed, qos_profile_sensor_data)
        self.pd = node.create_publisher(Float64MultiArray, "effort_command", 10)

    # recording ---------------------------------------------------------------------------------
    def _on_state(self, msg):
        now = time.monotonic()
        where = {n: i for i, n in enumerate(msg.name)}
        order = [where[n] for n in self.names]
        q, qd = np.asarray(msg.position)[order], np.asarray(msg.velocity)[order]
        with self.lock:
            self.states.append((now, q, qd, msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9))
            desired, gains = (self.desired[-1] if self.desired else None), self.pd_gains
        if gains is not None and desired is not None:
            t, q_d, qd_d, qdd_d, _ = desired
            dt = now - t
            tau = gains[0] * (q_d + qd_d * dt + 0.5 * qdd_d * dt * dt - q) + gains[1] * (qd_d + qdd_d * dt - qd)
            self.pd.publish(Float64MultiArray(data=tau.tolist()))

    def _on_desired(self, msg):
        now = time.monotonic()
        where = {n: i for i, n in enumerate(msg.joint_names)}
        order = [where[n] for n in self.names]
        point = msg.points[0]
        with self.lock:
            self.desired.append((now, np.asarray(point.positions)[order], np.asarray(point.velocities)[order],
                                 np.asarray(point.accelerations)[order],
                                 msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9))

    def _on_command(self, msg):
        with self.lock:
            self.commands.append(time.monotonic())

    def _on_computed(self, msg):
        with self.lock:
            self.computed.append(time.monotonic())

    # control -----------------------------------------------------------------------------------
    def call(self, srv, service, request):
        response = self.harness.call(srv, service, request)
        assert response.success, response.message
        return response

    def set(self, node, **values):
        results = self.harness.set_parameters(node, values)
        assert all(r.successful for r in results), [r.reason for r in results]

    def wait_ready(self):
        for what, series in (("joint_states", "states"), ("desired_state", "desired")):
            wait_until(lambda: len(getattr(self, series)) > 10, START_TIMEOUT, what)

    def wait_commands(self, since, count=20):
        """``count`` commands of the law under test since ``since``: the probe's own PD's effort_command, or the
        dynamics node's computed torques (its effort_command holds gravity until it hears desired_state, so
        effort_command alone does not say the loop is closed)."""
        series, what = ("commands", "effort_command") if self.pd_gains is not None else ("computed", "computed_torques")
        wait_until(lambda: sum(t > since for t in list(getattr(self, series))) >= count, 30.0, what)

    def run(self, record=RECORD):
        """:meth:`run_once`, repeated once if a process stalled during it.

        A command older than ``command_timeout`` (0.1 s) makes the simulator apply zero torque and
        warn; in a loop that keeps up, that happens only when the shared host stalls one of the
        processes for more than 0.1 s (seen once in about ten runs of the suite). That run then
        measures the scheduler, not the controller, so it is repeated; a second one fails on its
        figures like any other.
        """
        simulator = self.processes["simulator_node"]
        for attempt in range(2):
            timeouts = simulator.log().count(COMMAND_TIMEOUT_WARNING)
            window = self.run_once(record)
            if simulator.log().count(COMMAND_TIMEOUT_WARNING) == timeouts:
                break
            print(f"run {attempt + 1}: the simulator timed out a command (a process stalled > 0.1 s)")
        return window

    def run_once(self, record):
        """Pause, reset the robot to home at rest, restart the trajectory, resume; record; the window."""
        self.call(SetBool, f"{SIMULATOR}/pause", SetBool.Request(data=True))
        self.call(Trigger, f"{SIMULATOR}/reset", Trigger.Request())
        since = time.monotonic()
        self.wait_commands(since)
        # Restart the trajectory only now, just before resuming: the trajectory runs on the wall
        # clock, so any wait in between would start the robot behind its (moving) reference.
        self.call(Trigger, f"{TRAJECTORY}/restart", Trigger.Request())
        start = time.monotonic()
        self.call(SetBool, f"{SIMULATOR}/pause", SetBool.Request(data=False))
        time.sleep(record)
        # and on until the window holds ``record`` s of stamps and 70 % of the states published over them (a
        # loaded machine that pauses this process loses states of this best-effort subscription meanwhile)
        wanted = 0.7 * 500 * record

        def recorded():
            with self.lock:
                window = [s[3] for s in self.states if s[0] >= start]
            return len(window) >= wanted and window[-1] - window[0] >= record
        wait_until(recorded, 60.0, f"{record:g} s of joint states (their stamps), {wanted:.0f} of them")
        end = time.monotonic()
        with self.lock:
            states = [s for s in self.states if start <= s[0] <= end]
            desired = [d for d in self.desired if d[0] <= end]
        return start, states, desired

    def tracking_error(self, record=RECORD):
        """RMS and max (rad) over the window, joints pooled: q_d - q at each joint state's stamp.

        Both stamps are wall-clock times (the simulator's follow the wall clock at real_time_factor
        1); q_d is the latest desired point stamped before, extrapolated with its velocity and
        acceleration.  Stamps rather than this process's receive times, so that the test's own
        scheduling on a busy machine does not enter the figure.
        """
        start, states, desired = self.run(record)
        t_desired = np.array([d[4] for d in desired])
        t0 = states[0][3]
        errors = []
        for _, q, _, t in states:
            if t < t0 + SKIP:
                continue
            k = np.searchsorted(t_desired, t, side="right") - 1
            _, q_d, qd_d, qdd_d, _ = desired[k]
            dt = t - t_desired[k]
            errors.append(q_d + qd_d * dt + 0.5 * qdd_d * dt * dt - q)
        errors = np.array(errors)
        assert len(errors) > 0.5 * 500 * (record - SKIP), f"only {len(errors)} joint states recorded"
        assert np.isfinite(errors).all()
        return float(np.sqrt(np.mean(errors**2))), float(np.abs(errors).max())

    def close(self):
        codes = {name: process.stop() for name, process in reversed(list(self.processes.items()))}
        self.harness.close()
        return codes


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    loop = Loop(tmp_path_factory.mktemp("closed_loop"))
    try:
        loop.wait_ready()
        yield loop
    finally:
        codes = loop.close()
        for name, code in codes.items():
            assert code == 0, f"{name} exited with {code}:\n{loop.processes[name].log()}"


@pytest.fixture
def computed(loop):
    loop.pd_gains = None
    loop.set(DYNAMICS, command_source="computed", **{"payload.link": "", "payload.mass": 0.0})
    return loop


RESULTS = {}


def test_exact_model_tracks_within_a_few_milliradians(computed):
    rms, worst = computed.tracking_error()
    RESULTS["exact"] = rms
    print(f"computed torque, exact model: RMS {rms * 1e3:.3f} mrad, max {worst * 1e3:.3f} mrad")
    assert rms < 5e-3, f"RMS tracking error {rms:.2e} rad with the exact model"


def test_wrong_payload_mass_makes_the_error_grow(computed):
    computed.set(DYNAMICS, **{"payload.link": "panda_hand", "payload.mass": 1.0, "payload.com": [0.0, 0.0, 0.1]})
    rms, worst = computed.tracking_error()
    print(f"computed torque, payload.mass 1 kg too heavy: RMS {rms * 1e3:.3f} mrad, max {worst * 1e3:.3f} mrad")
    exact = RESULTS.get("exact") or 1e-3
    assert rms > 3 * exact, f"payload error {rms:.2e} rad not clearly above the exact model's {exact:.2e}"
    assert rms < 0.1


def test_pd_only_is_orders_of_magnitude_worse(loop):
    M0 = rd.mass_matrix(loop.model, HOME)
    loop.set(DYNAMICS, command_source="none", **{"payload.link": "", "payload.mass": 0.0})
    loop.pd_gains = (KP * np.diag(M0), KD * np.diag(M0))
    try:
        rms, worst = loop.tracking_error()
    finally:
        loop.pd_gains = None
        loop.set(DYNAMICS, command_source="computed")
    print(f"PD only (Kp = {KP:g} diag M(q0), Kd = {KD:g} diag M(q0)): "
          f"RMS {rms * 1e3:.1f} mrad, max {worst * 1e3:.1f} mrad")
    exact = RESULTS.get("exact") or 1e-3
    assert rms > 20 * exact, f"PD-only error {rms:.2e} rad vs computed torque {exact:.2e} rad"


def test_gravity_compensation_holds_the_pose(loop):
    loop.pd_gains = None
    loop.set(DYNAMICS, command_source="gravity", **{"payload.link": "", "payload.mass": 0.0})
    try:
        start, states, _ = loop.run(record=3.0)
    finally:
        loop.set(DYNAMICS, command_source="computed")
    positions = np.array([s[1] for s in states])
    simulated = states[-1][3] - states[0][3]
    drift = np.abs(positions - HOME).max()
    print(f"gravity compensation only, {simulated:.2f} s simulated from rest at home: max drift {drift:.2e} rad")
    assert len(positions) > 1000 and simulated > 2.5  # the simulation did run
    assert drift < 1e-3, f"the arm drifted {drift:.2e} rad under gravity compensation"
    assert math.isfinite(drift)
