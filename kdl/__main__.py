"""``python -m kdl``: the same as the ``kdl`` console script."""

import sys

from kdl.cli import main

sys.exit(main())
