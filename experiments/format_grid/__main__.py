import sys

from experiments.format_grid.study import main

sys.exit(main())
