"""``robot-dynamics bench [core|node|simulator|scaling|contact|contact_count|ft_sensor|retime|trajectory_filter] [OPTIONS]``: the benchmarks, each a module of
:mod:`robot_dynamics.tools.benchmarks` with ``main(argv)``; the options after the names go to each."""

import importlib

from .arguments import CLIError

BENCHMARKS = ("core", "node", "simulator", "scaling", "contact", "contact_count", "ft_sensor", "retime", "trajectory_filter")


def register(commands):
    bench = commands.add_parser("bench", help="run the benchmarks (core, node, simulator, scaling, contact, contact_count, ft_sensor, retime, trajectory_filter)")
    bench.add_argument("which", nargs="*", metavar="WHICH",
                       help="core, node, simulator, scaling, contact, contact_count, ft_sensor, retime, trajectory_filter or all (default all); any further options "
                            "(e.g. --duration 10) go to each benchmark; robot-dynamics bench WHICH --help lists them")
    bench.set_defaults(run=run)


def split_options(argv):
    """(``bench [WHICH ...]``, the options for the benchmarks) from ``argv`` (``--help`` alone is bench's)."""
    first = next((i for i, token in enumerate(argv) if token.startswith("-")), len(argv))
    if first > 1 or argv[first:first + 1] not in (["-h"], ["--help"]):
        return argv[:first], argv[first:]
    return argv, []


def run(args):
    from ..tools.processes import interrupt_on_sigterm

    interrupt_on_sigterm()  # the node benchmarks start nodes: a SIGTERM stops them as a Ctrl-C does
    unknown = [name for name in args.which if name not in BENCHMARKS + ("all",)]
    if unknown:
        raise CLIError(f"unknown benchmark {unknown[0]!r} (choose from {', '.join(BENCHMARKS)}, all)")
    names = BENCHMARKS if not args.which or "all" in args.which else tuple(dict.fromkeys(args.which))
    return run_benchmarks(names, args.benchmark_options)


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
