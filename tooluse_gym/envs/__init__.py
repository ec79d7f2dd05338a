"""Environment classes (imported by `gymnasium.make` through string entry points)."""
