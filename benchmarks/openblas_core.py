"""Makes the PyTorch references run OpenBLAS's kernels for this CPU. Import it before torch.

Debian's PyTorch runs its matrix products on OpenBLAS, which picks its kernels by the CPU's model
number, or by OPENBLAS_CORETYPE. Either can name kernels older than the CPU. OpenBLAS 0.3.21 does
not know an Intel Xeon of model 207 (2 vCPUs with AVX-512) and falls back to Prescott's SSE3
kernels: the benchmark's products ran at 15-33 GFLOP/s, against 90-220 with its SkylakeX
kernels. An AMD EPYC of family 26 (Zen 5, AVX-512) came with OPENBLAS_CORETYPE=Haswell set in
its environment: AVX2 kernels, at 100-112 GFLOP/s against 180-206 with SkylakeX's (OpenBLAS's
own choice there is Cooperlake, whose single-precision kernels are SkylakeX's). PyTorch would be
compared at a fraction of its speed. So when the CPU has AVX-512 and the kernels OpenBLAS would
run lack it, this sets OPENBLAS_CORETYPE to SkylakeX (on a CPU with AVX2 but not AVX-512,
Prescott becomes Haswell), which OpenBLAS reads when it is loaded, and says so on stderr;
gemm_benchmark.cpp does the same for its yardstick. Run as a script, it prints the value to use
(empty for the kernels OpenBLAS would run anyway): the benchmark scripts export it once, so that
each PyTorch run does not ask and say so again.
"""
import os
import subprocess
import sys


def _detected_core():
    """The kernels OpenBLAS would run (its choice or OPENBLAS_CORETYPE's), asked in a new process:
    one loaded here would keep them for torch."""
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


# OpenBLAS 0.3.21's core types whose kernels use AVX-512.
AVX512_CORES = {"SkylakeX", "Cooperlake", "SapphireRapids"}


def best_core(detected, flags):
    """The core type to ask for, or None to leave OpenBLAS's own choice."""
    if detected is None:
        return None
    if {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return None if detected in AVX512_CORES else "SkylakeX"
    if detected == "Prescott" and {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


detected = _detected_core()
core = best_core(detected, _cpu_flags())
if core:
    os.environ["OPENBLAS_CORETYPE"] = core
    print(
        f"openblas_core: OpenBLAS would run {detected}'s kernels, older than this CPU; "
        f"OPENBLAS_CORETYPE={core}",
        file=sys.stderr,
    )

if __name__ == "__main__":
    print(os.environ.get("OPENBLAS_CORETYPE", ""))
