"""``python -m tui PATH``: the same as ``tooluse tui PATH``."""

import sys

from tooluse_tui.app import main

sys.exit(main())
