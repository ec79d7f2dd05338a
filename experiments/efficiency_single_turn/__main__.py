import sys

from experiments.efficiency_single_turn.study import main

sys.exit(main())
