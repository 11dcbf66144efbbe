"""``robot-dynamics``: the command-line tool for the person at the keyboard.

Subcommands::

    robot-dynamics robots                         the bundled robots and their files
    robot-dynamics info URDF                      joints, limits, masses, inertia bounds, warnings
    robot-dynamics gravity URDF --q ...           holding torques g(q)
    robot-dynamics mass-matrix URDF --q ...       M(q)
    robot-dynamics demo                           the closed-loop computed-torque demo (ROS 2)
    robot-dynamics excite URDF --duration S --output FILE
                                                  an excitation trajectory for identification
    robot-dynamics identify RECORDING --urdf URDF a calibrated URDF (and payload) from a recording
    robot-dynamics external-torques RECORDING --urdf URDF
                                                  the momentum observer's residual over a recording
    robot-dynamics bench [core|node|simulator|scaling|contact] [OPTIONS]
                                                  the benchmarks (core, node and simulator need the
                                                  test extra; scaling needs matplotlib for its plot)

``URDF`` is a file path or the name of a bundled robot (``planar_2r``, ``arm7_gripper``,
``cartesian_3dof``). ``--q`` takes the joint values in model order (``--q 0 0.5``, also
``--q 0,0.5``) or by name (``--q theta2=0.5``; joints not named are 0). Errors are one line on
stderr and a non-zero exit status: 1 for a bad URDF, configuration or unknown robot, 2 for a
command-line usage error.

Only the ``demo`` and ``bench`` subcommands need ROS 2 (rclpy) and matplotlib; the others need
only the core library.
"""

import argparse
import importlib
import importlib.util
import json
import math
import sys
import warnings
import xml.etree.ElementTree as ET

import numpy as np

PROG = "robot-dynamics"
BENCHMARKS = ("core", "node", "simulator", "scaling", "contact")
INERTIA_SAMPLES, INERTIA_SEED = 1000, 0  # info's bounds on M(q): seeded configurations within the limits


class CLIError(Exception):
    """A user error: printed as one line on stderr, exit status 1."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (plus where to find help) and exit status 2."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


# ----------------------------------------------------------------------------------------------
# URDF and configuration arguments
# ----------------------------------------------------------------------------------------------

def resolve_urdf(argument):
    """The URDF file for a command-line argument: an existing file, else a bundled robot name."""
    from .robots import urdf_file

    try:
        return urdf_file(argument)
    except LookupError as exc:
        raise CLIError(str(exc)) from None


#: the warm-up parts (:data:`robot_dynamics.warm_up.PARTS`, all: ``()``) whose kernels each command
#: calls, and how long compiling them takes on two free cores (docs/benchmarks.md, "First start")
COMMAND_KERNELS = {
    "info": (("dynamics_node",), "about 6 s"),
    "gravity": (("dynamics_node",), "about 6 s"),
    "mass-matrix": (("dynamics_node",), "about 6 s"),
    "excite": (("dynamics_node", "library"), "about 11 s"),
    "identify": (("dynamics_node", "library"), "about 11 s"),
    "demo": (("dynamics_node", "simulator"), "about 10 s"),  # the nodes': compiled once here, not by each at once
    "external-torques": (("dynamics_node",), "about 6 s"),
}


def load_model(argument, command, mimic=True):
    """(model, path, [warning messages]) for a URDF argument of ``command``; load warnings are captured.
    On the first use after installing, the command's kernels compile first, saying so."""
    import robot_dynamics as rd
    from .warm_up import compile_first

    path = resolve_urdf(argument)
    compile_first(*COMMAND_KERNELS[command])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = rd.load_urdf(path, mimic=mimic)
        except rd.URDFError as error:
            raise CLIError(f"cannot load {str(path)!r}: {error}") from None
    return model, path, [str(w.message) for w in caught]


def parse_configuration(model, values):
    """Joint positions in model order from ``--q`` values (positional list or name=value pairs)."""
    if not values:
        return np.zeros(model.nv)
    tokens = [token for value in values for token in value.replace(",", " ").split()]
    named = ["=" in token for token in tokens]
    if any(named) and not all(named):
        raise CLIError("--q: give either all values in model order or only name=value pairs, not a mix")
    if not all(named):
        try:
            q = np.array([float(token) for token in tokens])
        except ValueError as error:
            raise CLIError(f"--q: {error}") from None
        if q.shape != (model.nv,):
            raise CLIError(
                f"--q: {model.name} has {model.nv} joints ({', '.join(model.joint_names)}) "
                f"but {len(tokens)} values were given"
            )
    else:
        q = np.zeros(model.nv)
        index = {name: i for i, name in enumerate(model.joint_names)}
        seen = set()
        for token in tokens:
            name, _, text = token.partition("=")
            if name in model.couplings:
                masters = ", ".join(repr(master) for master, _ in model.couplings[name][0])
                verb = "mimics" if len(model.couplings[name][0]) == 1 else "follows"
                raise CLIError(f"--q: joint {name!r} {verb} {masters}: give {masters} instead")
            if name not in index:
                raise CLIError(f"--q: unknown joint {name!r} (joints: {', '.join(model.joint_names)})")
            if name in seen:
                raise CLIError(f"--q: joint {name!r} given twice")
            seen.add(name)
            try:
                q[index[name]] = float(text)
            except ValueError:
                raise CLIError(f"--q: {text!r} is not a number (for joint {name!r})") from None
    bad = [name for name, value in zip(model.joint_names, q) if not math.isfinite(value)]
    if bad:
        raise CLIError(f"--q: non-finite value for {', '.join(bad)}")
    return q


def _limit_notes(model, q):
    lower, upper = model.position_limits.T
    return [
        f"{name} = {value:g} is outside its limits [{lo:g}, {hi:g}]"
        for name, value, lo, hi in zip(model.joint_names, q, lower, upper)
        if value < lo or value > hi
    ]


# ----------------------------------------------------------------------------------------------
# info
# ----------------------------------------------------------------------------------------------

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
        "inertia_bounds": _inertia_bounds(model),
        "warnings": list(load_warnings) + inertia_warnings(links),
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


# ----------------------------------------------------------------------------------------------
# gravity and mass-matrix
# ----------------------------------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------------------
# bench
# ----------------------------------------------------------------------------------------------

def load_benchmark(name):
    """The benchmark module ``robot_dynamics.tools.benchmarks.<name>``; each has ``main(argv=None)``.

    They measure against Pinocchio and read example-robot-data: ``pip install .[test]``.
    """
    module_name = f"robot_dynamics.tools.benchmarks.{name}"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name == module_name:
            raise CLIError(f"benchmark {name!r} not found") from None
        raise CLIError(f"benchmark {name!r} needs {error.name!r}: pip install .[test,ros]") from None


def run_benchmarks(names, argv):
    """Run each benchmark's ``main(argv)`` in turn (all are found first, so none is half-run)."""
    status = 0
    modules = [(name, load_benchmark(name)) for name in names]
    for name, module in modules:
        print(f"== benchmark {name} ({module.__file__}) ==", flush=True)
        result = module.main(list(argv))
        status = status or (result if isinstance(result, int) else 0)
    return status


# ----------------------------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------------------------

def build_parser():
    parser = _Parser(prog=PROG, description="Rigid-body dynamics of robot arms from URDF, and ROS 2 nodes.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    commands.add_parser("robots", help="list the bundled robots")

    def with_urdf(sub):
        sub.add_argument("urdf", metavar="URDF", help="URDF file, or the name of a bundled robot (see 'robots')")
        sub.add_argument("--no-mimic", action="store_true",
                         help="ignore <mimic> tags: every moving joint is a coordinate")
        sub.add_argument("--json", action="store_true", help="print JSON instead of a table")
        return sub

    with_urdf(commands.add_parser("info", help="joints, limits, masses and warnings of a URDF"))
    for name, what in (("gravity", "holding torques g(q) (tau = +g(q) holds the arm still)"),
                       ("mass-matrix", "joint-space mass matrix M(q)")):
        sub = with_urdf(commands.add_parser(name, help=what))
        sub.add_argument("--q", nargs="+", default=[], metavar="Q",
                         help="joint positions: values in model order (see 'info'), or name=value pairs "
                              "(unnamed joints are 0); default all 0")

    demo = commands.add_parser("demo", help="closed-loop computed-torque demo: simulator + dynamics node (ROS 2)")
    from .tools.demo import add_arguments
    add_arguments(demo)

    elastic = commands.add_parser("demo-elastic", help="computed torque on an elastic-joint arm, with and without "
                                  "the elastic model (in process, no ROS)")
    from .tools.elastic_demo import add_arguments as add_elastic_arguments
    add_elastic_arguments(elastic)

    from .identification.commands import add_excite_arguments, add_identify_arguments
    excite = commands.add_parser("excite", help="excitation trajectory for identification (Fourier series, CSV)")
    excite.add_argument("urdf", metavar="URDF", help="URDF file, or the name of a bundled robot (see 'robots')")
    add_excite_arguments(excite)
    add_identify_arguments(commands.add_parser("identify", help="identified URDF, friction and payload from a "
                                               "joint_states recording (rosbag2 or CSV)"))

    from .tools.external_torques import add_arguments as add_external_torques_arguments
    add_external_torques_arguments(commands.add_parser(
        "external-torques", help="the momentum observer's external torques over a joint_states recording (rosbag2 or "
        "CSV): residual per joint, RMS, peak, suggested collision thresholds"))

    bench = commands.add_parser("bench", help="run the benchmarks (core, node, simulator, scaling, contact)")
    bench.add_argument("which", nargs="*", metavar="WHICH",
                       help="core, node, simulator, scaling, contact or all (default all); any further options "
                            "(e.g. --duration 10) go to each benchmark; robot-dynamics bench WHICH --help lists them")
    return parser


def main(argv=None):
    """Entry point of the ``robot-dynamics`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    benchmark_options = []
    if argv[:1] == ["bench"]:  # bench [WHICH ...] [options for the benchmarks, --help included]
        first = next((i for i, token in enumerate(argv) if token.startswith("-")), len(argv))
        if first > 1 or argv[first:first + 1] not in (["-h"], ["--help"]):
            argv, benchmark_options = argv[:first], argv[first:]
    args = build_parser().parse_args(argv)
    args.benchmark_options = benchmark_options
    try:
        return _dispatch(args)
    except CLIError as error:
        sys.stderr.write(f"{PROG} {args.command}: error: {error}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG} {args.command}: interrupted\n")
        return 130


def _dispatch(args):
    out = sys.stdout
    if args.command == "robots":
        from .robots import bundled_robot_names, bundled_urdf

        for name in bundled_robot_names():
            out.write(f"{name:<16} {bundled_urdf(name)}\n")
        return 0
    if args.command == "demo":
        from .tools.demo import DemoError, check_arguments, run_demo

        try:
            check_arguments(args)
            return run_demo(args, *load_model(args.robot, "demo"))
        except DemoError as error:
            raise CLIError(str(error)) from None
    if args.command == "demo-elastic":
        from .tools.elastic_demo import run_demo as run_elastic_demo

        try:
            return run_elastic_demo(args, out)
        except ValueError as error:
            raise CLIError(str(error)) from None
    if args.command == "bench":
        unknown = [name for name in args.which if name not in BENCHMARKS + ("all",)]
        if unknown:
            raise CLIError(f"unknown benchmark {unknown[0]!r} (choose from {', '.join(BENCHMARKS)}, all)")
        names = BENCHMARKS if not args.which or "all" in args.which else tuple(dict.fromkeys(args.which))
        return run_benchmarks(names, args.benchmark_options)

    if args.command == "external-torques":
        from .tools import external_torques

        model, _, load_warnings = load_model(args.urdf, args.command)
        for warning in load_warnings:
            sys.stderr.write(f"warning: {warning}\n")
        try:
            return external_torques.run(args, model, out, sys.stderr)
        except external_torques.ERRORS as error:
            raise CLIError(str(error)) from None

    if args.command in ("excite", "identify"):
        from .identification import commands

        model, path, load_warnings = load_model(args.urdf, args.command)
        for warning in load_warnings:
            sys.stderr.write(f"warning: {warning}\n")
        try:
            if args.command == "excite":
                return commands.run_excite(args, model, out, sys.stderr)
            return commands.run_identify(args, model, path, out, sys.stderr)
        except commands.ERRORS as error:
            raise CLIError(str(error)) from None

    import robot_dynamics as rd

    model, path, load_warnings = load_model(args.urdf, args.command, mimic=not args.no_mimic)
    if args.command == "info":
        report = info(model, path, load_warnings)
        if args.json:
            json.dump(report, out, indent=2, default=_json_default)
            out.write("\n")
        else:
            print_info(report, out)
        return 0

    for warning in load_warnings:
        sys.stderr.write(f"warning: {warning}\n")
    q = parse_configuration(model, args.q)
    for note in _limit_notes(model, q):
        sys.stderr.write(f"warning: {note}\n")
    if args.command == "gravity":
        values = rd.gravity_torques(model, q)
        if args.json:
            json.dump({"robot": model.name, "joint_names": list(model.joint_names), "q": q.tolist(),
                       "gravity": model.gravity.tolist(), "gravity_torques": values.tolist()}, out, indent=2)
            out.write("\n")
        else:
            print_vector(model, q, values,
                         f"holding torques g(q) of {model.name} (tau = +g(q) holds it still; "
                         f"gravity {tuple(float(g) for g in model.gravity)} m/s^2)", out)
        return 0
    M = rd.mass_matrix(model, q)
    if args.json:
        json.dump({"robot": model.name, "joint_names": list(model.joint_names), "q": q.tolist(),
                   "mass_matrix": M.tolist()}, out, indent=2)
        out.write("\n")
    else:
        print_matrix(model, q, M, f"mass matrix M(q) of {model.name}, rows and columns in model order", out)
    return 0


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value).__name__)


if __name__ == "__main__":
    sys.exit(main())
