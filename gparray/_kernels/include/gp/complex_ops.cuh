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
template <class T>
__device__ __forceinline__ complex<T> operator*(complex<T> a, complex<T> b) {
    return complex<T>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
// Smith's algorithm with scaling: no spurious overflow for large operands.
template <class T>
__device__ __forceinline__ complex<T> operator/(complex<T> a, complex<T> b) {
    T ar = a.re, ai = a.im, br = b.re, bi = b.im;
    if (fabs(br) >= fabs(bi)) {
        if (br == T(0) && bi == T(0)) return complex<T>(ar / fabs(br), ai / fabs(bi));
        T r = bi / br, d = br + bi * r;
        return complex<T>((ar + ai * r) / d, (ai - ar * r) / d);
    }
    T r = br / bi, d = br * r + bi;
    return complex<T>((ar * r + ai) / d, (ai * r - ar) / d);
}
template <class T>
__device__ __forceinline__ bool operator==(complex<T> a, complex<T> b) { return a.re == b.re && a.im == b.im; }
template <class T>
__device__ __forceinline__ bool operator!=(complex<T> a, complex<T> b) { return !(a == b); }

}  // namespace gp
