// gparray kernel family "elementwise": unary, binary, scalar-operand and fill kernels.
// Instances are named by name_expressions built in gparray/_engine/_elementwise.py, e.g.
//   gp_binary_contig<op_add, float, float, float, float>
#include "gp/elementwise.cuh"
#include "gp/functors.cuh"
