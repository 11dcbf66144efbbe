"""Identification measured on simulated recordings: accuracy and time (docs/identification.md).

``python -m robot_dynamics.identification.benchmark [--duration S] [--rate HZ]`` records the
walk-through's perturbed arm7_gripper (7 arm joints and a gripper) following an excitation, with
1 % and 2 % effort noise, writes each recording to an MCAP bag, and prints, per joint, the RMS
torque error on the held-out last 25 % in % of that joint's RMS torque (identified model and
input URDF), the time to design the excitation, to read the bag and to identify, and the
payload's mass and centre-of-mass errors.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import robot_dynamics as rd

from . import design_excitation, identify, joint_state_messages, read_recording, write_rosbag
from .excitation import regressor_condition
from .identify import full_problem, structural_base
from .parameters import mass_com_inertia
from .simulated import perturbed_urdf, record

ROBOT = "arm7_gripper"
PAYLOAD = ("arm7_hand", 1.3, np.array([0.01, -0.02, 0.05]), [0.004, 1e-4, -1e-4, 0.005, 5e-5, 0.003])


def main(argv=None, out=sys.stdout):
    parser = argparse.ArgumentParser(prog="python -m robot_dynamics.identification.benchmark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds recorded (default 60)")
    parser.add_argument("--rate", type=float, default=500.0, help="joint_states rate, Hz (default 500)")
    parser.add_argument("--iterations", type=int, default=10, help="of the excitation's optimisation (default 10)")
    args = parser.parse_args(argv)
    from ..description.robots import bundled_urdf

    urdf = bundled_urdf(ROBOT)
    model = rd.load_urdf(urdf)
    real = rd.load_urdf(perturbed_urdf(urdf, seed=1))
    start = time.perf_counter()
    excitation = design_excitation(model, iterations=args.iterations)
    design = time.perf_counter() - start
    independent = structural_base(full_problem(model, friction=False))[0]
    out.write(f"{ROBOT}: {model.nv} joints, {args.duration:g} s at {args.rate:g} Hz, friction identified; "
              "held-out RMS torque error in % of each joint's RMS torque\n")
    rows, times = {}, []
    with tempfile.TemporaryDirectory() as folder:
        for noise in (0.01, 0.02):
            run = record(real, model, excitation, args.duration, args.rate, torque_noise=noise)
            bag = Path(folder) / f"noise{noise}"
            write_rosbag(bag, joint_state_messages(run.joint_names, run.t, run.q, run.qd, run.tau), storage="mcap")
            start = time.perf_counter()
            recording = read_recording(bag)
            read = time.perf_counter() - start
            estimate, check = identify(recording, model, friction=True)
            times.append((noise, read, time.perf_counter() - start - read, estimate.condition))
            rows[noise] = 100 * check.rms_identified / check.rms_torque, 100 * check.rms_input / check.rms_torque
    out.write(f"{'joint':24} {'1 % noise':>10} {'2 % noise':>10} {'input URDF':>11}\n")
    for j, name in enumerate(model.joint_names):
        out.write(f"{name:24} {rows[0.01][0][j]:10.2f} {rows[0.02][0][j]:10.2f} {rows[0.01][1][j]:11.2f}\n")
    out.write(f"design the excitation (robot-dynamics excite) {design:.2f} s; condition number over one period "
              f"{regressor_condition(model, excitation, independent, 500):.4g}\n")
    for noise, read, solve, condition in times:
        out.write(f"{100 * noise:.0f} % noise: read the MCAP bag {read:.2f} s, identify {solve:.2f} s "
                  f"(condition number {condition:.3g})\n")

    link, mass, com, inertia = PAYLOAD
    run = record(model.with_payload(link, mass, com, inertia), model, excitation, min(args.duration, 20.0), args.rate,
                 torque_noise=0.015)
    with tempfile.TemporaryDirectory() as folder:
        write_rosbag(Path(folder) / "payload", joint_state_messages(run.joint_names, run.t, run.q, run.qd, run.tau))
        estimate, _ = identify(read_recording(Path(folder) / "payload"), model, payload=link)
    found_mass, found_com, _ = mass_com_inertia(estimate.x[:10])
    out.write(f"payload {mass:g} kg on {link}, {min(args.duration, 20.0):g} s, 1.5 % noise: mass error "
              f"{100 * abs(found_mass - mass) / mass:.3f} %, centre-of-mass error {1e3 * np.linalg.norm(found_com - com):.2f} mm\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
