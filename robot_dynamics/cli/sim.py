"""``robot-dynamics sim``: the simulator, the dynamics node and the trajectory publisher as plain
processes (the graph of ``launch/simulation.launch.py``, without ``ros2 launch``), until Ctrl-C."""

from .arguments import CLIError, load_model


def register(commands):
    from ..tools.sim import add_arguments

    sim = commands.add_parser(
        "sim", help="run the simulation graph (simulator + dynamics node + trajectory publisher, ROS 2) until Ctrl-C",
        description="Start the graph of launch/simulation.launch.py as plain processes and keep it running until "
                    "Ctrl-C or SIGTERM: the simulator (holding the arm at its start pose until its first command), the "
                    "dynamics node and the trajectory publisher, started together; the trajectory starts once the "
                    "dynamics node answers. Prints the "
                    "domain, namespace, nodes, topics, clock and logs. Runs on your ROS_DOMAIN_ID.")
    add_arguments(sim)
    sim.set_defaults(run=run_sim)


def run_sim(args):
    from ..tools.processes import interrupt_on_sigterm
    from ..tools.sim import SimError, check_arguments, run_sim as run

    interrupt_on_sigterm()  # it starts the nodes: a SIGTERM stops them as a Ctrl-C does
    try:
        check_arguments(args)
        return run(args, lambda: load_model(args.robot, "demo"))
    except SimError as error:
        raise CLIError(str(error), status=error.status) from None
