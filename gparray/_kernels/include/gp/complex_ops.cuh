// gparray: arithmetic and comparison operators on gp::complex<T>.
#pragma once
#include "types.cuh"

namespace gp {

template <class T>
__device__ __forceinline__ complex<T> operator+(complex<T> a, complex<T> b) { return complex<T>(a.re + b.re, a.im + b.im); }
template <class T>
__device__ __forceinline__ complex<T> operator-(complex<T> a, complex<T> b) { return complex<T>(a.re - b.re, a.im - b.im); }
template <class T>
__device__ __forceinline__ complex<T> operator-(complex<T> a) { return complex<T>(-a.re, -a.im); }
// Rounded, never-fused products and sums: complex arithmetic gives NumPy's bits (x86 has
// no FMA in NumPy's complex loops), including the signs of underflowed zeros.
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
#else  // host builds of the headers (CPU-tier functor tests): plain IEEE operations
template <class T> inline T mul_rn(T a, T b) { return a * b; }
template <class T> inline T add_rn(T a, T b) { return a + b; }
template <class T> inline T sub_rn(T a, T b) { return a - b; }
#endif

template <class T>
__device__ __forceinline__ complex<T> operator*(complex<T> a, complex<T> b) {
    return complex<T>(sub_rn(mul_rn(a.re, b.re), mul_rn(a.im, b.im)), add_rn(mul_rn(a.re, b.im), mul_rn(a.im, b.re)));
}
// Smith's algorithm (NumPy's): no spurious overflow for large operands.
template <class T>
__device__ __forceinline__ complex<T> operator/(complex<T> a, complex<T> b) {
    T ar = a.re, ai = a.im, br = b.re, bi = b.im;
    if (fabs(br) >= fabs(bi)) {
        if (br == T(0) && bi == T(0)) return complex<T>(ar / fabs(br), ai / fabs(bi));
        T r = bi / br, d = add_rn(br, mul_rn(bi, r));
        return complex<T>(add_rn(ar, mul_rn(ai, r)) / d, sub_rn(ai, mul_rn(ar, r)) / d);
    }
    T r = br / bi, d = add_rn(mul_rn(br, r), bi);
    return complex<T>(add_rn(mul_rn(ar, r), ai) / d, sub_rn(mul_rn(ai, r), ar) / d);
}
template <class T>
__device__ __forceinline__ bool operator==(complex<T> a, complex<T> b) { return a.re == b.re && a.im == b.im; }
template <class T>
__device__ __forceinline__ bool operator!=(complex<T> a, complex<T> b) { return !(a == b); }

}  // namespace gp
