import sys

from experiments.efficiency_multi_turn.study import main

sys.exit(main())
