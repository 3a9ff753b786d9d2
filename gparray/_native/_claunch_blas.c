/* The cuBLAS calls of one matrix product, in C (gparray/_engine/_blas.py: GemmCall.native).
 *
 *   Gemm(fn, batched, ints, one, zero, offsets, strides, inner, keep)
 *   gemm(handle, a_ptr, b_ptr, c_ptr) -> 0, or the first nonzero cublasStatus_t
 *
 * ``fn``: the address of cublas<t>gemm_v2 (batched false) or cublas<t>gemmStridedBatched in
 * the process's libcublas (the one CuPy loaded; _blas.py finds it); ``ints``: (transa,
 * transb, m, n, k, lda, ldb, ldc) of the swapped problem _blas.py sets up; ``one``/``zero``:
 * addresses of the host scalars (pointer mode host), kept alive by ``keep``; ``offsets``:
 * the byte offsets (A, B, C) of each call of the host loop over the plan's outer
 * dimensions; ``strides``: the batch strides in elements (A, B, C) and ``inner`` the batch
 * count of a strided-batched call. A call makes, per offset, exactly the call the ctypes
 * path of _blas.launch makes (B's pointer first: cuBLAS is column-major), without ctypes'
 * per-argument conversions. The four gemm types share one C signature (every scalar and
 * matrix a pointer), so one function type serves them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "_claunch.h"

typedef int (*gemm_fn)(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *a, int lda,
                       const void *b, int ldb, const void *beta, void *c, int ldc);
typedef int (*gemm_sb_fn)(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *a, int lda,
                          long long sa, const void *b, int ldb, long long sb, const void *beta, void *c, int ldc,
                          long long sc, int count);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    void *fn;
    int batched;
    int ta, tb, m, n, k, lda, ldb, ldc;
    const void *one, *zero;
    long long sa, sb, sc;
    int inner;
    Py_ssize_t runs;
    long long *ofs;  /* 3 per run: A, B, C */
    PyObject *keep;
} Gemm;

static int as_ptr(PyObject *o, unsigned long long *p) {
    *p = PyLong_AsUnsignedLongLong(o);
    return (*p == (unsigned long long)-1 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *Gemm_call(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Gemm *g = (Gemm *)self_;
    if (PyVectorcall_NARGS(nargsf) != 4 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "Gemm(handle, a_ptr, b_ptr, c_ptr)");
        return NULL;
    }
    unsigned long long h, a, b, c;
    if (as_ptr(args[0], &h) < 0 || as_ptr(args[1], &a) < 0 || as_ptr(args[2], &b) < 0 || as_ptr(args[3], &c) < 0)
        return NULL;
    for (Py_ssize_t r = 0; r < g->runs; r++) {
        const long long *o = g->ofs + 3 * r;
        const char *pa = (const char *)(uintptr_t)a + o[0], *pb = (const char *)(uintptr_t)b + o[1];
        char *pc = (char *)(uintptr_t)c + o[2];
        int st;
        if (g->batched)
            st = ((gemm_sb_fn)g->fn)((void *)(uintptr_t)h, g->ta, g->tb, g->m, g->n, g->k, g->one, pb, g->lda, g->sb,
                                     pa, g->ldb, g->sa, g->zero, pc, g->ldc, g->sc, g->inner);
        else
            st = ((gemm_fn)g->fn)((void *)(uintptr_t)h, g->ta, g->tb, g->m, g->n, g->k, g->one, pb, g->lda, pa,
                                  g->ldb, g->zero, pc, g->ldc);
        if (st != 0) return PyLong_FromLong(st);
    }
    return PyLong_FromLong(0);
}

static void Gemm_dealloc(Gemm *self) {
    PyMem_Free(self->ofs);
    Py_XDECREF(self->keep);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int int_item(PyObject *t, Py_ssize_t i, int *v) {
    long x = PyLong_AsLong(PyTuple_GET_ITEM(t, i));
    if (x == -1 && PyErr_Occurred()) return -1;
    if (x < INT_MIN || x > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "Gemm: an int argument exceeds 32 bits");
        return -1;
    }
    *v = (int)x;
    return 0;
}

static PyObject *Gemm_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *fn, *ints, *one, *zero, *offsets, *strides, *keep;
    int batched, inner;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Gemm: no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OpO!OOO!O!iO", &fn, &batched, &PyTuple_Type, &ints, &one, &zero, &PyTuple_Type,
                          &offsets, &PyTuple_Type, &strides, &inner, &keep))
        return NULL;
    if (PyTuple_GET_SIZE(ints) != 8 || PyTuple_GET_SIZE(strides) != 3 || inner < 1) {
        PyErr_SetString(PyExc_ValueError, "Gemm: 8 ints, 3 strides and a batch count >= 1 expected");
        return NULL;
    }
    unsigned long long f, p1, p0;
    if (as_ptr(fn, &f) < 0 || as_ptr(one, &p1) < 0 || as_ptr(zero, &p0) < 0) return NULL;
    if (f == 0 || p1 == 0 || p0 == 0) {
        PyErr_SetString(PyExc_ValueError, "Gemm: null function or scalar address");
        return NULL;
    }
    Gemm *g = (Gemm *)type->tp_alloc(type, 0);
    if (g == NULL) return NULL;
    g->vectorcall = Gemm_call;
    g->fn = (void *)(uintptr_t)f;
    g->batched = batched;
    g->one = (const void *)(uintptr_t)p1;
    g->zero = (const void *)(uintptr_t)p0;
    g->inner = inner;
    g->keep = Py_NewRef(keep);
    int *dst[8] = {&g->ta, &g->tb, &g->m, &g->n, &g->k, &g->lda, &g->ldb, &g->ldc};
    for (int i = 0; i < 8; i++)
        if (int_item(ints, i, dst[i]) < 0) goto fail;
    long long *sd[3] = {&g->sa, &g->sb, &g->sc};
    for (int i = 0; i < 3; i++) {
        *sd[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i));
        if (*sd[i] == -1 && PyErr_Occurred()) goto fail;
    }
    g->runs = PyTuple_GET_SIZE(offsets);
    g->ofs = PyMem_Malloc((size_t)(g->runs ? g->runs : 1) * 3 * sizeof(long long));
    if (g->ofs == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t r = 0; r < g->runs; r++) {
        PyObject *t = PyTuple_GET_ITEM(offsets, r);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) {
            PyErr_SetString(PyExc_ValueError, "Gemm: each offset is (A, B, C)");
            goto fail;
        }
        for (int j = 0; j < 3; j++) {
            g->ofs[3 * r + j] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, j));
            if (g->ofs[3 * r + j] == -1 && PyErr_Occurred()) goto fail;
        }
    }
    return (PyObject *)g;
fail:
    Py_DECREF(g);
    return NULL;
}

static PyTypeObject GemmType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gparray._native._claunch.Gemm",
    .tp_basicsize = sizeof(Gemm),
    .tp_dealloc = (destructor)Gemm_dealloc,
    .tp_vectorcall_offset = offsetof(Gemm, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "The cuBLAS gemm calls of one matrix product: Gemm(fn, batched, ints, one, zero, offsets, strides, "
              "inner, keep)(handle, a_ptr, b_ptr, c_ptr) -> 0 or a cublasStatus_t",
    .tp_new = Gemm_new,
};

int gp_blas_init(PyObject *m) { return gp_add_type(m, &GemmType, "Gemm"); }
