"""A node of this process spun in a background thread, with a context of its own: what the demo's
recorder, ``robot-dynamics sim``'s watcher and the ROS tests listen to the graph with.
rclpy is imported when one is made."""

from __future__ import annotations

import threading


class SpunNode:
    """``node`` (named ``name`` in ``namespace``) in its own ``context``, spun by a SingleThreadedExecutor
    in a daemon thread until :meth:`close`, which shuts the context down, joins the thread and destroys
    the node (and any node added with :meth:`add_node`). An exception that ends the thread before
    that is printed and kept in :attr:`error`, never swallowed: a listener that stopped hearing says why."""

    def __init__(self, name: str, namespace: str = ""):
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, namespace=namespace or "", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._nodes = [self.node]
        self.error = None  # what ended the spin thread before close() (a callback's or rclpy's exception)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def add_node(self, name: str, namespace: str = "", **kwargs):
        """Another node in this context, spun by the same thread (e.g. a fake robot_state_publisher)."""
        import rclpy

        node = rclpy.create_node(name, namespace=namespace, context=self.context, **kwargs)
        self.executor.add_node(node)
        self._nodes.append(node)
        return node

    def _spin(self):
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except Exception as error:  # noqa: BLE001 - expected only when close() shuts the context down mid-spin
            if self.context.ok():  # anything else ends the thread, said (the thread's traceback) and kept
                self.error = error
                raise

    def close(self):
        self.context.try_shutdown()
        self._thread.join(5.0)
        for node in reversed(self._nodes):
            node.destroy_node()
