"""Load stage: a path (run folder, trace, folder of rank traces) -> the events table."""
