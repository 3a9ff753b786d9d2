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

template <class To, class From>
__device__ __forceinline__ To cast(From v) { return caster<To, From>::run(v); }

}  // namespace gp
