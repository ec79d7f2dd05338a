"""The pre-registered GRPO efficiency study, v2 (`tooluse_agents.experiments.efficiency_v2`).

python benchmarks/grpo_efficiency_v2.py run --seed 0 --commit
python benchmarks/grpo_efficiency_v2.py report
"""

import sys

from tooluse_agents.experiments.efficiency_v2 import main

if __name__ == "__main__":
    sys.exit(main())
