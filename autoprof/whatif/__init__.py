"""What-if: the fixes autoprof suggests, measured on the user's own function.

``autoprof.check(fn, *args, try_fixes="auto" | "all" | ("compile", ...))`` profiles ``fn``, then
runs the original and each fix on copies of the same arguments, timed the same way
(:mod:`autoprof.whatif.harness`), compares their outputs (:mod:`autoprof.whatif.compare`),
profiles the best fix, and writes ``whatif.json`` into the run folder. Fixes live one per
module in :mod:`autoprof.whatif.fixes`.
"""

from autoprof.whatif.auto import resolve as resolve_fixes
from autoprof.whatif.fixes import FIXES, Applied, Fix, NotApplicable
from autoprof.whatif.harness import Timing, measure
from autoprof.whatif.result import FixResult
from autoprof.whatif.runner import Measured, measure_fixes, validate, what_if
from autoprof.whatif.trial import try_fixes

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
