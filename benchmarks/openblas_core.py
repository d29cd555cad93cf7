"""Makes the PyTorch references run OpenBLAS's kernels for this CPU. Import it before torch.

Debian's PyTorch runs its matrix products on OpenBLAS, which picks its kernels by the CPU's model
number. On a CPU newer than it knows it falls back to Prescott's SSE3 kernels: OpenBLAS 0.3.21
on an Intel Xeon of model 207 (2 vCPUs with AVX-512) ran the benchmark's products at 15-33
GFLOP/s, against 90-220 with its SkylakeX kernels. PyTorch would be compared at a fifth of the
speed it has on a machine OpenBLAS knows. So when OpenBLAS reports Prescott on a CPU with
AVX-512 (or AVX2), this sets OPENBLAS_CORETYPE to SkylakeX (or Haswell), which OpenBLAS reads
when it is loaded; gemm_benchmark.cpp does the same for its yardstick. A value already set is
kept. Run as a script, it prints the value to use (empty for OpenBLAS's own choice): the
benchmark scripts export it once, so that each PyTorch run does not ask and say so again.
"""
import os
import subprocess
import sys


def _detected_core():
    """OpenBLAS's own choice, asked in a new process: one loaded here would keep it for torch."""
    code = (
        "import ctypes; lib = ctypes.CDLL('libopenblas.so.0'); "
        "lib.openblas_get_corename.restype = ctypes.c_char_p; "
        "print(lib.openblas_get_corename().decode())"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def best_core(detected, flags):
    """The core type to ask for, or None to leave OpenBLAS's own choice."""
    if detected != "Prescott":
        return None
    if {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


if "OPENBLAS_CORETYPE" not in os.environ:
    detected = _detected_core()
    core = best_core(detected, _cpu_flags())
    if core:
        os.environ["OPENBLAS_CORETYPE"] = core
        print(
            f"openblas_core: OpenBLAS took this CPU for {detected} (a fallback); "
            f"OPENBLAS_CORETYPE={core}",
            file=sys.stderr,
        )

if __name__ == "__main__":
    print(os.environ.get("OPENBLAS_CORETYPE", ""))
