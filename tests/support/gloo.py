"""A real two-process gloo job on the CPU, rank 1 slow on purpose, recorded once per test
session with hand-written torch.profiler and shared by the tests that read it."""

from __future__ import annotations

import atexit
import functools
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from support.ports import free_port

DELAY_S = 0.08  # rank 1 sleeps this long before each all-reduce

WORKER = textwrap.dedent(f'''
    import os, sys, time
    import torch, torch.distributed as dist
    torch.set_num_threads(1)
    rank, out, port = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    x = torch.randn(64, 64)
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=3)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=schedule) as prof:
        for _ in range(5):
            y = x @ x
            if rank == 1:
                time.sleep({DELAY_S})  # the straggler
            dist.all_reduce(y)
            prof.step()
    prof.export_chrome_trace(os.path.join(out, f"rank{{rank}}.json"))
    dist.barrier()  # neither rank tears gloo down while the other still talks to it
    dist.destroy_process_group()
''')


@functools.cache
def gloo_straggler_job() -> Path:
    """The folder holding `rank0.json` and `rank1.json` of the job (recorded on first use)."""
    root = Path(tempfile.mkdtemp(prefix="autoprof-gloo-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    script = root / "worker.py"
    script.write_text(WORKER)
    out = root / "job"
    out.mkdir()
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(out), port],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for r in (0, 1)]
    for p in procs:
        output, _ = p.communicate(timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"gloo worker failed ({p.returncode}): "
                               + output.decode(errors="replace")[-2000:])
    return out
