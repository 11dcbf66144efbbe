"""``robot-dynamics info URDF``: joints, limits, masses, inertia bounds and warnings of a URDF."""

import json
import math
import sys
import xml.etree.ElementTree as ET

import numpy as np

from .arguments import add_model_arguments, json_default, load_model

INERTIA_SAMPLES, INERTIA_SEED = 1000, 0  # info's bounds on M(q): seeded configurations within the limits


def register(commands):
    info_command = add_model_arguments(commands.add_parser("info", help="joints, limits, masses and warnings of a URDF"))
    info_command.set_defaults(run=run)


def run(args):
    model, path, load_warnings = load_model(args.urdf, args.command, mimic=not args.no_mimic)
    report = info(model, path, load_warnings)
    if args.json:
        json.dump(report, sys.stdout, indent=2, default=json_default)
        sys.stdout.write("\n")
    else:
        print_info(report, sys.stdout)
    return 0


def _urdf_links(path):
    """{link: (mass, principal moments about the CoM or None, has inertial)} straight from the XML."""
    links = {}
    for link in ET.parse(path).getroot().findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            links[link.get("name")] = (0.0, None, False)
            continue
        mass_element = inertial.find("mass")
        mass = float(mass_element.get("value", 0)) if mass_element is not None else 0.0
        inertia = inertial.find("inertia")
        if inertia is None:
            links[link.get("name")] = (mass, np.zeros(3), True)
            continue
        xx, xy, xz, yy, yz, zz = (float(inertia.get(key, 0)) for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
        tensor = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        links[link.get("name")] = (mass, np.linalg.eigvalsh(tensor), True)
    return links


def inertia_warnings(links):
    """Plausibility checks of link inertias beyond what the loader rejects."""
    found = []
    for name, (mass, principal, _) in links.items():
        if principal is None:
            continue
        largest = float(principal.max()) if len(principal) else 0.0
        if mass <= 0 and largest > 0:
            found.append(f"link {name!r} has an inertia tensor but no mass")
        elif mass > 0 and largest > 0:
            radius = math.sqrt(largest / mass)  # radius of gyration
            if radius > 1.0:
                found.append(
                    f"link {name!r}: suspicious inertia, radius of gyration {radius:.3g} m for {mass:g} kg "
                    "(units? inertia is in kg m^2)"
                )
            elif radius < 1e-3:
                found.append(
                    f"link {name!r}: suspicious inertia, radius of gyration {radius * 1e3:.3g} mm for {mass:g} kg "
                    "(units? inertia is in kg m^2)"
                )
        if mass > 1000:
            found.append(f"link {name!r}: suspicious mass {mass:g} kg (units? mass is in kg)")
    return found


def info(model, path, load_warnings):
    """Everything ``info`` prints, as a JSON-ready dict."""
    links = _urdf_links(path)
    carried_by = {}
    for link in model.link_names:
        body = model.frames[link].body
        carried_by[link] = None if body < 0 else model.body_joints[body]
    moving_mass = sum(links[link][0] for link in model.link_names if carried_by[link] is not None)
    lower, upper = model.position_limits.T
    joints = []
    for i, name in enumerate(model.joint_names):
        followers = [m for m, (terms, _) in model.couplings.items() if any(master == name for master, _ in terms)]
        moved = {name, *followers}
        joints.append({
            "name": name,
            "type": model.joint_types[i],
            "lower": _finite_or_none(lower[i]), "upper": _finite_or_none(upper[i]),
            "velocity": _finite_or_none(model.velocity_limits[i]),
            "effort": _finite_or_none(model.effort_limits[i]),
            "damping": float(model.damping[i]), "friction": float(model.friction[i]),
            "armature": float(model.armature[i]), "motor_damping": float(model.motor_damping[i]),
            "link_mass": sum(links[link][0] for link in model.link_names if carried_by[link] in moved),
            "mimicked_by": followers,
        })
    bounds = _inertia_bounds(model)
    notes = []
    point_masses = [n for n, (m, p, _) in links.items() if p is not None and m > 0 and float(p.max()) == 0]
    if point_masses:
        notes.append("point masses (zero inertia tensor): " + ", ".join(point_masses))
    frames_only = [n for n, (m, p, has) in links.items() if m == 0 and carried_by.get(n) is not None]
    if frames_only:
        notes.append("massless links (frames only): " + ", ".join(frames_only))
    return {
        "robot": model.name,
        "file": str(path),
        "coordinates": model.nv,
        "links": len(model.link_names),
        "total_mass": sum(mass for mass, _, _ in links.values()),
        "moving_mass": moving_mass,
        "gravity": [float(g) for g in model.gravity],
        "joints": joints,
        "mimic_joints": {name: {"master": master, "multiplier": mult, "offset": off}
                         for name, (master, mult, off) in model.mimic_joints.items()},
        "coupled_joints": {name: {"masters": dict(terms), "offset": offset}  # all, q_joint = E q + o
                           for name, (terms, offset) in model.couplings.items()},
        "link_masses": {link: {"mass": links[link][0], "moved_by": carried_by[link]} for link in model.link_names},
        "inertia_bounds": bounds,
        "warnings": list(load_warnings) + inertia_warnings(links) + (
            [] if bounds is None or math.isfinite(bounds["lambda_min"] + bounds["lambda_max"]) else
            ["the inertia bounds are not finite: the model's numbers overflow double precision"]),
        "notes": notes,
    }


def _inertia_bounds(model):
    """Spong's ``lambda_min I <= M(q) <= lambda_max I`` over a fixed, seeded sample within the limits.

    None for a robot without moving joints."""
    import robot_dynamics as rd

    if model.nv == 0:
        return None
    lambda_min, lambda_max = rd.inertia_bounds(model, INERTIA_SAMPLES, seed=INERTIA_SEED)
    return {"lambda_min": lambda_min, "lambda_max": lambda_max, "samples": INERTIA_SAMPLES, "seed": INERTIA_SEED}


def _number(value, width, digits=4):
    if value is None:
        return "-".rjust(width)
    return f"{value:.{digits}g}".rjust(width)


def _finite_or_none(value):
    value = float(value)
    return value if math.isfinite(value) else None


def print_info(report, out):
    write = out.write
    write(f"robot {report['robot']}  ({report['file']})\n")
    write(
        f"{report['coordinates']} coordinates, {report['links']} links, total mass {report['total_mass']:.3f} kg "
        f"({report['moving_mass']:.3f} kg moving), gravity {tuple(report['gravity'])} m/s^2\n\n"
    )
    name_width = max([len("joint")] + [len(j["name"]) for j in report["joints"]])
    header = (f"{'#':>2}  {'joint':<{name_width}}  {'type':<10} {'lower':>8} {'upper':>8} {'velocity':>8} "
              f"{'effort':>8} {'damping':>8} {'friction':>8} {'mass(kg)':>8}\n")
    write(header)
    for i, joint in enumerate(report["joints"]):
        write(
            f"{i:>2}  {joint['name']:<{name_width}}  {joint['type']:<10}"
            f"{_number(joint['lower'], 9)}{_number(joint['upper'], 9)}{_number(joint['velocity'], 9)}"
            f"{_number(joint['effort'], 9)}{_number(joint['damping'], 9)}{_number(joint['friction'], 9)}"
            f"{_number(joint['link_mass'], 9)}\n"
        )
    write("(limits in rad, m, rad/s, m/s, N m, N; '-' = none; mass(kg) = links the joint moves directly)\n")
    motors = [joint for joint in report["joints"] if joint["armature"] or joint["motor_damping"]]
    if motors:
        write("\nmotors reflected through their gears (URDF <transmission>): armature r^2 J_m, motor damping r^2 B_m\n")
        for joint in motors:
            write(f"  {joint['name']:<{name_width}}  armature {joint['armature']:.6g} "
                  f"{'kg' if joint['type'] == 'prismatic' else 'kg m^2'}, motor damping {joint['motor_damping']:.6g} "
                  f"{'N s/m' if joint['type'] == 'prismatic' else 'N m s/rad'}\n")
    bounds = report["inertia_bounds"]
    if bounds is None:
        write("\ninertia bounds: none (no moving joints)\n")
    else:
        write(f"\ninertia bounds lambda_min I <= M(q) <= lambda_max I: lambda_min = {bounds['lambda_min']:.6g}, "
              f"lambda_max = {bounds['lambda_max']:.6g}\n(eigenvalues of M over {bounds['samples']} random "
              f"configurations within the limits, seed {bounds['seed']}; joints without limits in [-pi, pi])\n")
    if report["coupled_joints"]:
        write("\nmimic and coupled joints (not coordinates):\n")
        for name, coupling in report["coupled_joints"].items():
            terms = " + ".join(f"{factor:g} * {master}" for master, factor in coupling["masters"].items())
            write(f"  {name} = {terms} + {coupling['offset']:g}\n")
    write("\nlinks (mass in kg; moved by):\n")
    link_width = max(len(link) for link in report["link_masses"])
    for link, entry in report["link_masses"].items():
        moved_by = entry["moved_by"] or "fixed base"
        write(f"  {link:<{link_width}}  {entry['mass']:8.4g}  {moved_by}\n")
    for note in report["notes"]:
        write(f"\nnote: {note}\n")
    if report["warnings"]:
        write("\n")
        for warning in report["warnings"]:
            write(f"WARNING: {warning}\n")
    else:
        write("\nno warnings\n")
