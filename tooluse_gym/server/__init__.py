"""The environments as an OpenEnv server: wire models, the server, its client and the `tooluse serve-env` app."""
