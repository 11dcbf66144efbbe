"""Child processes that end with the program that started them, whatever ends it (SIGKILL, a crash,
the OOM killer included): the nodes the tools start, the compile's workers, the benchmarks' children.

On Linux a child asks for SIGTERM when its parent ends (``prctl(PR_SET_PDEATHSIG)``); elsewhere
nothing is asked. Nothing here imports another module of the package.
"""

import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that forked it ends


def _prctl():
    """libc's ``prctl`` (None where the OS has none)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # (here: the demo's and the CLI's imports stay light)

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
    prctl.restype = ctypes.c_int
    return prctl


def die_with_parent():
    """The ``preexec_fn`` of every child process the package starts with ``subprocess`` (None where
    the OS cannot do it).

    The child asks, between fork and exec, for SIGTERM when the thread that started it ends (kept
    across exec): the child then stops as on any SIGTERM (a node: cleanly, status 0). A child whose
    parent ended between the fork and that call ends at once. Start children from a thread that
    outlives them (the main thread): the signal comes when that *thread* ends.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def in_child():  # (after fork: nothing that takes a lock another thread of the parent may hold)
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(128 + signal.SIGTERM)

    return in_child


def end_with(parent):
    """In a running child of process ``parent`` (its pid): the same SIGTERM as :func:`die_with_parent`,
    asked for by the child itself (a process started by a launcher or a process pool that does not ask
    for it); at once if ``parent`` has already ended."""
    prctl = _prctl()
    if prctl is None:
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)
