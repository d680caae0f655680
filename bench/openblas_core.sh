# bench/openblas_core.sh: sourced by the scripts that run OpenBLAS (directly, or under PyTorch):
# exports OPENBLAS_CORETYPE, the kernel that fits this CPU, whatever the shell exports
# (GEMM_CORETYPE=... picks another): SkylakeX where the CPU has AVX-512 (F, BW, VL, DQ), Zen on an
# AMD CPU with AVX2, Haswell on any other with AVX2 and FMA, else OpenBLAS's own choice.
# Debian's OpenBLAS 0.3.21 does not know recent Xeon models and falls back to its SSE3 kernel
# there (../shared/MACHINE.md: ~4.7x slower at 1024-wide products, under PyTorch too); forcing
# SkylakeX on a CPU without AVX-512 would crash or mislead.
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has_cpu_flag() { [[ " ${cpu_flags#*:} " == *" $1 "* ]]; }
if [ -n "${GEMM_CORETYPE:-}" ]; then
  export OPENBLAS_CORETYPE=$GEMM_CORETYPE
elif has_cpu_flag avx512f && has_cpu_flag avx512bw && has_cpu_flag avx512vl && has_cpu_flag avx512dq; then
  export OPENBLAS_CORETYPE=SkylakeX
elif has_cpu_flag avx2 && has_cpu_flag fma && grep -qm1 AuthenticAMD /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=Zen
elif has_cpu_flag avx2 && has_cpu_flag fma; then
  export OPENBLAS_CORETYPE=Haswell
else
  unset OPENBLAS_CORETYPE
fi
