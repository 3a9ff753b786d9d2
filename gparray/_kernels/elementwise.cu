// gparray kernel family "elementwise": unary, binary, scalar-operand and fill kernels.
// Instances are named by name_expressions built in gparray/_engine/_elementwise.py, e.g.
//   gp_binary_contig<op_add, float, float, float, float>
// Functors: functors.cuh (arithmetic, comparison, logical, bitwise, rounding),
// functors_int.cuh (floor_divide, remainder, shifts), functors_math.cuh (exp, log, trig,
// pow, complex math).
#include "gp/elementwise.cuh"
#include "gp/functors.cuh"
#include "gp/functors_int.cuh"
#include "gp/functors_math.cuh"
