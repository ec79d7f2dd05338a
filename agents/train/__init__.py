"""Training: the policy, batches and the shared-prompt update, supervised warm-start and GRPO."""
