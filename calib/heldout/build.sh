#!/bin/bash
# Builds tcsim's own third-party held-out sample (issue 16): PTX from public sources, nothing vendored here.
#   SRC=<dir with cutlass/ ThunderKittens/ FlashMLA/ DeepGEMM/ checkouts> HELDOUT=<output dir> \
#       bash calib/heldout/build.sh
# Sources as built on 2026-11-28: NVIDIA/cutlass 7107b0553, HazyResearch/ThunderKittens 0b55588d,
# deepseek-ai/DeepGEMM 54e2261, deepseek-ai/FlashMLA 9241ae3.  nvcc 13.0, -ptx -O3.  Each line of list.txt:
# name|arch|flags|source (relative to SRC, or INST/ for the instantiation stubs this script writes).
# Writes $HELDOUT/ptx/<name>.<arch>.ptx and $HELDOUT/logs/<name>.log; skips PTX already built.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${SRC:?set SRC}; HELDOUT=${HELDOUT:?set HELDOUT}; INST=$HELDOUT/inst
mkdir -p "$HELDOUT/ptx" "$HELDOUT/logs" "$INST"
# DeepGEMM compiles its kernels at run time from a template string (csrc/jit_kernels/impls/*.hpp generate_impl);
# these stubs fill it in for a 256^3 fp8 e4m3 GEMM with the values its heuristics (csrc/jit_kernels/heuristics)
# pick for block 128 x 128 x 128, 4 stages, 4 SMs, bf16 D
cat > "$INST/dg_sm90_fp8.cu" <<'X'
#include <deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh>
using namespace deep_gemm;
static void __instantiate_kernel() {
    auto ptr = reinterpret_cast<void*>(&sm90_fp8_gemm_1d2d_impl<cute::UMMA::Major::K, 256, 256, 256, 1, 128, 128, 128,
        128, 128, 128, 4, 128, 256, 1, false, 4, GemmType::Normal, cutlass::bfloat16_t,
        epilogue::transform::EpilogueIdentity>);
    (void)ptr;
}
X
cat > "$INST/dg_sm100_fp8.cu" <<'X'
#include <deep_gemm/impls/sm100_fp8_fp4_gemm_1d1d.cuh>
using namespace deep_gemm;
static void __instantiate_kernel() {
    auto ptr = reinterpret_cast<void*>(&sm100_fp8_fp4_gemm_1d1d_impl<cute::UMMA::Major::K, cute::UMMA::Major::K,
        128, 128, 128, 256, 256, 256, 128, 128, 128, 1, 128, 128, 128, 4, 128, 128, 1, false, 4, false, false,
        GemmType::Normal, false, cutlass::float_e4m3_t, cutlass::float_e4m3_t, cutlass::bfloat16_t,
        epilogue::transform::EpilogueIdentity>);
    (void)ptr;
}
X
# ThunderKittens' B300 attention is a torch extension: keep its device code, replace the torch/pybind host glue
# (line 2 and everything from `void dispatch(`) by taking the address of kernel<config<128,128,192,128>>
A=$SRC/ThunderKittens/kernels/attention/bf16_b300_mha_noncausal/bf16_b300_mha_noncausal.cu
{ sed -n '1p' "$A"; sed -n '3,/^void dispatch(/p' "$A" | sed '$d'
  echo 'using C_ = config<128, 128, 192, 128>;'
  echo 'void* tk_mha_b300_kernel_ptr() { return reinterpret_cast<void*>(&kernel<C_>); }'; } > "$INST/tk_mha_b300.cu"
CUT="-std=c++17 --expt-relaxed-constexpr -I$SRC/cutlass/include -I$SRC/cutlass/tools/util/include"
CUT="$CUT -I$SRC/cutlass/examples/common"
TK="-std=c++20 --expt-extended-lambda --expt-relaxed-constexpr -DNDEBUG"
TK="$TK -I$SRC/ThunderKittens/include -I$SRC/ThunderKittens/prototype"
FM="-std=c++20 --expt-relaxed-constexpr --expt-extended-lambda -I$SRC/cutlass/include -I$SRC/FlashMLA/csrc"
FM="$FM -I$SRC/FlashMLA/csrc/kerutils/include -I$SRC/FlashMLA/csrc/sm90 -I$SRC/FlashMLA/csrc/sm90/decode/dense"
DG="-std=c++20 --expt-relaxed-constexpr -I$SRC/cutlass/include -I$SRC/DeepGEMM/deep_gemm/include"
while IFS='|' read -r name arch flags src; do
  [ -z "$name" ] && continue
  case "$flags" in
    CUT) F="$CUT";; TKH) F="$TK -DKITTENS_HOPPER";; TKB) F="$TK -DKITTENS_BLACKWELL";; FM) F="$FM";; DG) F="$DG";;
  esac
  case "$src" in INST/*) s=$INST/${src#INST/};; *) s=$SRC/$src;; esac
  out=$HELDOUT/ptx/$name.$arch.ptx
  [ -s "$out" ] && continue
  t=$(date +%s)
  timeout 2400 nvcc -ptx -O3 -arch=$arch $F "$s" -o "$out" > "$HELDOUT/logs/$name.log" 2>&1
  echo "$name rc=$? $(( $(date +%s) - t ))s"
done < "$HERE/list.txt"
