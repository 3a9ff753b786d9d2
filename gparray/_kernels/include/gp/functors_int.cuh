// gparray: division-like and shift functors with NumPy 2 semantics.
//   floor_divide / remainder: Python's floor convention for integers and floats. Integer
//     division by zero gives 0 (no trap), INT_MIN // -1 wraps to INT_MIN, INT_MIN % -1 is 0.
//     Floats follow NumPy's npy_divmod (fmod-based, snapped quotient, signed zeros), except
//     that floor_divide with exactly one infinite operand is x1 / x2 (the spec's preference).
//   bitwise shifts: counts outside [0, bits) give 0 (left; right for non-negatives) or -1
//     (right shift of a negative number), like NumPy 2.
//   int_pow: wrapping square-and-multiply; negative exponents give the truncated value of
//     1 / x^|n| (1 for x == 1, +-1 for x == -1, 0 otherwise).
#pragma once
#include "functors.cuh"

namespace gp {

template <class T>
__device__ __forceinline__ T int_floor_divide(T a, T b) {
    if (b == T(0)) return T(0);
    if constexpr (is_sint_v<T>) {
        if (b == T(-1)) return wrap_neg(a);
        T q = static_cast<T>(a / b);
        if ((a < T(0)) != (b < T(0)) && static_cast<T>(q * b) != a) --q;
        return q;
    } else {
        return static_cast<T>(a / b);
    }
}

template <class T>
__device__ __forceinline__ T int_remainder(T a, T b) {
    if (b == T(0)) return T(0);
    if constexpr (is_sint_v<T>) {
        if (b == T(-1)) return T(0);
        T r = static_cast<T>(a % b);
        if (r != T(0) && ((r < T(0)) != (b < T(0)))) r = static_cast<T>(r + b);
        return r;
    } else {
        return static_cast<T>(a % b);
    }
}

// NumPy's npy_divmod: returns the floor quotient, stores the Python-style modulus.
template <class T>
__device__ __forceinline__ T float_divmod(T a, T b, T& modulus) {
    T mod = fmod(a, b);
    if (b == T(0)) {
        modulus = mod;
        return a / b;
    }
    T div = (a - mod) / b;  // very nearly an integer multiple of b
    if (mod != T(0)) {      // true for NaN too, like C's `if (mod)`
        if ((b < T(0)) != (mod < T(0))) {
            mod += b;
            div -= T(1);
        }
    } else {
        mod = copysign(T(0), b);
    }
    T floordiv;
    if (div != T(0)) {
        floordiv = floor(div);
        if (div - floordiv > T(0.5)) floordiv += T(1);
    } else {
        floordiv = copysign(T(0), a / b);
    }
    modulus = mod;
    return floordiv;
}

template <class T>
__device__ __forceinline__ T int_pow(T base, T exponent) {
    typedef typename wide_unsigned<T>::type W;
    if constexpr (is_sint_v<T>) {
        if (exponent < T(0)) {
            if (base == T(1)) return T(1);
            if (base == T(-1)) return (exponent & T(1)) ? T(-1) : T(1);
            return T(0);
        }
    }
    unsigned long long e = static_cast<unsigned long long>(exponent);
    W result = 1, b = static_cast<W>(base);
    while (e) {
        if (e & 1ULL) result *= b;
        e >>= 1;
        if (e) b *= b;
    }
    return static_cast<T>(result);
}

}  // namespace gp

struct op_floor_divide {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (gp::is_int_v<T>) {
            return gp::int_floor_divide(a, b);
        } else {
            // x // 0 and a single infinite operand: floor(x1 / x2) as the spec prefers
            // (inf // 2 is inf, 1 // -inf is -0; NumPy gives NaN and -1 there)
            if (b == T(0) || isinf(a) != isinf(b)) return a / b;
            T mod;
            return gp::float_divmod(a, b, mod);
        }
    }
};

struct op_remainder {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (gp::is_int_v<T>) {
            return gp::int_remainder(a, b);
        } else {
            if (b == T(0)) return fmod(a, b);
            T mod;
            gp::float_divmod(a, b, mod);
            return mod;
        }
    }
};

struct op_bitwise_left_shift {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        typedef typename gp::wide_unsigned<T>::type W;
        if (static_cast<unsigned long long>(b) >= 8ULL * sizeof(T)) return T(0);  // negative counts too
        return static_cast<T>(static_cast<W>(a) << static_cast<int>(b));
    }
};

struct op_bitwise_right_shift {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        if (static_cast<unsigned long long>(b) >= 8ULL * sizeof(T)) {
            if constexpr (gp::is_sint_v<T>) return a < T(0) ? T(-1) : T(0);
            else return T(0);
        }
        return static_cast<T>(a >> static_cast<int>(b));
    }
};
