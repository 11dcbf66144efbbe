"""Print a ROS 2 params file that gives the nodes a URDF as their ``robot_description``.

    python -m robot_dynamics.tools.params my_robot.urdf > my_robot.yaml

The argument is a URDF file or a bundled robot's name. The URDF is written as one JSON-quoted
string (valid YAML), exactly as it is in the file, whatever its size or content.
"""

import json
import sys

from ..robots import urdf_file


def params_text(parameters):
    """A params file setting the flat ``{name: value}`` parameters of every node (``/**``).

    Values are written as JSON, which is YAML: strings of any content stay exact.

    >>> print(params_text({"robot_description": '<robot name="r"/>', "kp": [100.0]}))
    /**:
      ros__parameters:
        robot_description: "<robot name=\\"r\\"/>"
        kp: [100.0]
    """
    return "\n".join(["/**:", "  ros__parameters:"] + [f"    {name}: {json.dumps(value)}" for name, value in parameters.items()])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        print(params_text({"robot_description": urdf_file(argv[0]).read_text()}))
    except (LookupError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
