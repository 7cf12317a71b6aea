"""Thread settings for processes that should use one core (actors, evaluators, benchmarks).

Imports nothing heavy: it must run before numpy, JAX, ONNX Runtime or PyTorch are imported.
"""

from __future__ import annotations

import os

# One core per actor, as in the paper (4 CPU actors, one core each). ONNX Runtime actors (the
# default) run one intra-op thread (onnx_runtime.session_options). XLA:CPU has no flag that caps
# its own intra-op thread pool: this one only turns off Eigen's multi-threading, so actors on the
# xla runtime may use more than one thread. (An earlier "intra_op_parallelism_threads=1" token
# here was silently ignored; written as a flag, XLA refuses to start.)
SINGLE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false"
SINGLE_THREAD_ENV = {
    "XLA_FLAGS": SINGLE_THREAD_XLA_FLAGS,
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "JAX_PLATFORMS": "cpu",
}


def set_thread_env(threads: int) -> None:
    """Before jax / torch are imported: one intra-op thread per actor where the runtime has a
    setting for it (ORT, PyTorch, BLAS). XLA:CPU gets only ``--xla_cpu_multi_thread_eigen=false``
    (see :data:`SINGLE_THREAD_XLA_FLAGS`)."""
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " " + SINGLE_THREAD_XLA_FLAGS).strip()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
