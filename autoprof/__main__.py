"""`python -m autoprof ...` is the `autoprof` command."""

import sys

from autoprof.cli import main

sys.exit(main())
