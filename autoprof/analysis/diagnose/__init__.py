"""Diagnose stage: the per-run analysis context and the checks that turn it into findings."""
