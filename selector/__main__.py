"""`python -m selector`: the advisor on the command line."""

import sys

from selector.cli import main

sys.exit(main())
