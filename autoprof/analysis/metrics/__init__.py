"""Metrics stage: the events table -> numbers (pure functions, DataFrame in, numbers out)."""
