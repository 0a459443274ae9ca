"""`python -m perf`: the estimator on the command line."""

import sys

from perf.cli import main

sys.exit(main())
