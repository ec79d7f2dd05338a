"""One BFCL export pipeline: a run's episodes as BFCL result files, a format per env family."""
