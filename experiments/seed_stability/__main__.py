import sys

from experiments.seed_stability.study import main

sys.exit(main())
