"""Vanilla GRPO vs pre-rollout filtering + max-variance sub-sampling (`tooluse_agents.experiments.grpo_efficiency`).

python benchmarks/grpo_efficiency.py --out runs/grpo-efficiency --plot
"""

import sys

from tooluse_agents.experiments.grpo_efficiency import main

if __name__ == "__main__":
    sys.exit(main())
