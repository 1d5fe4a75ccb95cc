"""The validation lab: autoprof's predictions against fixes applied by hand and timed
without a profiler, on recorded GPU runs (docs/validation.md).

    python -m benchmarks.validation [--sets NAME ...] [--out DIR]

regenerates the results tables under `benchmarks/validation/results/`; `bash
scripts/validate.sh` does that and runs the lab's own checks (`checks/`). Neither is part of
the unit tests (`bash scripts/test.sh`), which hold bounds, not these tables.
"""
