"""``python -m offsetlake_dev demo | local up|down|status``."""

import sys

from offsetlake_dev.cli import main

sys.exit(main())
