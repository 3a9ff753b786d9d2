// gparray: core elementwise functors (op_<name>). Each is applied to values already
// converted to the compute type; the kernel converts the result to the output type.
#pragma once
#include "types.cuh"
#include "complex_ops.cuh"

namespace gp {

template <class T> __device__ __forceinline__ bool isnan_(T v) { return false; }
template <> __device__ __forceinline__ bool isnan_(float v) { return v != v; }
template <> __device__ __forceinline__ bool isnan_(double v) { return v != v; }
template <> __device__ __forceinline__ bool isnan_(complex64 v) { return v.re != v.re || v.im != v.im; }
template <> __device__ __forceinline__ bool isnan_(complex128 v) { return v.re != v.re || v.im != v.im; }

template <class T> __device__ __forceinline__ bool isinf_(T v) { return false; }
template <> __device__ __forceinline__ bool isinf_(float v) { return isinf(v); }
template <> __device__ __forceinline__ bool isinf_(double v) { return isinf(v); }
template <> __device__ __forceinline__ bool isinf_(complex64 v) { return isinf(v.re) || isinf(v.im); }
template <> __device__ __forceinline__ bool isinf_(complex128 v) { return isinf(v.re) || isinf(v.im); }

}  // namespace gp

struct op_identity { template <class T> __device__ __forceinline__ T operator()(T a) const { return a; } };

struct op_add { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; } };
struct op_subtract { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a - b; } };
struct op_multiply { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a * b; } };
struct op_divide { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a / b; } };

struct op_equal { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a == b; } };
struct op_not_equal { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a != b; } };
struct op_less { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a < b; } };
struct op_less_equal { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a <= b; } };
struct op_greater { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a > b; } };
struct op_greater_equal { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a >= b; } };

struct op_logical_and { __device__ __forceinline__ bool operator()(bool a, bool b) const { return a && b; } };
struct op_logical_or { __device__ __forceinline__ bool operator()(bool a, bool b) const { return a || b; } };
struct op_logical_xor { __device__ __forceinline__ bool operator()(bool a, bool b) const { return a != b; } };
struct op_logical_not { __device__ __forceinline__ bool operator()(bool a) const { return !a; } };

struct op_isnan { template <class T> __device__ __forceinline__ bool operator()(T a) const { return gp::isnan_(a); } };
struct op_isinf { template <class T> __device__ __forceinline__ bool operator()(T a) const { return gp::isinf_(a); } };
struct op_isfinite {
    template <class T> __device__ __forceinline__ bool operator()(T a) const { return !gp::isnan_(a) && !gp::isinf_(a); }
};

struct op_negative { template <class T> __device__ __forceinline__ T operator()(T a) const { return -a; } };
struct op_positive { template <class T> __device__ __forceinline__ T operator()(T a) const { return a; } };

struct op_bitwise_and { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a & b; } };
struct op_bitwise_or { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a | b; } };
struct op_bitwise_xor { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a ^ b; } };
struct op_bitwise_invert {
    template <class T> __device__ __forceinline__ T operator()(T a) const { return ~a; }
    __device__ __forceinline__ bool operator()(bool a) const { return !a; }
};
