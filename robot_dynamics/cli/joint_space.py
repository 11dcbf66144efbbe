"""``robot-dynamics gravity URDF --q ...`` and ``mass-matrix URDF --q ...``: g(q) and M(q) at one configuration."""

import json
import sys

import numpy as np

from .arguments import add_model_arguments, limit_notes, load_model, parse_configuration, warn


def register(commands):
    for name, what, run in (("gravity", "holding torques g(q) (tau = +g(q) holds the arm still)", run_gravity),
                            ("mass-matrix", "joint-space mass matrix M(q)", run_mass_matrix)):
        sub = add_model_arguments(commands.add_parser(name, help=what))
        sub.add_argument("--q", nargs="+", default=[], metavar="Q",
                         help="joint positions: values in model order (see 'info'), or name=value pairs "
                              "(unnamed joints are 0); default all 0")
        sub.set_defaults(run=run)


def _model_and_configuration(args):
    model, _, load_warnings = load_model(args.urdf, args.command, mimic=not args.no_mimic)
    warn(load_warnings)
    q = parse_configuration(model, args.q)
    warn(limit_notes(model, q))
    return model, q


def run_gravity(args):
    import robot_dynamics as rd

    model, q = _model_and_configuration(args)
    values = rd.gravity_torques(model, q)
    out = sys.stdout
    if args.json:
        json.dump({"robot": model.name, "joint_names": list(model.joint_names), "q": q.tolist(),
                   "gravity": model.gravity.tolist(), "gravity_torques": values.tolist()}, out, indent=2)
        out.write("\n")
    else:
        print_vector(model, q, values,
                     f"holding torques g(q) of {model.name} (tau = +g(q) holds it still; "
                     f"gravity {tuple(float(g) for g in model.gravity)} m/s^2)", out)
    return 0


def run_mass_matrix(args):
    import robot_dynamics as rd

    model, q = _model_and_configuration(args)
    M = rd.mass_matrix(model, q)
    out = sys.stdout
    if args.json:
        json.dump({"robot": model.name, "joint_names": list(model.joint_names), "q": q.tolist(),
                   "mass_matrix": M.tolist()}, out, indent=2)
        out.write("\n")
    else:
        print_matrix(model, q, M, f"mass matrix M(q) of {model.name}, rows and columns in model order", out)
    return 0


def _unit(joint_type):
    return "N" if joint_type == "prismatic" else "N m"


def print_vector(model, q, values, title, out, unit_of=_unit):
    out.write(f"{title}\n")
    width = max(len(name) for name in model.joint_names)
    out.write(f"  {'joint':<{width}}  {'q':>12}  {'value':>14}\n")
    for name, kind, qi, value in zip(model.joint_names, model.joint_types, q, values):
        out.write(f"  {name:<{width}}  {qi:12.6g}  {value:14.8g} {unit_of(kind)}\n")


def print_matrix(model, q, M, title, out):
    out.write(f"{title}\n")
    out.write("q = [" + ", ".join(f"{v:.6g}" for v in q) + "]\n")
    width = max(len(name) for name in model.joint_names) + 5
    M = np.where(np.abs(M) < 1e-12 * max(1.0, float(np.abs(M).max())), 0.0, M)  # round-off -> 0
    out.write(" " * width + "".join(f"{f'[{j}]':>12}" for j in range(model.nv)) + "\n")
    for i, name in enumerate(model.joint_names):
        out.write(f"{f'[{i}] {name}':<{width}}" + "".join(f"{value:12.5g}" for value in M[i]) + "\n")
    out.write("(units: kg m^2 between revolute joints, kg between prismatic ones, kg m mixed)\n")
