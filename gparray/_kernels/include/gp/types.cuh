// gparray: scalar types and casts shared by every kernel family.
#pragma once

namespace gp {

typedef signed char int8;
typedef short int16;
typedef int int32;
typedef long long int64;
typedef unsigned char uint8;
typedef unsigned short uint16;
typedef unsigned int uint32;
typedef unsigned long long uint64;

template <class T>
struct alignas(2 * sizeof(T)) complex {
    T re, im;
    __host__ __device__ complex() : re(0), im(0) {}
    __host__ __device__ complex(T r) : re(r), im(0) {}
    __host__ __device__ complex(T r, T i) : re(r), im(i) {}
    template <class U>
    __host__ __device__ explicit complex(const complex<U>& o) : re(T(o.re)), im(T(o.im)) {}
    __host__ __device__ T real() const { return re; }
    __host__ __device__ T imag() const { return im; }
};

typedef complex<float> complex64;
typedef complex<double> complex128;

// ------------------------------------------------------------------ half (float16)
// IEEE binary16 in 16 bits of storage: gparray's float16 extension dtype. Only loads,
// stores, conversions and comparisons live here; arithmetic is done in float (the op
// table's compute type for float16 is float32), as in NumPy and CuPy. No <cuda_fp16.h>:
// NVRTC runs with --minimal and no toolkit include path. Device conversions are single
// PTX cvt instructions (round to nearest even, subnormals kept); NaNs keep their sign and
// leading payload bits exactly as NumPy's conversions do (so signbit(-nan) holds). Host
// builds (the g++ functor tests) use the same rounding in software.
struct alignas(2) half {
    unsigned short bits;
    __host__ __device__ static constexpr half from_bits(unsigned short b) {
        half h{b};
        return h;
    }
};

namespace detail {
__host__ __device__ __forceinline__ unsigned int f32_bits(float f) {
    unsigned int u;
    memcpy(&u, &f, 4);
    return u;
}
__host__ __device__ __forceinline__ float f32_from(unsigned int u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
__host__ __device__ __forceinline__ unsigned long long f64_bits(double d) {
    unsigned long long u;
    memcpy(&u, &d, 8);
    return u;
}
__host__ __device__ __forceinline__ double f64_from(unsigned long long u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}
__host__ __device__ __forceinline__ bool h_isnan(unsigned short b) { return (b & 0x7fffu) > 0x7c00u; }
// NaN of the sign and leading payload bits of a wider NaN (NumPy's rule: never an infinity).
__host__ __device__ __forceinline__ unsigned short h_nan(unsigned int sign, unsigned int payload) {
    unsigned int r = 0x7c00u | payload;
    if (r == 0x7c00u) r |= 1u;
    return static_cast<unsigned short>(sign | r);
}
#if !defined(__CUDA_ARCH__)
// Host only: the finite value m * 2^e (m < 2^53, ev = floor(log2 of the value)) rounded to
// nearest even in binary16, with the sign bit `sign`.
inline unsigned short h_round(unsigned int sign, unsigned long long m, int e, int ev) {
    if (ev >= 16) return static_cast<unsigned short>(sign | 0x7c00u);
    const int eh = ev < -14 ? -14 : ev;  // binary16 exponent (subnormals share 2^-14's)
    const int shift = eh - 10 - e;       // > 0: m has more bits than binary16 keeps
    unsigned long long n = 0;
    if (shift < 64) {
        n = m >> shift;
        const unsigned long long rem = m & ((1ull << shift) - 1), halfway = 1ull << (shift - 1);
        if (rem > halfway || (rem == halfway && (n & 1))) ++n;
    }
    // n < 2^11 units of 2^(eh - 10); a carry into the exponent (or to infinity) is right
    return static_cast<unsigned short>(sign + (static_cast<unsigned int>(eh + 14) << 10) + n);
}
#endif
}  // namespace detail

// Device: one cvt instruction; only a NaN (tested on the converted value, a float compare)
// takes the exact-NaN path.
__host__ __device__ __forceinline__ float half_to_float(half h) {
    const unsigned int b = h.bits;
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    if (f != f) f = detail::f32_from(((b & 0x8000u) << 16) | 0x7f800000u | ((b & 0x3ffu) << 13));
    return f;
#else
    const unsigned int sign = (b & 0x8000u) << 16, e = (b >> 10) & 0x1fu, m = b & 0x3ffu;
    if (e == 0x1fu) return detail::f32_from(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return detail::f32_from(sign);
        int ex = 113;  // float exponent field of 2^-14
        unsigned int mm = m;
        while (!(mm & 0x400u)) { mm <<= 1; --ex; }
        return detail::f32_from(sign | (static_cast<unsigned int>(ex) << 23) | ((mm & 0x3ffu) << 13));
    }
    return detail::f32_from(sign | ((e + 112u) << 23) | (m << 13));
#endif
}

__host__ __device__ __forceinline__ double half_to_double(half h) {
    const unsigned long long b = h.bits;
#if defined(__CUDA_ARCH__)
    double d;
    asm("cvt.f64.f16 %0, %1;" : "=d"(d) : "h"(h.bits));
    if (d != d) d = detail::f64_from(((b & 0x8000ull) << 48) | 0x7ff0000000000000ull | ((b & 0x3ffull) << 42));
    return d;
#else
    if (detail::h_isnan(h.bits))
        return detail::f64_from(((b & 0x8000ull) << 48) | 0x7ff0000000000000ull | ((b & 0x3ffull) << 42));
    return static_cast<double>(half_to_float(h));  // exact
#endif
}

__host__ __device__ __forceinline__ half float_to_half(float f) {
#if defined(__CUDA_ARCH__)
    unsigned short b;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(f));
    if (f != f) {
        const unsigned int u = detail::f32_bits(f);
        b = detail::h_nan((u >> 16) & 0x8000u, (u & 0x7fffffu) >> 13);
    }
    return half::from_bits(b);
#else
    const unsigned int u = detail::f32_bits(f);
    const unsigned int sign = (u >> 16) & 0x8000u, ef = (u >> 23) & 0xffu;
    if (ef == 0xffu) {
        if (u & 0x7fffffu) return half::from_bits(detail::h_nan(sign, (u & 0x7fffffu) >> 13));
        return half::from_bits(static_cast<unsigned short>(sign | 0x7c00u));
    }
    if (ef == 0) return half::from_bits(static_cast<unsigned short>(sign));  // below 2^-126: rounds to 0
    return half::from_bits(detail::h_round(sign, (u & 0x7fffffu) | 0x800000u, static_cast<int>(ef) - 150,
                                           static_cast<int>(ef) - 127));
#endif
}

__host__ __device__ __forceinline__ half double_to_half(double d) {
    const unsigned long long u = detail::f64_bits(d);
    const unsigned int sign = static_cast<unsigned int>(u >> 48) & 0x8000u;
#if defined(__CUDA_ARCH__)
    unsigned short b;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(b) : "d"(d));
    if (d != d) b = detail::h_nan(sign, static_cast<unsigned int>((u & 0xfffffffffffffull) >> 42));
    return half::from_bits(b);
#else
    const int ed = static_cast<int>((u >> 52) & 0x7ffu);
    if (ed == 0x7ff) {
        if (u & 0xfffffffffffffull)
            return half::from_bits(detail::h_nan(sign, static_cast<unsigned int>((u & 0xfffffffffffffull) >> 42)));
        return half::from_bits(static_cast<unsigned short>(sign | 0x7c00u));
    }
    if (ed == 0) return half::from_bits(static_cast<unsigned short>(sign));
    return half::from_bits(detail::h_round(sign, (u & 0xfffffffffffffull) | 0x10000000000000ull, ed - 1075, ed - 1023));
#endif
}

// Comparisons (IEEE: NaN unordered, -0 == +0) and the NaN test, found by argument-dependent
// lookup from generic code (the reducers' is_nan, max/min and argmax/argmin).
__host__ __device__ __forceinline__ bool operator==(half a, half b) { return half_to_float(a) == half_to_float(b); }
__host__ __device__ __forceinline__ bool operator!=(half a, half b) { return half_to_float(a) != half_to_float(b); }
__host__ __device__ __forceinline__ bool operator<(half a, half b) { return half_to_float(a) < half_to_float(b); }
__host__ __device__ __forceinline__ bool operator<=(half a, half b) { return half_to_float(a) <= half_to_float(b); }
__host__ __device__ __forceinline__ bool operator>(half a, half b) { return half_to_float(a) > half_to_float(b); }
__host__ __device__ __forceinline__ bool operator>=(half a, half b) { return half_to_float(a) >= half_to_float(b); }
__host__ __device__ __forceinline__ bool is_nan(half h) { return detail::h_isnan(h.bits); }

// Limits for the max/min reducers (include/gp/reduce.cuh specializes the other types).
namespace red {
template <class T> struct limits;
template <> struct limits<half> {
    __host__ __device__ __forceinline__ static half lowest() { return half::from_bits(0xfc00u); }   // -inf
    __host__ __device__ __forceinline__ static half highest() { return half::from_bits(0x7c00u); }  // +inf
};
}  // namespace red

template <class T> struct is_complex { static constexpr bool value = false; };
template <class T> struct is_complex<complex<T>> { static constexpr bool value = true; };

template <class T> struct real_of { typedef T type; };
template <class T> struct real_of<complex<T>> { typedef T type; };

// cast<To>(from): C++ conversion, with bool meaning "nonzero" and complex->real taking the
// real part (NumPy's astype semantics without the warning).
template <class To, class From>
struct caster {
    __device__ __forceinline__ static To run(From v) { return static_cast<To>(v); }
};
template <class From>
struct caster<bool, From> {
    __device__ __forceinline__ static bool run(From v) { return v != From(0); }
};
template <>
struct caster<bool, bool> {
    __device__ __forceinline__ static bool run(bool v) { return v; }
};
template <class T, class From>
struct caster<complex<T>, From> {
    __device__ __forceinline__ static complex<T> run(From v) { return complex<T>(static_cast<T>(v), T(0)); }
};
template <class T, class U>
struct caster<complex<T>, complex<U>> {
    __device__ __forceinline__ static complex<T> run(complex<U> v) {
        return complex<T>(static_cast<T>(v.re), static_cast<T>(v.im));
    }
};
template <class To, class U>
struct caster<To, complex<U>> {
    __device__ __forceinline__ static To run(complex<U> v) { return caster<To, U>::run(v.re); }
};
template <class U>
struct caster<bool, complex<U>> {
    __device__ __forceinline__ static bool run(complex<U> v) { return v.re != U(0) || v.im != U(0); }
};

// float -> integer conversions of NaN/inf/out-of-range values are undefined in C++. Give
// NumPy's answers on x86: targets of 32 bits or fewer convert through a 32-bit conversion
// (out of range -> INT32_MIN, the "integer indefinite"), then wrap to the target width;
// int64 and uint32 go through a 64-bit conversion; uint64 also accepts [2^63, 2^64).
__device__ __forceinline__ int f2i32(double v) {
    if (!(v == v) || v >= 2147483648.0 || v <= -2147483649.0) return static_cast<int>(0x80000000u);
    return static_cast<int>(v);
}
__device__ __forceinline__ long long f2i64(double v) {
    if (!(v == v) || v >= 9.2233720368547758e18 || v < -9.2233720368547758e18)
        return static_cast<long long>(0x8000000000000000ULL);
    return static_cast<long long>(v);
}
#define GP_FLOAT_TO_INT(I, VIA)                                                          \
    template <> struct caster<I, float> {                                                \
        __device__ __forceinline__ static I run(float v) { return static_cast<I>(VIA(v)); } \
    };                                                                                   \
    template <> struct caster<I, double> {                                               \
        __device__ __forceinline__ static I run(double v) { return static_cast<I>(VIA(v)); } \
    };
GP_FLOAT_TO_INT(signed char, f2i32)
GP_FLOAT_TO_INT(short, f2i32)
GP_FLOAT_TO_INT(int, f2i32)
GP_FLOAT_TO_INT(unsigned char, f2i32)
GP_FLOAT_TO_INT(unsigned short, f2i32)
GP_FLOAT_TO_INT(long long, f2i64)
GP_FLOAT_TO_INT(unsigned int, f2i64)
#undef GP_FLOAT_TO_INT
__device__ __forceinline__ unsigned long long f2u64(double v) {
    if (v >= 9.2233720368547758e18 && v < 1.8446744073709552e19) return static_cast<unsigned long long>(v);
    return static_cast<unsigned long long>(f2i64(v));
}
template <> struct caster<unsigned long long, float> {
    __device__ __forceinline__ static unsigned long long run(float v) { return f2u64(v); }
};
template <> struct caster<unsigned long long, double> {
    __device__ __forceinline__ static unsigned long long run(double v) { return f2u64(v); }
};

// half <-> everything: through float (integers, bool: float holds every integer that does
// not overflow binary16 exactly, so there is one rounding, as in NumPy) or directly from
// double (one rounding, no double rounding through float); to integers through float with
// the float rules above (NumPy converts float16 to integers through float too).
template <> struct caster<half, half> {
    __device__ __forceinline__ static half run(half v) { return v; }
};
template <> struct caster<half, float> {
    __device__ __forceinline__ static half run(float v) { return float_to_half(v); }
};
template <> struct caster<half, double> {
    __device__ __forceinline__ static half run(double v) { return double_to_half(v); }
};
template <> struct caster<half, bool> {
    __device__ __forceinline__ static half run(bool v) { return half::from_bits(v ? 0x3c00u : 0u); }
};
template <class U> struct caster<half, complex<U>> {
    __device__ __forceinline__ static half run(complex<U> v) { return caster<half, U>::run(v.re); }
};
template <> struct caster<float, half> {
    __device__ __forceinline__ static float run(half v) { return half_to_float(v); }
};
template <> struct caster<double, half> {
    __device__ __forceinline__ static double run(half v) { return half_to_double(v); }
};
template <> struct caster<bool, half> {
    __device__ __forceinline__ static bool run(half v) { return (v.bits & 0x7fffu) != 0; }
};
template <class T> struct caster<complex<T>, half> {
    __device__ __forceinline__ static complex<T> run(half v) { return complex<T>(caster<T, half>::run(v), T(0)); }
};
#define GP_HALF_INT(I)                                                                            \
    template <> struct caster<half, I> {                                                          \
        __device__ __forceinline__ static half run(I v) { return float_to_half(static_cast<float>(v)); } \
    };                                                                                            \
    template <> struct caster<I, half> {                                                          \
        __device__ __forceinline__ static I run(half v) { return caster<I, float>::run(half_to_float(v)); } \
    };
GP_HALF_INT(signed char)
GP_HALF_INT(short)
GP_HALF_INT(int)
GP_HALF_INT(long long)
GP_HALF_INT(unsigned char)
GP_HALF_INT(unsigned short)
GP_HALF_INT(unsigned int)
GP_HALF_INT(unsigned long long)
#undef GP_HALF_INT

template <class To, class From>
__device__ __forceinline__ To cast(From v) { return caster<To, From>::run(v); }

}  // namespace gp
