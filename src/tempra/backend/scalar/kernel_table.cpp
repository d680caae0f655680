// tempra/backend/scalar/kernel_table.cpp: the scalar entries of the kernel table.
#include "tempra/backend/scalar/scalar.h"

namespace tempra {
namespace {

template <class T>
constexpr FloatKernels<T> scalar_float_kernels() {
  return FloatKernels<T>{
      &scalar::unary<T>,         &scalar::binary<T>,          &scalar::where<T>,
      &scalar::reduce<T>,        &scalar::argmax<T>,          &scalar::softmax<T>,
      &scalar::gemm<T>,          &scalar::rms_norm<T>,        &scalar::layer_norm<T>,
      &scalar::rope<T>,          &scalar::attention<T>,       &scalar::cross_entropy<T>,
      &scalar::conv1d<T>,        &scalar::unary_grad<T>,      &scalar::binary_grad<T>,
      &scalar::reduce_grad<T>,   &scalar::softmax_grad<T>,    &scalar::cross_entropy_grad<T>,
      &scalar::rms_norm_grad<T>, &scalar::layer_norm_grad<T>, &scalar::attention_grad<T>,
      &scalar::conv1d_grad<T>,
  };
}

}  // namespace

const Kernels& scalar_kernels() {
  static const Kernels table{"scalar", scalar_float_kernels<float>(), scalar_float_kernels<double>(),
                             &scalar::gemm_half_weights<f16_t>, &scalar::gemm_half_weights<bf16_t>,
                             &scalar::gemm_bf16_products,
                             &scalar::gemm_quant_weights,           &scalar::gemm_stored_weights_nn,
                             &scalar::convert_half<f16_t, float>, &scalar::convert_half<bf16_t, float>,
                             &scalar::convert_half<float, f16_t>, &scalar::convert_half<float, bf16_t>,
                             &scalar::cache_attention<float>, &scalar::cache_attention<f16_t>,
                             &scalar::cache_attention<quant::BlockQ8_0>, &scalar::gated_delta_rule};
  return table;
}

}  // namespace tempra
