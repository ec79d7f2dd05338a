"""Adapters that let other training libraries drive the environments, scored exactly as the env scores.

They drive envs with models, so they live on the agents' side and run on the one rollout loop
(`tooluse_agents.rollout.loop`) or read only what ``reset`` and ``step`` return:

- `tooluse_agents.integrations.token_sequences`: an agent wrapper on the loop that keeps each episode
  as one token sequence (the policy's tokens and the env's text, with a mask telling them apart).
- `tooluse_agents.integrations.trl`: a `rollout_func` for TRL's `GRPOTrainer`
  (``pip install "tooluse-gym[trl]"``).
- `tooluse_agents.integrations.chat_episode`: the glue the chat-message adapters share.
- `tooluse_agents.integrations.verifiers`: verifiers environments.
- `tooluse_gym.server.server` and `tooluse_gym.server.client`: the envs as
  an OpenEnv server (`tooluse serve-env`) and its typed client (``pip install "tooluse-gym[openenv]"``, then
  openenv-core with ``--no-deps``); `tooluse_gym.server.models` holds the wire types.

Importing this package imports nothing. An adapter imports its library when its module is
imported (verifiers, OpenEnv) or when it is first used (TRL, which also imports torch then).
"""
