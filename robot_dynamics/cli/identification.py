"""``robot-dynamics excite URDF`` (an excitation trajectory), ``identify RECORDING --urdf URDF``
(a calibrated URDF, friction and payload): thin adapters over :mod:`robot_dynamics.identification.commands`;
``estimate-payload RECORDING --urdf URDF --link LINK``: the dynamics node's ``~/estimate_payload`` over a
recording (:mod:`robot_dynamics.identification.payload`)."""

import sys

from .arguments import CLIError, add_urdf_argument, load_model, warn


def register(commands):
    from ..identification.commands import add_excite_arguments, add_identify_arguments

    excite = commands.add_parser("excite", help="excitation trajectory for identification (Fourier series, CSV)")
    add_urdf_argument(excite)
    add_excite_arguments(excite)
    excite.set_defaults(run=run)
    identify = commands.add_parser("identify", help="identified URDF, friction and payload from "
                                   "joint_states recordings (rosbag2 or CSV)")
    add_identify_arguments(identify)
    identify.set_defaults(run=run)
    payload = commands.add_parser("estimate-payload", help="the payload on a link from a recording of held poses or "
                                  "motion (rosbag2 or CSV): the dynamics node's ~/estimate_payload report")
    add_estimate_payload_arguments(payload)
    payload.set_defaults(run=run_estimate_payload)


def add_estimate_payload_arguments(parser):
    from ..identification.reading import add_recording_arguments
    from ..identification.samples import DEFAULT_CUTOFF

    add_recording_arguments(parser, several=False)
    parser.add_argument("--link", required=True, help="the link that carries the payload (payload.link)")
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, metavar="HZ",
                        help=f"low-pass cut-off on positions and torques (default {DEFAULT_CUTOFF:g})")
    parser.add_argument("--node", default="robot_dynamics", help="dynamics node name in the printed parameters "
                        "(default robot_dynamics)")


def run_estimate_payload(args):
    """The report of :func:`~robot_dynamics.identification.payload.estimate_payload`, then the ``payload.*``
    values to paste; a recording that cannot determine the mass is refused with the reason (status 2)."""
    from ..identification import commands
    from ..identification.payload import estimate_payload
    from ..identification.reading import (check_recording_arguments, drive_settings, one_line_warnings,
                                          read_recordings, recording_model)

    model, path, load_warnings = load_model(args.urdf, args.command)
    warn(load_warnings)
    try:
        with one_line_warnings(sys.stderr):
            check_recording_arguments(args)
            if not (args.cutoff > 0 and args.cutoff < float("inf")):
                raise commands.IdentificationError(f"--cutoff {args.cutoff:g}: give a positive frequency, Hz")
            model, locks = recording_model(args, model, path)
            recording = read_recordings([args.recording], args, locks)[0]
            result = estimate_payload(recording, model, args.link, args.cutoff, drive_settings(args, model))
    except commands.ERRORS as error:
        raise CLIError(f"payload not estimated: {error}", status=2) from None
    out = sys.stdout
    out.write("\n".join(result.report_lines()) + "\n")
    out.write("to apply it, set the dynamics node's payload.*:\n" + "\n".join(result.set_commands(args.node)) + "\n")
    out.write("or in a params file:\n" + result.parameters_yaml(args.node))
    return 0


def run(args):
    from ..identification import commands

    model, path, load_warnings = load_model(args.urdf, args.command)
    warn(load_warnings)
    try:
        if args.command == "excite":
            return commands.run_excite(args, model, sys.stdout, sys.stderr)
        return commands.run_identify(args, model, path, sys.stdout, sys.stderr)
    except commands.ERRORS as error:  # bad input: a recording, an option's value, an output path
        raise CLIError(str(error), status=2) from None
