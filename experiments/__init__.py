"""Study drivers built on the library: scripts run from a checkout, never installed.

Each is run as ``python -m experiments.NAME`` from the repository root; its pre-registration lives
under ``benchmarks/preregistered/`` and its committed results under ``benchmarks/results/``.
`tooluse_gym`, `tooluse_agents` and `tooluse_tui` never import this folder.
"""
