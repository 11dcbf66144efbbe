"""``robot-dynamics robots``: the bundled robots and their files."""

import sys


def register(commands):
    commands.add_parser("robots", help="list the bundled robots").set_defaults(run=run)


def run(args):
    from ..description.robots import bundled_robot_names, bundled_urdf

    for name in bundled_robot_names():
        sys.stdout.write(f"{name:<16} {bundled_urdf(name)}\n")
    return 0
