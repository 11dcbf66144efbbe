"""The robots bundled with robot_dynamics (``urdf/*.urdf``), found wherever the package is.

============== ======================================================================
name           robot
============== ======================================================================
planar_2r      Lynch & Park's planar 2R point-mass arm (section 9.1), the textbook check
arm7_gripper   a 7-joint arm with a two-finger gripper (mimic finger): the demo robot
cartesian_3dof a three-axis Cartesian gantry (prismatic joints)
five_bar       Spong's five-bar parallelogram (section 6.4), cut open: two joints coupled to
               both coordinates
five_bar_decoupled
               the same, with Spong's (6.108) satisfied: a constant, diagonal mass matrix
============== ======================================================================

The files are looked up, in this order, in

1. the source checkout, when the package is imported from one (``urdf/`` next to the
   ``robot_dynamics/`` package directory, beside ``setup.py``), so that an editable install
   always uses the files being edited;
2. a ROS 2 install: ``share/robot_dynamics/urdf`` of the ament index (when ``ament_index_python``
   is importable and knows the package);
3. a pip install: ``<sys.prefix>/share/robot_dynamics/urdf`` (``setup.py``'s ``data_files``).

>>> sorted(bundled_robot_names())
['arm7_gripper', 'cartesian_3dof', 'five_bar', 'five_bar_decoupled', 'planar_2r']
>>> bundled_urdf("planar_2r").name
'planar_2r.urdf'
"""

import sys
from pathlib import Path

PACKAGE = "robot_dynamics"
DEMO_ROBOT = "arm7_gripper"


def share_dirs():
    """Where the package's data folders (urdf/, config/, launch/) may be, in order of preference:
    the source checkout, the ROS 2 install (ament index), a pip install (``sys.prefix/share``)."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "setup.py").is_file():
        yield checkout
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        pass
    else:
        try:
            yield Path(get_package_share_directory(PACKAGE))
        except (PackageNotFoundError, LookupError, ValueError, OSError):  # OSError: no AMENT_PREFIX_PATH
            pass
    yield Path(sys.prefix) / "share" / PACKAGE


def share_file(*parts):
    """Path of a data file of the package, e.g. ``share_file("config", "dynamics.yaml")``.

    >>> share_file("config", "dynamics.yaml").name
    'dynamics.yaml'
    """
    tried = []
    for directory in share_dirs():
        path = directory.joinpath(*parts)
        if path.is_file():
            return path
        tried.append(str(path))
    raise FileNotFoundError(f"{'/'.join(parts)} not found (looked in {', '.join(tried)})")


def _urdf_dirs():
    seen = []
    for share in share_dirs():
        directory = share / "urdf"
        if directory.is_dir() and directory not in seen:
            seen.append(directory)
    return seen


def bundled_robot_names():
    """Names of the bundled robots (``urdf/<name>.urdf``), sorted; empty if none are found."""
    return sorted({path.name[: -len(".urdf")] for directory in _urdf_dirs() for path in directory.glob("*.urdf")})


def bundled_urdf(name):
    """Path of the bundled robot ``name`` (``"arm7_gripper"`` or ``"arm7_gripper.urdf"``).

    Raises ``LookupError`` naming the known robots when there is no such robot.
    """
    name = str(name)
    stem = name[: -len(".urdf")] if name.endswith(".urdf") else name
    if not stem or "/" in stem or "\\" in stem:
        raise LookupError(f"{name!r} is not a bundled robot name")
    for directory in _urdf_dirs():
        path = directory / f"{stem}.urdf"
        if path.is_file():
            return path
    known = ", ".join(bundled_robot_names()) or "none found"
    raise LookupError(f"unknown robot {name!r} (bundled robots: {known})")


def urdf_file(argument):
    """The URDF file a user means by ``argument``: an existing file, else a bundled robot name.

    For command lines and launch arguments (``urdf:=arm7_gripper`` or ``urdf:=/path/robot.urdf``).
    Raises ``LookupError`` saying what was tried.

    >>> urdf_file("planar_2r").name
    'planar_2r.urdf'
    """
    argument = str(argument)
    path = Path(argument).expanduser()
    if path.is_file():
        return path
    if path.exists():
        raise LookupError(f"{argument!r} is not a file")
    if not any(separator in argument for separator in "/\\"):
        try:
            return bundled_urdf(argument)
        except LookupError:
            pass
    known = ", ".join(bundled_robot_names()) or "none found"
    raise LookupError(f"no URDF file {argument!r} and no bundled robot of that name (bundled robots: {known})")
