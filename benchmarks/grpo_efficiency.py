"""Vanilla GRPO vs GRPO + pre-rollout filtering + max-variance sub-sampling (`agents.experiments.grpo_efficiency`).

python benchmarks/grpo_efficiency.py --out runs/grpo-efficiency --plot
"""

import sys

from agents.experiments.grpo_efficiency import main

if __name__ == "__main__":
    sys.exit(main())
