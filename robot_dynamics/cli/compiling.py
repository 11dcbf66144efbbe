"""``robot-dynamics compile [PART ...]``: compile ahead the kernels a part needs (and remove those of
older sources), saying how long it took; what ``./dev``, the demo and the launch files run before they
start nodes."""

import sys
import time


def register(commands):
    from ..compiling import ALL, PARTS

    sub = commands.add_parser("compile", help="compile the dynamics kernels ahead (into numba's cache)")
    sub.add_argument("parts", nargs="*", metavar="PART",
                     help=f"{', '.join(PARTS)} or {ALL} (default {ALL}): " + "; ".join(
                         f"{part}: {what}" for part, what in PARTS.items()))
    sub.set_defaults(run=run, usage_error=sub.error)


def run(args):
    from ..compiling import compile_parts, cold_time, parts_of, remove_stale_directories
    from ..jit import cache_directory

    try:
        parts = parts_of(args.parts)
    except ValueError as error:
        args.usage_error(str(error))  # exit status 2
    for stale in remove_stale_directories():
        print(f"removed {stale} (kernels of older sources)", flush=True)
    where = cache_directory()
    print(f"compiling the kernels of {', '.join(parts)} into {where or 'no cache (none is writable)'} "
          f"(from an empty cache: {cold_time(parts)}) ...", flush=True)
    started = time.monotonic()
    compiled = compile_parts(parts)
    took = time.monotonic() - started
    if compiled:
        print(f"compiled {compiled} kernel signatures in {took:.1f} s", flush=True)
    else:
        print(f"nothing to compile: loaded from the cache in {took:.1f} s", flush=True)
    if where is None:
        sys.stderr.write("warning: no writable numba cache: every process compiles its kernels again\n")
    return 0
