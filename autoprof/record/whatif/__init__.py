"""What-if: the fixes autoprof suggests, measured on the user's own function.

``autoprof.check(fn, *args, try_fixes="auto" | "all" | ("compile", ...))`` profiles ``fn``, then
runs the original and each fix on copies of the same arguments, timed the same way
(:mod:`autoprof.record.whatif.harness`), compares their outputs
(:mod:`autoprof.record.whatif.compare`),
profiles the best fix, and writes ``whatif.json`` into the run folder. Fixes live one per
module in :mod:`autoprof.record.whatif.fixes`.
"""

from autoprof.record.whatif.auto import resolve as resolve_fixes
from autoprof.record.whatif.fixes import FIXES, Applied, Fix, NotApplicable
from autoprof.record.whatif.harness import Timing, measure
from autoprof.record.whatif.result import FixResult
from autoprof.record.whatif.runner import Measured, measure_fixes, validate, what_if
from autoprof.record.whatif.trial import try_fixes

__all__ = [
    "FIXES",
    "Applied",
    "Fix",
    "FixResult",
    "Measured",
    "NotApplicable",
    "Timing",
    "measure",
    "measure_fixes",
    "resolve_fixes",
    "try_fixes",
    "validate",
    "what_if",
]
