"""``autoprof.compare(fn_a, fn_b, *args, **kwargs)``: the A/B a developer would write by hand.

Both callables are timed without the profiler by the what-if harness
(``measure_interleaved``): warm-up calls first, then ``blocks`` alternating blocks
(A B A B ...), each block the mean of enough back-to-back calls to last a few milliseconds,
CUDA events on a GPU and ``perf_counter`` on the CPU. Block k of A and block k of B were taken
side by side, so they form a pair: the result is the ratio ``time_b / time_a`` (the geometric
mean of the pairs' ratios) with a 95% interval from the paired log-ratios (Student's t), and
the minimum detectable change: the interval's half-width stated as a ratio both ways.

The answer has three values: ``"faster"`` (B's whole interval below 1), ``"slower"`` (above 1)
and ``"cannot tell"`` (the interval holds 1), which says what would settle it. The same
function under two settings is compared by passing two closures, or ``setup_a``/``setup_b``:
context-manager factories entered around each block of their side.
The user's functions' exceptions propagate as their own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from autoprof.record.whatif.harness import DEFAULT_WARMUP, measure_interleaved
from autoprof.student_t import t975

Answer = Literal["faster", "slower", "cannot tell"]
DEFAULT_BLOCKS = 20
@dataclass(frozen=True)
class Interval:
    """A ratio ``b / a`` with its 95% interval and the smallest change these pairs resolve."""

    ratio: float
    low: float
    high: float
    min_detectable: float  # a ratio >= 1: changes inside [1/this, this] cannot be told
    pairs: int


def paired_ratio(a: list[float], b: list[float]) -> Interval:
    """The paired log-ratio t interval of ``b / a`` over aligned samples."""
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True) if x > 0 and y > 0]
    n = len(logs)
    if n == 0:
        return Interval(math.nan, 0.0, math.inf, math.inf, 0)
    mean = sum(logs) / n
    if n < 2:
        return Interval(math.exp(mean), 0.0, math.inf, math.inf, n)
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half),
                    math.exp(half), n)


def answer(iv: Interval) -> Answer:
    """faster / slower only when the whole interval is on one side of 1."""
    if iv.high < 1.0:
        return "faster"
    if iv.low > 1.0:
        return "slower"
    return "cannot tell"


def blocks_to_resolve(iv: Interval, change: float) -> int | None:
    """About how many pairs would give an interval half-width of ``change`` (a ratio > 1),
    from the spread these pairs showed; None when it cannot be estimated."""
    if iv.pairs < 2 or not math.isfinite(iv.min_detectable) or change <= 1.0:
        return None
    sd_term = math.log(iv.min_detectable) * math.sqrt(iv.pairs) / t975(iv.pairs - 1)
    need = (1.96 * sd_term / math.log(change)) ** 2
    return max(iv.pairs + 1, math.ceil(need))


@dataclass(frozen=True)
class ABResult:
    """``ratio`` is B's time over A's (below 1: B is faster)."""

    a_name: str
    b_name: str
    a_median_us: float
    b_median_us: float
    interval: Interval
    answer: Answer
    settle: str | None  # what would settle a "cannot tell"
    clock: str
    calls_per_block: tuple[int, int]

    @property
    def ratio(self) -> float:
        return self.interval.ratio

    def render(self) -> str:
        iv = self.interval
        head = (f"{self.b_name} vs {self.a_name}: {self.answer}, {iv.ratio:.3f}x the time "
                f"(95% CI {iv.low:.3f}x .. {iv.high:.3f}x, {iv.pairs} paired blocks, "
                f"{self.clock})")
        lines = [head,
                 f"  {self.a_name}: {_us(self.a_median_us)} a call, "
                 f"{self.b_name}: {_us(self.b_median_us)} a call (medians)",
                 f"  changes between {1 / iv.min_detectable:.3f}x and {iv.min_detectable:.3f}x "
                 "cannot be told from noise with these blocks"]
        if self.settle:
            lines.append(f"  to settle it: {self.settle}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


def _us(value: float) -> str:
    return f"{value / 1000:.3f} ms" if value >= 1000 else f"{value:.1f} us"


def settle_text(iv: Interval) -> str | None:
    """What would turn a "cannot tell" into an answer, from the spread measured."""
    if answer(iv) != "cannot tell":
        return None
    gap = max(iv.ratio, 1 / iv.ratio) if iv.ratio > 0 else math.inf
    need = blocks_to_resolve(iv, gap) if gap > 1.01 else None
    spread = f"the pairs' spread gives +-{(iv.min_detectable - 1) * 100:.1f}%"
    if need is not None and need <= 1000:
        return f"{spread}; about {need} blocks would resolve the {gap:.3f}x seen (blocks={need})"
    return (f"{spread}; the difference seen ({iv.ratio:.3f}x) is below what this machine "
            "resolves: run on a quieter machine, or treat the two as the same")


def _in(setup: Callable[[], Any] | None, fn: Callable[[], Any]) -> Callable[[], Any]:
    if setup is None:
        return fn

    def call() -> Any:
        with setup():
            return fn()
    return call


def compare(fn_a: Callable[..., Any], fn_b: Callable[..., Any] | None = None, *args: Any,
            blocks: int = DEFAULT_BLOCKS, warmup: int = DEFAULT_WARMUP,
            device: str | None = None, setup_a: Callable[[], Any] | None = None,
            setup_b: Callable[[], Any] | None = None, **kwargs: Any) -> ABResult:
    """Time ``fn_a(*args, **kwargs)`` against ``fn_b(*args, **kwargs)`` interleaved, without
    the profiler. ``fn_b`` None compares ``fn_a`` with itself under ``setup_a``/``setup_b``
    (context-manager factories, e.g. ``lambda: torch.autocast("cuda")``). ``device``:
    "cuda" syncs the GPU around every block (default: "cuda" when a tensor argument is on one)."""
    if blocks < 2:
        raise ValueError(f"blocks must be >= 2, got {blocks}")
    b_fn = fn_a if fn_b is None else fn_b
    dev = device or _device_of(args, kwargs)
    run_a = _in(setup_a, lambda: fn_a(*args, **kwargs))
    run_b = _in(setup_b, lambda: b_fn(*args, **kwargs))
    ta, tb = measure_interleaved([run_a, run_b], dev, samples=blocks, warmup=warmup)
    iv = paired_ratio(list(ta.samples_us), list(tb.samples_us))
    names = _names(fn_a, fn_b)
    return ABResult(names[0], names[1], ta.median_us, tb.median_us, iv, answer(iv),
                    settle_text(iv), ta.clock, (ta.calls_per_sample, tb.calls_per_sample))


def _names(fn_a: Callable[..., Any], fn_b: Callable[..., Any] | None) -> tuple[str, str]:
    if fn_b is None:
        return "A", "B"
    a = getattr(fn_a, "__name__", "A")
    b = getattr(fn_b, "__name__", "B")
    return (a, b) if a != b and "<lambda>" not in (a, b) else ("A", "B")


def _device_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    for value in (*args, *kwargs.values()):
        if getattr(getattr(value, "device", None), "type", None) == "cuda":
            return "cuda"
    return "cpu"
