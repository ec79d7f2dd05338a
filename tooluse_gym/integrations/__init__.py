"""Adapters that let other training libraries drive the environments, scored exactly as the env scores.

- `tooluse_gym.integrations.sequence`: the loop the token-level adapters share. It plays episodes
  multi-turn and keeps each one as a single token sequence: the policy's tokens and the env's text
  (tool results, next user turns), with a mask telling them apart.
- `tooluse_gym.integrations.trl`: a `rollout_func` for TRL's `GRPOTrainer`
  (``pip install "tooluse-gym[trl]"``).
- `tooluse_gym.integrations.chat_episode`: the glue the chat-message adapters share.
- `tooluse_gym.integrations.verifiers`: verifiers environments.

Importing this package imports nothing. An adapter imports its library when its module is
imported (verifiers) or when it is first used (TRL, which also imports torch then).
"""
