"""``python -m orange``."""

import sys

from orange.cli.main import run

sys.exit(run())
