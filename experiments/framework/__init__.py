"""The study framework: one pre-registration loader, one runner, one result envelope and report."""
