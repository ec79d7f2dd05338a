"""Study A: our GRPO trainer against TRL's GRPOTrainer (pre-registered; `study` holds its rules)."""
