// gparray: core elementwise functors (op_<name>). Each is applied to values already
// converted to the compute type; the kernel converts the result to the output type.
// Integer arithmetic wraps modulo 2^N (done in unsigned arithmetic: no C++ overflow UB);
// float semantics follow NumPy 2 and the Array API special cases.
// Integer division, remainder and shifts: functors_int.cuh; transcendental and complex
// math: functors_math.cuh.
#pragma once
#include "types.cuh"
#include "complex_ops.cuh"

namespace gp {

// ------------------------------------------------------------------------- type traits
// kind: 0 other (bool), 1 signed integer, 2 unsigned integer, 3 real float, 4 complex.
template <class T> struct kind_of { static constexpr int value = 0; };
template <> struct kind_of<signed char> { static constexpr int value = 1; };
template <> struct kind_of<short> { static constexpr int value = 1; };
template <> struct kind_of<int> { static constexpr int value = 1; };
template <> struct kind_of<long long> { static constexpr int value = 1; };
template <> struct kind_of<unsigned char> { static constexpr int value = 2; };
template <> struct kind_of<unsigned short> { static constexpr int value = 2; };
template <> struct kind_of<unsigned int> { static constexpr int value = 2; };
template <> struct kind_of<unsigned long long> { static constexpr int value = 2; };
template <> struct kind_of<float> { static constexpr int value = 3; };
template <> struct kind_of<double> { static constexpr int value = 3; };
template <class T> struct kind_of<complex<T>> { static constexpr int value = 4; };

template <class T> constexpr bool is_int_v = kind_of<T>::value == 1 || kind_of<T>::value == 2;
template <class T> constexpr bool is_sint_v = kind_of<T>::value == 1;
template <class T> constexpr bool is_float_v = kind_of<T>::value == 3;
template <class T> constexpr bool is_complex_v = kind_of<T>::value == 4;

// Unsigned type at least as wide as int, for wrapping arithmetic on T (no promotion to a
// signed int, which would make uint16 * uint16 undefined behaviour).
template <class T> struct wide_unsigned { typedef unsigned int type; };
template <> struct wide_unsigned<long long> { typedef unsigned long long type; };
template <> struct wide_unsigned<unsigned long long> { typedef unsigned long long type; };

template <class T> __device__ __forceinline__ T wrap_add(T a, T b) {
    typedef typename wide_unsigned<T>::type W;
    return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
}
template <class T> __device__ __forceinline__ T wrap_sub(T a, T b) {
    typedef typename wide_unsigned<T>::type W;
    return static_cast<T>(static_cast<W>(a) - static_cast<W>(b));
}
template <class T> __device__ __forceinline__ T wrap_mul(T a, T b) {
    typedef typename wide_unsigned<T>::type W;
    return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
}
template <class T> __device__ __forceinline__ T wrap_neg(T a) {
    typedef typename wide_unsigned<T>::type W;
    return static_cast<T>(W(0) - static_cast<W>(a));
}

// quiet NaN and +infinity of a real float type (no math.h macros in NVRTC)
template <class T> __device__ __forceinline__ T nan_of();
template <> __device__ __forceinline__ float nan_of<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double nan_of<double>() { return __longlong_as_double(0x7ff8000000000000LL); }
template <class T> __device__ __forceinline__ T inf_of();
template <> __device__ __forceinline__ float inf_of<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double inf_of<double>() { return __longlong_as_double(0x7ff0000000000000LL); }

// ------------------------------------------------------------------------- classification
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

// ------------------------------------------------------------------------- float16
// float16 values reach the functors as float (their compute type), except for nextafter,
// which needs float16's own spacing: op_nextafter finds this overload by argument-dependent
// lookup. NaN if either operand is NaN, x2 when x1 == x2 (the spec), else one unit toward x2.
__device__ __forceinline__ half nextafter(half x, half y) {
    const unsigned int a = x.bits, b = y.bits;
    if (detail::h_isnan(x.bits) || detail::h_isnan(y.bits)) return half::from_bits(0x7e00u);
    if (x == y) return y;
    if ((a & 0x7fffu) == 0) return half::from_bits(static_cast<unsigned short>((b & 0x8000u) | 1u));
    const bool toward_plus = x < y, negative = (a & 0x8000u) != 0;
    return half::from_bits(static_cast<unsigned short>(toward_plus != negative ? a + 1 : a - 1));
}

}  // namespace gp

struct op_identity { template <class T> __device__ __forceinline__ T operator()(T a) const { return a; } };

// ----------------------------------------------------------------------------- arithmetic
struct op_add {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (gp::is_int_v<T>) return gp::wrap_add(a, b);
        else return a + b;
    }
};
struct op_subtract {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (gp::is_int_v<T>) return gp::wrap_sub(a, b);
        else return a - b;
    }
};
struct op_multiply {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (gp::is_int_v<T>) return gp::wrap_mul(a, b);
        else return a * b;
    }
};
// true division: float and complex only (integer inputs compute in the default float)
struct op_divide { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a / b; } };

struct op_negative {
    template <class T> __device__ __forceinline__ T operator()(T a) const {
        if constexpr (gp::is_int_v<T>) return gp::wrap_neg(a);
        else return -a;
    }
};
struct op_positive { template <class T> __device__ __forceinline__ T operator()(T a) const { return a; } };

// abs: INT_MIN stays INT_MIN (wraps, like NumPy); complex gives hypot(re, im) (real type)
struct op_abs {
    template <class T> __device__ __forceinline__ typename gp::real_of<T>::type operator()(T a) const {
        if constexpr (gp::is_complex_v<T>) return hypot(a.re, a.im);
        else if constexpr (gp::is_float_v<T>) return fabs(a);
        else if constexpr (gp::is_sint_v<T>) return a < T(0) ? gp::wrap_neg(a) : a;
        else return a;
    }
};

// square: x * x (NumPy's complex formula, no special cases beyond IEEE arithmetic)
struct op_square {
    template <class T> __device__ __forceinline__ T operator()(T a) const {
        if constexpr (gp::is_int_v<T>) return gp::wrap_mul(a, a);
        else if constexpr (gp::is_complex_v<T>) return T(a.re * a.re - a.im * a.im, a.re * a.im + a.im * a.re);
        else return a * a;
    }
};

// sign: -1/0/+1 for real numbers (sign of +-0 is +0, of NaN is NaN); z/|z| for complex
// (0 for 0, NaN+NaNj when a part is NaN, the unit direction for one infinite part).
struct op_sign {
    template <class T> __device__ __forceinline__ T operator()(T a) const {
        if constexpr (gp::is_complex_v<T>) {
            typedef typename gp::real_of<T>::type R;
            double re = a.re, im = a.im;
            if (re != re || im != im) return T(gp::nan_of<R>(), gp::nan_of<R>());
            const bool ir = isinf(re), ii = isinf(im);
            if (ir && ii) return T(gp::nan_of<R>(), gp::nan_of<R>());
            if (ir) return T(re > 0 ? R(1) : R(-1), R(0));
            if (ii) return T(R(0), im > 0 ? R(1) : R(-1));
            if (re == 0 && im == 0) return T(R(0), R(0));
            double h = hypot(re, im);
            if (isinf(h)) {  // finite parts whose modulus overflows: scale down first
                re *= 0.5;
                im *= 0.5;
                h = hypot(re, im);
            }
            return T(R(re / h), R(im / h));
        } else if constexpr (gp::is_float_v<T>) {
            return a > T(0) ? T(1) : (a < T(0) ? T(-1) : (a == T(0) ? T(0) : a));
        } else if constexpr (gp::is_sint_v<T>) {
            return static_cast<T>((a > T(0)) - (a < T(0)));
        } else {
            return static_cast<T>(a > T(0));
        }
    }
};

// ----------------------------------------------------------------------------- complex parts
struct op_real {
    template <class T> __device__ __forceinline__ typename gp::real_of<T>::type operator()(T a) const {
        if constexpr (gp::is_complex_v<T>) return a.re;
        else return a;
    }
};
struct op_imag {
    template <class T> __device__ __forceinline__ typename gp::real_of<T>::type operator()(T a) const {
        if constexpr (gp::is_complex_v<T>) return a.im;
        else return T(0);
    }
};
struct op_conj {
    template <class T> __device__ __forceinline__ T operator()(T a) const {
        if constexpr (gp::is_complex_v<T>) return T(a.re, -a.im);
        else return a;
    }
};

// ----------------------------------------------------------------------------- comparison
struct op_equal { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a == b; } };
struct op_not_equal { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a != b; } };
struct op_less { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a < b; } };
struct op_less_equal { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a <= b; } };
struct op_greater { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a > b; } };
struct op_greater_equal { template <class T> __device__ __forceinline__ bool operator()(T a, T b) const { return a >= b; } };

// maximum/minimum propagate NaN from either side; on ties (+0 vs -0) they return the
// second operand, like NumPy's ufuncs. clip is minimum(maximum(x, min), max).
struct op_maximum {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        if (gp::isnan_(a)) return a;
        return a > b ? a : b;
    }
};
struct op_minimum {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        if (gp::isnan_(a)) return a;
        return a < b ? a : b;
    }
};
// ----------------------------------------------------------------------------- logical
struct op_logical_and { __device__ __forceinline__ bool operator()(bool a, bool b) const { return a && b; } };
struct op_logical_or { __device__ __forceinline__ bool operator()(bool a, bool b) const { return a || b; } };
struct op_logical_xor { __device__ __forceinline__ bool operator()(bool a, bool b) const { return a != b; } };
struct op_logical_not { __device__ __forceinline__ bool operator()(bool a) const { return !a; } };

// ----------------------------------------------------------------------------- classification
struct op_isnan { template <class T> __device__ __forceinline__ bool operator()(T a) const { return gp::isnan_(a); } };
struct op_isinf { template <class T> __device__ __forceinline__ bool operator()(T a) const { return gp::isinf_(a); } };
struct op_isfinite {
    template <class T> __device__ __forceinline__ bool operator()(T a) const { return !gp::isnan_(a) && !gp::isinf_(a); }
};
struct op_signbit { template <class T> __device__ __forceinline__ bool operator()(T a) const { return signbit(a); } };

// ----------------------------------------------------------------------------- bitwise
struct op_bitwise_and { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a & b; } };
struct op_bitwise_or { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a | b; } };
struct op_bitwise_xor { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a ^ b; } };
struct op_bitwise_invert {
    template <class T> __device__ __forceinline__ T operator()(T a) const { return static_cast<T>(~a); }
    __device__ __forceinline__ bool operator()(bool a) const { return !a; }
};

// ----------------------------------------------------------------------------- rounding
// Integers are returned unchanged; complex rounds both parts (round only).
struct op_ceil {
    template <class T> __device__ __forceinline__ T operator()(T a) const {
        if constexpr (gp::is_float_v<T>) return ceil(a);
        else return a;
    }
};
struct op_floor {
    template <class T> __device__ __forceinline__ T operator()(T a) const {
        if constexpr (gp::is_float_v<T>) return floor(a);
        else return a;
    }
};
struct op_trunc {
    template <class T> __device__ __forceinline__ T operator()(T a) const {
        if constexpr (gp::is_float_v<T>) return trunc(a);
        else return a;
    }
};
struct op_round {  // half to even
    template <class T> __device__ __forceinline__ T operator()(T a) const {
        if constexpr (gp::is_float_v<T>) return rint(a);
        else if constexpr (gp::is_complex_v<T>) return T(rint(a.re), rint(a.im));
        else return a;
    }
};

// ----------------------------------------------------------------------------- real float
struct op_copysign { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return copysign(a, b); } };
struct op_nextafter { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return nextafter(a, b); } };
