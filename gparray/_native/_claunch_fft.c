/* The cuFFT execution of a repeat transform, in C (gparray/fft/_transforms.py: the direct
 * calls, whose recipe is one cuFFT execution into a new buffer and nothing else).
 *
 *   FftCall(fn, direction, nbytes, shape, strides, contig, dtype, device, pool)
 *   call(x, handle) -> the result Array, an int (the nonzero cufftResult; the result block
 *                      went back to the pool), or None (the compiled path is not configured)
 *
 * ``fn``: the address of cufftExecC2C / Z2Z (``direction`` CUFFT_FORWARD -1 or INVERSE 1) or
 * of cufftExecR2C / D2Z / C2R / Z2D (``direction`` 0: those take none) in the libcufft
 * CuPy loaded (gparray/_engine/_fft.py finds it). A call takes the result block of
 * ``nbytes`` on the current stream as every compiled call does (gp_result_block: one of the
 * last deferred frees of the same request there, else pool.malloc), builds the Array (``shape``,
 * byte ``strides``; ``contig``: they are C order) and makes the one execution on plan
 * ``handle``, which the caller has checked is cached on this thread and bound to the current
 * stream (gparray/_engine/_fft.py: ready_plan). It makes the same cuFFT call CuPy's binding
 * makes (which releases the GIL for it: cuFFT only enqueues the kernels, a few microseconds,
 * so here the GIL is kept), without the Python path's result allocation and Array
 * construction (about half of a repeat call's host time on the H200).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

#include "_claunch.h"

typedef int (*exec_c2c_fn)(int plan, void *in, void *out, int direction);
typedef int (*exec_real_fn)(int plan, void *in, void *out);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    void *fn;
    int direction;
    int contig;
    PyObject *nbytes, *shape, *strides, *dtype, *device;
    PyObject *pool, *malloc, *deferred, *devid;
} FftCall;

static PyObject *FftCall_call(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    FftCall *f = (FftCall *)self_;
    if (PyVectorcall_NARGS(nargsf) != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "FftCall(x, handle)");
        return NULL;
    }
    PyTypeObject *at = gp_array_type();
    if (at == NULL) Py_RETURN_NONE;
    if (Py_TYPE(args[0]) != at) {
        PyErr_SetString(PyExc_TypeError, "FftCall: x must be a gparray Array");
        return NULL;
    }
    long handle = PyLong_AsLong(args[1]);
    if (handle == -1 && PyErr_Occurred()) return NULL;
    if (handle <= 0 || handle > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "FftCall: not a live cuFFT plan handle");
        return NULL;
    }
    unsigned long long in, outp;
    if (gp_array_ptr(args[0], &in) < 0) return NULL;
    PyObject *sptr = NULL;
    PyObject *blk = gp_result_block(f->pool, f->malloc, f->deferred, f->devid, f->nbytes, &sptr);
    if (blk == NULL) return NULL;
    Py_DECREF(sptr);
    if (gp_block_ptr(blk, &outp) < 0) goto fail;
    int st;
    if (f->direction)
        st = ((exec_c2c_fn)f->fn)((int)handle, (void *)(uintptr_t)in, (void *)(uintptr_t)outp, f->direction);
    else
        st = ((exec_real_fn)f->fn)((int)handle, (void *)(uintptr_t)in, (void *)(uintptr_t)outp);
    if (st != 0) {
        Py_DECREF(blk);  /* back to the pool, stream-ordered */
        return PyLong_FromLong(st);
    }
    return gp_array_build_as(blk, f->shape, f->strides, f->dtype, f->device, f->contig ? Py_True : Py_None);
fail:
    Py_DECREF(blk);
    return NULL;
}

static void FftCall_dealloc(FftCall *self) {
    Py_XDECREF(self->nbytes);
    Py_XDECREF(self->shape);
    Py_XDECREF(self->strides);
    Py_XDECREF(self->dtype);
    Py_XDECREF(self->device);
    Py_XDECREF(self->pool);
    Py_XDECREF(self->malloc);
    Py_XDECREF(self->deferred);
    Py_XDECREF(self->devid);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *FftCall_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *fn, *nbytes, *shape, *strides, *dtype, *device, *pool;
    int direction, contig;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "FftCall: no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OiO!O!O!pOOO", &fn, &direction, &PyLong_Type, &nbytes, &PyTuple_Type, &shape,
                          &PyTuple_Type, &strides, &contig, &dtype, &device, &pool))
        return NULL;
    if (direction != 0 && direction != -1 && direction != 1) {
        PyErr_SetString(PyExc_ValueError, "FftCall: direction is -1, 1 or 0 (a real transform)");
        return NULL;
    }
    if (PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides)) {
        PyErr_SetString(PyExc_ValueError, "FftCall: shape and strides differ in length");
        return NULL;
    }
    long long nb = PyLong_AsLongLong(nbytes);
    if (nb == -1 && PyErr_Occurred()) return NULL;
    if (nb <= 0) {
        PyErr_SetString(PyExc_ValueError, "FftCall: the result needs at least one byte");
        return NULL;
    }
    unsigned long long a = PyLong_AsUnsignedLongLong(fn);
    if (a == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    if (a == 0) {
        PyErr_SetString(PyExc_ValueError, "FftCall: null function address");
        return NULL;
    }
    FftCall *f = (FftCall *)type->tp_alloc(type, 0);
    if (f == NULL) return NULL;
    f->vectorcall = FftCall_call;
    f->fn = (void *)(uintptr_t)a;
    f->direction = direction;
    f->contig = contig;
    f->nbytes = Py_NewRef(nbytes);
    f->shape = Py_NewRef(shape);
    f->strides = Py_NewRef(strides);
    f->dtype = Py_NewRef(dtype);
    f->device = Py_NewRef(device);
    f->pool = Py_NewRef(pool);
    if (gp_pool_refs(pool, device, &f->malloc, &f->deferred, &f->devid) < 0) {
        Py_DECREF(f);
        return NULL;
    }
    return (PyObject *)f;
}

static PyTypeObject FftCallType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gparray._native._claunch.FftCall",
    .tp_basicsize = sizeof(FftCall),
    .tp_dealloc = (destructor)FftCall_dealloc,
    .tp_vectorcall_offset = offsetof(FftCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "The cuFFT execution of a repeat transform: FftCall(fn, direction, nbytes, shape, strides, contig, "
              "dtype, device, pool)(x, handle) -> the result Array, a nonzero cufftResult, or None",
    .tp_new = FftCall_new,
};

int gp_fft_init(PyObject *m) { return gp_add_type(m, &FftCallType, "FftCall"); }
