"""Contact messages shared by the simulator and dynamics nodes (geometry_msgs/WrenchStamped)."""

from __future__ import annotations

from geometry_msgs.msg import Vector3, Wrench, WrenchStamped
from std_msgs.msg import Header

__all__ = ["wrench_stamped"]


def wrench_stamped(frame_id: str, wrench, stamp) -> WrenchStamped:
    """A WrenchStamped of ``wrench = [moment; force]`` (the library's order) for ``frame_id`` at ``stamp``."""
    w = [float(x) for x in wrench]
    return WrenchStamped(header=Header(stamp=stamp, frame_id=frame_id),
                         wrench=Wrench(force=Vector3(x=w[3], y=w[4], z=w[5]), torque=Vector3(x=w[0], y=w[1], z=w[2])))
