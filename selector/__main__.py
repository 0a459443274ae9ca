"""`python -m selector`: the advisor on the command line."""

from commands import run_command
from selector.cli import main

run_command(main)
