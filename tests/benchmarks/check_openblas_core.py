"""The yardstick's kernels (benchmarks/openblas_core.py): which OPENBLAS_CORETYPE it asks for.

Kernels older than the CPU made the benchmarks compare us with a fraction of OpenBLAS's and
PyTorch's speed: Prescott's SSE3 kernels on a Xeon OpenBLAS did not know, and Haswell's AVX2
kernels on a Zen 5 whose environment set OPENBLAS_CORETYPE=Haswell. Exits 1 on a wrong choice.
"""
import importlib.util
import pathlib
import sys

path = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "openblas_core.py"
spec = importlib.util.spec_from_file_location("openblas_core", path)
openblas_core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(openblas_core)

AVX2 = {"avx", "avx2", "fma"}
AVX512 = AVX2 | {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
# (kernels OpenBLAS would run, the CPU's flags, the core type to ask for: None keeps them)
CASES = [
    ("Haswell", AVX512, "SkylakeX"),  # OPENBLAS_CORETYPE=Haswell on a Zen 5
    ("Zen", AVX512, "SkylakeX"),
    ("Prescott", AVX512, "SkylakeX"),  # a CPU newer than OpenBLAS knows
    ("SkylakeX", AVX512, None),
    ("Cooperlake", AVX512, None),  # OpenBLAS's own choice on a Zen 5
    ("SapphireRapids", AVX512, None),
    ("Prescott", AVX2, "Haswell"),
    ("Haswell", AVX2, None),
    ("Zen", AVX2, None),
    ("Prescott", {"sse3"}, None),
    (None, AVX512, None),  # OpenBLAS not loaded: nothing to ask
    ("Haswell", AVX512 - {"avx512vl"}, None),  # not all the AVX-512 SkylakeX's kernels use
]

failures = 0
for detected, flags, expected in CASES:
    got = openblas_core.best_core(detected, flags)
    if got != expected:
        failures += 1
        print(f"best_core({detected!r}, {sorted(flags)}) = {got!r}, expected {expected!r}")
print(f"{len(CASES) - failures} of {len(CASES)} choices right")
sys.exit(1 if failures else 0)
