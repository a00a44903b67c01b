"""``python -m offsetlake.cli``: the same as the ``offsetlake`` script."""

import sys

from offsetlake.cli.main import main

sys.exit(main())
