"""`python -m tco <command>`: the cost model's commands, each in its own module."""

import sys
from collections.abc import Callable, Sequence

from commands import run_command
from tco import api_prices_cli, prices_cli

COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {"prices": prices_cli.main, "api-prices": api_prices_cli.main}


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a command's own `main`; 2 for an unknown command."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        print(f"usage: python -m tco {{{','.join(COMMANDS)}}} ...", file=sys.stderr)
        return 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    run_command(main)
