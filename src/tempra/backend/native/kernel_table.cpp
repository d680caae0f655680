// tempra/backend/native/kernel_table.cpp: the native kernel table: the scalar table with the
// SIMD kernels of this build's arm written over it.
#include "tempra/backend/native/native.h"
#include "tempra/backend/native/simd.h"

// TEMPRA_NATIVE_BACKEND: set by CMake unless the build asked for the scalar backend alone.
#if defined(TEMPRA_SIMD_ARM) && TEMPRA_NATIVE_BACKEND
#define TEMPRA_NATIVE_KERNELS 1
#endif

namespace tempra {
namespace native {

#if TEMPRA_NATIVE_KERNELS
const char* simd_arm() { return TEMPRA_SIMD_ARM; }
#else
const char* simd_arm() { return nullptr; }
#endif

namespace {

Kernels make_native_kernels() {
  Kernels table = scalar_kernels();
  table.name = "native";
#if TEMPRA_NATIVE_KERNELS
  table.f32.unary = &native::unary;
  table.f32.binary = &native::binary;
  table.f32.unary_grad = &native::unary_grad;
  table.f32.reduce = &native::reduce;
  table.f32.softmax = &native::softmax;
  table.f32.gemm = &native::gemm;
  table.f32.rms_norm = &native::rms_norm;
  table.f32.layer_norm = &native::layer_norm;
  table.f32.rope = &native::rope;
  table.f32.attention = &native::attention;
  table.f32.cross_entropy = &native::cross_entropy;
  table.f32.softmax_grad = &native::softmax_grad;
  table.f32.cross_entropy_grad = &native::cross_entropy_grad;
  table.f32.rms_norm_grad = &native::rms_norm_grad;
  table.f32.layer_norm_grad = &native::layer_norm_grad;
  table.f32.attention_grad = &native::attention_grad;
  table.f32.conv1d = &native::conv1d;
  table.f32.conv1d_grad = &native::conv1d_grad;
  table.gemm_f16_weights = &native::gemm_half_weights<f16_t>;
  table.gemm_bf16_weights = &native::gemm_half_weights<bf16_t>;
  table.gemm_bf16_products = &native::gemm_bf16_products;
  table.gemm_quant_weights = &native::gemm_quant_weights;
  table.gemm_stored_weights_nn = &native::gemm_stored_weights_nn;
  table.f16_to_f32 = &native::f16_to_f32;
  table.bf16_to_f32 = &native::bf16_to_f32;
  table.f32_to_f16 = &native::f32_to_f16;
  table.f32_to_bf16 = &native::f32_to_bf16;
  table.cache_attention_f32 = &native::cache_attention<float>;
  table.cache_attention_f16 = &native::cache_attention<f16_t>;
  table.cache_attention_q8_0 = &native::cache_attention<quant::BlockQ8_0>;
  table.gated_delta_rule = &native::gated_delta_rule;
#endif
  return table;
}

}  // namespace
}  // namespace native

const Kernels& kernels_for(Backend backend) {
  static const Kernels native_table = native::make_native_kernels();
  return backend == Backend::native ? native_table : scalar_kernels();
}

}  // namespace tempra
