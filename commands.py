"""How every `python -m` command ends: its exit code, and quietly when its reader closes the pipe (`| head`)."""

import os
import sys
from collections.abc import Callable
from typing import NoReturn

BROKEN_PIPE_EXIT = 141
"""What a shell reports for a command its reader stopped reading (128 + SIGPIPE), as `yes | head` does."""


def run_command(main: Callable[[], int | None]) -> NoReturn:
    """Run a command's main and exit with its code; a closed stdout ends it without a traceback."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader is gone: point stdout at nothing, so the interpreter's own flush at exit stays quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(BROKEN_PIPE_EXIT)
    sys.exit(code or 0)
