"""`python -m probes.fakeserver`: the earlier name of `python -m fakeserver` (the test server), kept working."""

from fakeserver.cli import main

if __name__ == "__main__":
    main(prog="python -m probes.fakeserver")
