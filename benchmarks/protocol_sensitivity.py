"""Protocol sensitivity, measured (`tooluse_agents.experiments.protocol_sensitivity`).

python benchmarks/protocol_sensitivity.py run
python benchmarks/protocol_sensitivity.py report
"""

import sys

from tooluse_agents.experiments.protocol_sensitivity import main

if __name__ == "__main__":
    sys.exit(main())
