"""``AutoprofCallback``: profile a Hugging Face ``Trainer``'s training steps, one line added.

    from autoprof.integrations.transformers import AutoprofCallback
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[AutoprofCallback()])

Each optimizer step (``on_step_begin`` to ``on_step_end``, every gradient-accumulation
micro-batch included) is one step of ``autoprof.region(name)``: the first ``warmup_calls``
steps run untraced, then the schedule records, and the run folder is the one ``@autoprof``
writes (``<out_dir>/<name>/<run_id>/``), one per job, every rank's trace in it under DDP.
Inside a recorded step: ``forward`` (the model's own forward, through its module hooks),
``backward`` (from the end of the forward to the optimizer: the loss, backward and gradient
clipping; left out when the Trainer wraps the model for several devices, because DDP's own
``DistributedDataParallel.forward`` label encloses the forward and a label opened inside it
cannot outlive it) and ``optimizer`` (``on_pre_optimizer_step`` to ``on_optimizer_step``).
Fetching the batch happens before ``on_step_begin``, so data loading is not inside the step.

At the end of training the run is flushed (ended ``partial`` when training stopped before the
schedule) and ``callback.run_dir`` names its folder.
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
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("transformers", "transformers") from exc

__all__ = ["AutoprofCallback"]


@guard_hooks
class AutoprofCallback(TrainerCallback):  # type: ignore[misc,unused-ignore]
    """A ``TrainerCallback`` that profiles training steps with autoprof.

    ``name`` (default ``"hf_train_step"``: the trainer in the name, so runs of the two
    callbacks never share a folder) names the run folder; every other keyword is an
    ``@autoprof`` option (``warmup_calls``, ``schedule``, ``out_dir``, ``record_shapes``,
    ``profile_memory``, ``with_stack``, ...). No hook ever raises autoprof's own error into
    training: a failure is one warning, and the callback stops profiling.
    """

    def __init__(self, name: str = "hf_train_step", **options: Any) -> None:
        self.recorder = StepRecorder(name, options)
        self._forward = ForwardLabels(self.recorder)

    @property
    def name(self) -> str:
        """The run's name: ``name``, or ``name-2``... when another callback took it first."""
        return self.recorder.name

    @property
    def run_dir(self) -> Path | None:
        """The run folder of this process (None until the warm-up steps are over)."""
        return self.recorder.run_dir()

    # -- the trainer's hooks --------------------------------------------------------------

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        wrapped = getattr(args, "world_size", 1) > 1 or getattr(args, "n_gpu", 1) > 1
        self._forward.after = None if wrapped else "backward"
        model = kwargs.get("model")
        if model is not None:
            self._forward.attach([model])

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._forward.depth = 0  # a forward that raised leaves no count behind
        self.recorder.begin_step()

    def on_substep_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.recorder.phase(None)  # a micro-batch's backward is over

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.recorder.phase("optimizer")

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.recorder.phase(None)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.recorder.end_step()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._forward.detach()
        self.recorder.finish()
