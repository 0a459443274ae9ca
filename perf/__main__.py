"""`python -m perf`: the estimator on the command line."""

from commands import run_command
from perf.cli import main

run_command(main)
