"""GRPO for tool calling, with the paper's two speed-ups.

Online pre-rollout filtering (`filtering`) skips prompts whose groups were all-correct in
recent epochs before any generation; max-variance sub-sampling (`subsample`) generates n
rollouts per prompt and updates on the m with the largest reward variance. The trainer
(`trainer.GRPOTrainer`) plays rollouts through the shared rollout loop and updates an HF
model in torch; `tooluse train CONFIG.yaml` runs it (`cli`).

Importing this package does not import torch.
"""
