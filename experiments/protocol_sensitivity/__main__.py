import sys

from experiments.protocol_sensitivity.study import main

sys.exit(main())
