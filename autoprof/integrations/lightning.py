"""``AutoprofCallback``: profile a Lightning ``Trainer``'s training steps, one line added.

    from autoprof.integrations.lightning import AutoprofCallback
    trainer = L.Trainer(max_steps=20, callbacks=[AutoprofCallback()])

Each training batch (``on_train_batch_start`` to ``on_train_batch_end``) is one step of
``autoprof.region(name)``: the first ``warmup_calls`` batches run untraced, then the schedule
records, and the run folder is the one ``@autoprof`` writes (``<out_dir>/<name>/<run_id>/``),
one per job, every rank's trace in it under DDP. Inside a recorded step: ``forward`` (each
outermost call of the LightningModule or one of its direct sub-modules, through their module
hooks), ``backward`` (``on_before_backward`` to ``on_after_backward``) and ``optimizer``
(``on_before_optimizer_step`` to the end of ``optimizer.step``, through torch's step post-hook).
With automatic optimization Lightning runs ``training_step`` and the backward inside
``optimizer.step(closure)``, under torch's ``Optimizer.step`` label: each phase starts and ends
inside it, so the labels nest. The batch is fetched before ``on_train_batch_start``, so data
loading is not inside the step.

At the end of training the run is flushed (ended ``partial`` when training stopped before the
schedule; ``failed`` with the error when training raised) and ``callback.run_dir`` names its
folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoprof.integrations._steps import (
    ForwardLabels,
    StepRecorder,
    guard_hooks,
    missing_extra,
)

try:
    from lightning.pytorch import Callback
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("lightning", "lightning") from exc

__all__ = ["AutoprofCallback"]


@guard_hooks
class AutoprofCallback(Callback):  # type: ignore[misc,unused-ignore]
    """A Lightning ``Callback`` that profiles training steps with autoprof.

    ``name`` (default ``"lightning_train_step"``: the trainer in the name, so runs of the two
    callbacks never share a folder) names the run folder; every other keyword is an
    ``@autoprof`` option (``warmup_calls``, ``schedule``, ``out_dir``, ``record_shapes``,
    ``profile_memory``, ``with_stack``, ...). No hook ever raises autoprof's own error into
    training: a failure is one warning, and the callback stops profiling.
    """

    def __init__(self, name: str = "lightning_train_step", **options: Any) -> None:
        self.recorder = StepRecorder(name, options)
        self._forward = ForwardLabels(self.recorder)
        self._optimizers: dict[int, Any] = {}  # id(optimizer) -> its step post-hook handle

    @property
    def name(self) -> str:
        """The run's name: ``name``, or ``name-2``... when another callback took it first."""
        return self.recorder.name

    @property
    def run_dir(self) -> Path | None:
        """The run folder of this process (None until the warm-up steps are over)."""
        return self.recorder.run_dir()

    @property
    def state_key(self) -> str:
        return f"AutoprofCallback[{self.recorder.name}]"

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._forward.attach([pl_module, *pl_module.children()])

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any,
                             batch_idx: int) -> None:
        self._forward.depth = 0  # a forward that raised leaves no count behind
        self.recorder.begin_step()

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        self.recorder.phase("backward")

    def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
        self.recorder.phase(None)

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        if id(optimizer) not in self._optimizers and hasattr(optimizer, "register_step_post_hook"):
            self._optimizers[id(optimizer)] = optimizer.register_step_post_hook(self._stepped)
        self.recorder.phase("optimizer")

    def _stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.recorder.end_phase("optimizer")

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self.recorder.end_step()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._detach()
        self.recorder.finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._detach()
        self.recorder.finish(exception if self.recorder.in_step else None)

    def _detach(self) -> None:
        self._forward.detach()
        for handle in self._optimizers.values():
            handle.remove()
        self._optimizers = {}
