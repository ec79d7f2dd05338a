"""Speed measured as ratios against a reference in the same run; run each as ``python -m benchmarks.NAME``."""
