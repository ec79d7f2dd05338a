"""Pre-registered studies built on the library: scripts run from a checkout, never installed.

``framework/`` is the one study framework: the pre-registration format and loader (`study`), the
runner (`run`: resume, commit each result, a pinned commit; `arms`: the time-to-accuracy studies'
GRPO arms), the result envelope and report (`report`), and provenance. Each study is a folder,
run as ``python -m experiments.STUDY`` from the repository root, whose ``study.py`` holds its arms
or cells and decision rules; its pre-registration lives under ``benchmarks/preregistered/`` and its
committed results under ``benchmarks/results/``. ``tools/`` holds standalone scripts, ``history/``
superseded harnesses kept as the record. The statistics are `tooluse_agents.eval.stats`.
`tooluse_gym`, `tooluse_agents` and `tooluse_tui` never import this folder.
"""
