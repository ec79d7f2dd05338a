import sys

from experiments.trainer_vs_trl.study import main

sys.exit(main())
