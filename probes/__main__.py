"""`python -m probes`: the probe command line."""

from probes.cli import main

main()
