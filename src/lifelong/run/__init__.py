"""Running learners over streams: environment, checkpoints, executors and the results store."""
