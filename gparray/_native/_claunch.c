/* Compiled kernel launches (optional; gparray/_kernels/_launcher.py falls back to Python).
 *
 * A Launch holds one kernel's CUfunction and the layout of its parameter buffer, given as
 * the little-endian struct format the Python launcher derived for it ("<" then pads "Nx"
 * and one code per value: ?bBhHiIqQefd, or "Ns" for a run of N raw bytes). Calling it
 * packs the values straight into a stack buffer and calls cuLaunchKernel through the
 * `extra` argument (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE). No NumPy scalars, no struct
 * module, no per-thread Python buffer.
 *
 *     Launch(func_ptr, fmt, size, param_offsets)(grid, block, values, shared_mem, stream)
 *
 *     Launch(func_ptr, fmt, size, param_offsets, pdl=0)
 *
 * pdl=1: the kernel is the programmatic dependent of the one before it on the stream
 * (cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION; the kernel
 * itself waits with griddepcontrol.wait before it touches memory). A driver without
 * cuLaunchKernelEx, or one that refuses the attribute, gets plain launches (always correct:
 * the wait is then a no-op behind the stream's order).
 *
 * libcuda is opened with dlopen at the first call (CuPy has loaded it by then), so
 * importing this module needs no driver and no GPU. Failures call back into Python:
 * gparray._kernels._launcher._driver_error(status) raises CuPy's CUDADriverError; a thread
 * with no current CUDA context (status 201) gets _launcher._bind_context() and one retry;
 * a driver that rejects the packed buffer (status 1) switches every Launch to kernelParams.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_claunch.h"

#if PY_VERSION_HEX < 0x030B0000
#define PyFloat_Pack2 _PyFloat_Pack2
#endif


cu_launch_t cu_launch = NULL;
cu_launch_ex_t cu_launch_ex = NULL;  /* cuLaunchKernelEx (optional) */
int pdl_ok = 1;                      /* 0 once the driver refused the attribute */
static unsigned long long pdl_count = 0;    /* launches made with the attribute */
cu_ctx_get_t cu_ctx_get = NULL;  /* cuCtxGetCurrent (optional) */
void *stub_ctx = NULL;           /* _stub_context: the context the stand-in answers */
cu_ctx_get_t saved_ctx_get = NULL;  /* the driver's, while the stand-in is in place */
int ctx_stubbed = 0;
static _Thread_local int ctx_checked = 0;  /* this host thread has a current context */
int use_extra = 1;          /* 0 once the driver rejected a packed buffer */
static PyObject *on_error = NULL;  /* _launcher._driver_error */
static PyObject *on_context = NULL;  /* _launcher._bind_context */

static int load_driver(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL) h = dlopen("libcuda.so.1", RTLD_NOW);
    if (h == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "gparray launch: cannot open libcuda.so.1");
        return -1;
    }
    cu_launch = (cu_launch_t)dlsym(h, "cuLaunchKernel");
    if (cu_launch == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "gparray launch: libcuda.so.1 has no cuLaunchKernel");
        return -1;
    }
    cu_launch_ex = (cu_launch_ex_t)dlsym(h, "cuLaunchKernelEx");
    cu_ctx_get_t g = (cu_ctx_get_t)dlsym(h, "cuCtxGetCurrent");
    if (ctx_stubbed)
        saved_ctx_get = g;
    else
        cu_ctx_get = g;
    return 0;
}

/* ------------------------------------------------------------------------- layout parsing */
static int parse_fmt(Launch *self, const char *fmt, Py_ssize_t size) {
    Py_ssize_t off = 0, n = 0;
    const char *p = fmt;
    if (*p == '<') p++;
    while (*p) {
        Py_ssize_t count = 1;
        if (*p >= '0' && *p <= '9') {
            count = 0;
            while (*p >= '0' && *p <= '9') count = count * 10 + (*p++ - '0');
        }
        char c = *p++;
        int kind, width;
        switch (c) {
            case 'x': off += count; continue;
            case 's': kind = V_BYTES; width = (int)count; count = 1; break;
            case '?': kind = V_BOOL; width = 1; break;
            case 'b': kind = V_I8; width = 1; break;
            case 'B': kind = V_U8; width = 1; break;
            case 'h': kind = V_I16; width = 2; break;
            case 'H': kind = V_U16; width = 2; break;
            case 'i': kind = V_I32; width = 4; break;
            case 'I': kind = V_U32; width = 4; break;
            case 'q': kind = V_I64; width = 8; break;
            case 'Q': kind = V_U64; width = 8; break;
            case 'e': kind = V_F16; width = 2; break;
            case 'f': kind = V_F32; width = 4; break;
            case 'd': kind = V_F64; width = 8; break;
            default:
                PyErr_Format(PyExc_ValueError, "Launch: unsupported format code %c", c);
                return -1;
        }
        for (Py_ssize_t i = 0; i < count; i++) {
            if (n >= GP_MAXVALS || off + width > GP_BUFSIZE) {
                PyErr_SetString(PyExc_ValueError, "Launch: parameter layout too large");
                return -1;
            }
            self->kind[n] = (unsigned char)kind;
            self->off[n] = (uint16_t)off;
            self->len[n] = (uint16_t)width;
            off += width;
            n++;
        }
    }
    if (off > size || size > GP_BUFSIZE) {
        PyErr_SetString(PyExc_ValueError, "Launch: format longer than the buffer size");
        return -1;
    }
    self->nvals = n;
    self->size = size;
    return 0;
}

static PyObject *Launch_new(PyTypeObject *type, PyObject *args, PyObject *kwds);
static PyObject *Launch_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames);

static PyObject *Launch_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    unsigned long long func;
    const char *fmt;
    Py_ssize_t size;
    PyObject *poffs;
    int pdl = 0;
    if (!PyArg_ParseTuple(args, "KsnO|i", &func, &fmt, &size, &poffs, &pdl)) return NULL;
    PyObject *seq = PySequence_Fast(poffs, "Launch: param_offsets must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t np_ = PySequence_Fast_GET_SIZE(seq);
    if (np_ > GP_MAXPARAMS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "Launch: too many parameters");
        return NULL;
    }
    Launch *self = (Launch *)type->tp_alloc(type, 0);
    if (self == NULL) { Py_DECREF(seq); return NULL; }
    self->func = (void *)(uintptr_t)func;
    self->nparams = np_;
    self->pdl = pdl != 0;
    for (Py_ssize_t i = 0; i < np_; i++) {
        Py_ssize_t o = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i));
        if (o < 0 || o >= GP_BUFSIZE) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Launch: bad parameter offset");
            Py_DECREF(seq);
            Py_DECREF(self);
            return NULL;
        }
        self->poff[i] = (uint16_t)o;
    }
    Py_DECREF(seq);
    if (parse_fmt(self, fmt, size) < 0) { Py_DECREF(self); return NULL; }
    self->vectorcall = Launch_vectorcall;
    return (PyObject *)self;
}

/* ------------------------------------------------------------------------- packing */
static int as_int64(PyObject *o, long long *v) {
    if (PyLong_CheckExact(o)) {
        *v = PyLong_AsLongLong(o);
    } else {
        PyObject *i = PyNumber_Index(o);
        if (i == NULL) return -1;
        *v = PyLong_AsLongLong(i);
        Py_DECREF(i);
    }
    return (*v == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int as_uint64(PyObject *o, unsigned long long *v) {
    PyObject *i = o;
    if (!PyLong_CheckExact(o)) {
        i = PyNumber_Index(o);
        if (i == NULL) return -1;
    }
    *v = PyLong_AsUnsignedLongLong(i);
    if (i != o) Py_DECREF(i);
    return (*v == (unsigned long long)-1 && PyErr_Occurred()) ? -1 : 0;
}

static int range_error(Py_ssize_t i) {
    PyErr_Format(PyExc_OverflowError, "Launch: value %zd out of range for its parameter type", i);
    return -1;
}

int gp_pack_one(const Launch *self, Py_ssize_t i, PyObject *o, char *buf) {
    char *dst = buf + self->off[i];
    long long s;
    unsigned long long u;
    double d;
    switch (self->kind[i]) {
        case V_BOOL: {
            int t = PyObject_IsTrue(o);
            if (t < 0) return -1;
            *(uint8_t *)dst = (uint8_t)t;
            return 0;
        }
        case V_I8: if (as_int64(o, &s)) return -1; if (s < INT8_MIN || s > INT8_MAX) return range_error(i);
                   *(int8_t *)dst = (int8_t)s; return 0;
        case V_I16: if (as_int64(o, &s)) return -1; if (s < INT16_MIN || s > INT16_MAX) return range_error(i);
                    memcpy(dst, &(int16_t){(int16_t)s}, 2); return 0;
        case V_I32: if (as_int64(o, &s)) return -1; if (s < INT32_MIN || s > INT32_MAX) return range_error(i);
                    memcpy(dst, &(int32_t){(int32_t)s}, 4); return 0;
        case V_I64: if (as_int64(o, &s)) return -1; memcpy(dst, &s, 8); return 0;
        case V_U8: if (as_uint64(o, &u)) return -1; if (u > UINT8_MAX) return range_error(i);
                   *(uint8_t *)dst = (uint8_t)u; return 0;
        case V_U16: if (as_uint64(o, &u)) return -1; if (u > UINT16_MAX) return range_error(i);
                    memcpy(dst, &(uint16_t){(uint16_t)u}, 2); return 0;
        case V_U32: if (as_uint64(o, &u)) return -1; if (u > UINT32_MAX) return range_error(i);
                    memcpy(dst, &(uint32_t){(uint32_t)u}, 4); return 0;
        case V_U64: if (as_uint64(o, &u)) return -1; memcpy(dst, &u, 8); return 0;
        case V_F16:
            d = PyFloat_AsDouble(o);
            if (d == -1.0 && PyErr_Occurred()) return -1;
            return PyFloat_Pack2(d, dst, 1);
        case V_F32: {
            d = PyFloat_AsDouble(o);
            if (d == -1.0 && PyErr_Occurred()) return -1;
            float f = (float)d;
            memcpy(dst, &f, 4);
            return 0;
        }
        case V_F64:
            d = PyFloat_AsDouble(o);
            if (d == -1.0 && PyErr_Occurred()) return -1;
            memcpy(dst, &d, 8);
            return 0;
        default: {  /* V_BYTES: a bytes object (or any buffer) of exactly len bytes */
            Py_buffer view;
            if (PyBytes_CheckExact(o)) {
                if (PyBytes_GET_SIZE(o) != self->len[i]) goto bad_len;
                memcpy(dst, PyBytes_AS_STRING(o), self->len[i]);
                return 0;
            }
            if (PyObject_GetBuffer(o, &view, PyBUF_SIMPLE) < 0) return -1;
            if (view.len != self->len[i]) { PyBuffer_Release(&view); goto bad_len; }
            memcpy(dst, view.buf, self->len[i]);
            PyBuffer_Release(&view);
            return 0;
        bad_len:
            PyErr_Format(PyExc_ValueError, "Launch: value %zd must be %d bytes", i, (int)self->len[i]);
            return -1;
        }
    }
}

/* ------------------------------------------------------------------------- launching */
/* the launch as the programmatic dependent of the stream's previous kernel: a status, or -1
 * when it was not made (no cuLaunchKernelEx, or the driver refused the attribute once) */
static int launch_pdl(const Launch *self, unsigned grid, unsigned block, unsigned smem, void *stream, char *buf) {
    if (!pdl_ok || cu_launch_ex == NULL) return -1;
    cu_attr_t attr;
    memset(&attr, 0, sizeof attr);
    attr.id = GP_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.i = 1;
    cu_config_t cfg = {grid, 1, 1, block, 1, 1, smem, stream, &attr, 1};
    size_t size = (size_t)self->size;
    void *extra[5] = {(void *)1, buf, (void *)2, &size, (void *)0};
    void *params[GP_MAXPARAMS];
    for (Py_ssize_t i = 0; i < self->nparams; i++) params[i] = buf + self->poff[i];
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = use_extra ? cu_launch_ex(&cfg, self->func, NULL, extra) : cu_launch_ex(&cfg, self->func, params, NULL);
    Py_END_ALLOW_THREADS
    if (st == 1 || st == 801) {  /* CUDA_ERROR_INVALID_VALUE / _NOT_SUPPORTED: plain launches from now on */
        pdl_ok = 0;
        return -1;
    }
    if (st == 0) pdl_count++;
    return st;
}

static int do_launch(const Launch *self, unsigned grid, unsigned block, unsigned smem, void *stream, char *buf) {
    int st;
    size_t size = (size_t)self->size;
    if (self->pdl && (st = launch_pdl(self, grid, block, smem, stream, buf)) >= 0) return st;
    if (use_extra) {
        void *extra[5] = {(void *)1, buf, (void *)2, &size, (void *)0};
        Py_BEGIN_ALLOW_THREADS
        st = cu_launch(self->func, grid, 1, 1, block, 1, 1, smem, stream, NULL, extra);
        Py_END_ALLOW_THREADS
        if (st != 1) return st;
        use_extra = 0;  /* CUDA_ERROR_INVALID_VALUE: this driver wants kernelParams */
    }
    void *params[GP_MAXPARAMS];
    for (Py_ssize_t i = 0; i < self->nparams; i++) params[i] = buf + self->poff[i];
    Py_BEGIN_ALLOW_THREADS
    st = cu_launch(self->func, grid, 1, 1, block, 1, 1, smem, stream, params, NULL);
    Py_END_ALLOW_THREADS
    return st;
}

static PyObject *call_hook(PyObject *hook, int status) {
    if (hook == NULL) {
        PyErr_Format(PyExc_RuntimeError, "gparray launch: cuLaunchKernel failed with status %d", status);
        return NULL;
    }
    PyObject *a = PyLong_FromLong(status);
    if (a == NULL) return NULL;
    PyObject *r = PyObject_CallOneArg(hook, a);
    Py_DECREF(a);
    return r;
}

/* pack a tuple or list of values into buf (padding zeroed): 0, or -1 with an exception set */
static int pack_values(const Launch *self, PyObject *vals, char *buf) {
    if (!PyTuple_Check(vals) && !PyList_Check(vals)) {
        PyErr_SetString(PyExc_TypeError, "Launch: values must be a tuple or list");
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(vals);
    if (n != self->nvals) {
        PyErr_Format(PyExc_TypeError, "Launch: expected %zd values, got %zd", self->nvals, n);
        return -1;
    }
    memset(buf, 0, (size_t)self->size);
    PyObject **items = PySequence_Fast_ITEMS(vals);
    for (Py_ssize_t i = 0; i < n; i++)
        if (gp_pack_one(self, i, items[i], buf) < 0) return -1;
    return 0;
}

int gp_current_ctx(void **ctx) {
    *ctx = NULL;
    if (cu_ctx_get == NULL) return 0;
    return cu_ctx_get(ctx) == 0 ? 0 : -1;
}

int gp_launch_packed(const Launch *self, unsigned grid, unsigned block, unsigned smem, void *stream, char *buf) {
    if (cu_launch == NULL && load_driver() < 0) return -1;
    if (!ctx_checked) {  /* a new host thread: bind its context first (no failed launch) */
        void *ctx = NULL;
        if (cu_ctx_get != NULL && cu_ctx_get(&ctx) == 0 && ctx == NULL) {
            PyObject *r = call_hook(on_context, 201);
            if (r == NULL) return -1;
            Py_DECREF(r);
        }
        ctx_checked = 1;
    }
    int st = do_launch(self, grid, block, smem, stream, buf);
    if (st == 201) {  /* CUDA_ERROR_INVALID_CONTEXT: a new host thread; bind it, then retry */
        PyObject *r = call_hook(on_context, st);
        if (r == NULL) return -1;
        Py_DECREF(r);
        st = do_launch(self, grid, block, smem, stream, buf);
    }
    if (st != 0) {
        PyObject *r = call_hook(on_error, st);  /* raises */
        Py_XDECREF(r);
        if (!PyErr_Occurred()) PyErr_Format(PyExc_RuntimeError, "gparray launch: cuLaunchKernel failed with status %d", st);
        return -1;
    }
    return 0;
}

/* self(grid, block, values, shared_mem, stream) */
static PyObject *Launch_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Launch *self = (Launch *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 5 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "Launch(grid, block, values, shared_mem, stream): 5 positional arguments");
        return NULL;
    }
    unsigned long grid = PyLong_AsUnsignedLong(args[0]);
    unsigned long block = PyLong_AsUnsignedLong(args[1]);
    unsigned long smem = PyLong_AsUnsignedLong(args[3]);
    unsigned long long stream = PyLong_AsUnsignedLongLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (grid > UINT32_MAX || block > UINT32_MAX || smem > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "Launch: grid, block or shared_mem out of range");
        return NULL;
    }
    _Alignas(16) char buf[GP_BUFSIZE];
    if (pack_values(self, args[2], buf) < 0) return NULL;
    if (gp_launch_packed(self, (unsigned)grid, (unsigned)block, (unsigned)smem, (void *)(uintptr_t)stream, buf) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* self.pack(values) -> bytes: the parameter buffer a call with these values would pass */
static PyObject *Launch_pack(PyObject *op, PyObject *vals) {
    Launch *self = (Launch *)op;
    _Alignas(16) char buf[GP_BUFSIZE];
    if (pack_values(self, vals, buf) < 0) return NULL;
    return PyBytes_FromStringAndSize(buf, self->size);
}

/* self.repeat(n, grid, block, values, shared_mem, stream, params) -> status: n launches in
 * a C loop (tools/dispatch_profile.py times the driver alone; params=True passes
 * kernelParams instead of the packed buffer) */
static PyObject *Launch_repeat(PyObject *op, PyObject *args) {
    Launch *self = (Launch *)op;
    Py_ssize_t n;
    unsigned int grid, block, smem;
    unsigned long long stream;
    PyObject *vals;
    int params;
    if (!PyArg_ParseTuple(args, "nIIOIKp", &n, &grid, &block, &vals, &smem, &stream, &params)) return NULL;
    _Alignas(16) char buf[GP_BUFSIZE];
    if (pack_values(self, vals, buf) < 0) return NULL;
    if (cu_launch == NULL && load_driver() < 0) return NULL;
    void *pp[GP_MAXPARAMS];
    for (Py_ssize_t i = 0; i < self->nparams; i++) pp[i] = buf + self->poff[i];
    size_t size = (size_t)self->size;
    void *extra[5] = {(void *)1, buf, (void *)2, &size, (void *)0};
    int st = 0;
    void *s = (void *)(uintptr_t)stream;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && st == 0; i++)
        st = params ? cu_launch(self->func, grid, 1, 1, block, 1, 1, smem, s, pp, NULL)
                    : cu_launch(self->func, grid, 1, 1, block, 1, 1, smem, s, NULL, extra);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(st);
}

static PyMethodDef Launch_methods[] = {
    {"repeat", Launch_repeat, METH_VARARGS, "repeat(n, grid, block, values, shared_mem, stream, params) -> status"},
    {"pack", Launch_pack, METH_O, "pack(values) -> bytes: the parameter buffer for these values (no launch)"},
    {NULL},
};

static PyObject *Launch_get_nvals(Launch *self, void *closure) { return PyLong_FromSsize_t(self->nvals); }
static PyObject *Launch_get_size(Launch *self, void *closure) { return PyLong_FromSsize_t(self->size); }

static PyGetSetDef Launch_getset[] = {
    {"nvals", (getter)Launch_get_nvals, NULL, "number of values a call takes", NULL},
    {"size", (getter)Launch_get_size, NULL, "bytes of the parameter buffer", NULL},
    {NULL},
};

PyTypeObject GpLaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gparray._native._claunch.Launch",
    .tp_basicsize = sizeof(Launch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Launch(func_ptr, fmt, size, param_offsets): call as (grid, block, values, shared_mem, stream)",
    .tp_new = Launch_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Launch, vectorcall),
    .tp_getset = Launch_getset,
    .tp_methods = Launch_methods,
};

/* set_hooks(driver_error, bind_context) */
static PyObject *set_hooks(PyObject *mod, PyObject *args) {
    PyObject *e, *c;
    if (!PyArg_ParseTuple(args, "OO", &e, &c)) return NULL;
    Py_INCREF(e);
    Py_INCREF(c);
    Py_XSETREF(on_error, e);
    Py_XSETREF(on_context, c);
    Py_RETURN_NONE;
}

static PyObject *uses_extra(PyObject *mod, PyObject *unused) { return PyBool_FromLong(use_extra); }

static PyObject *pdl_launches(PyObject *mod, PyObject *unused) {
    return Py_BuildValue("(KO)", pdl_count, pdl_ok && (cu_launch_ex != NULL || cu_launch == NULL) ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"set_hooks", set_hooks, METH_VARARGS, "set_hooks(driver_error, bind_context): Python callbacks on failure"},
    {"_stub_driver", gp_stub_driver, METH_VARARGS, "_stub_driver(log, status0=0, status1=0): record launches (tests)"},
    {"_stub_context", gp_stub_context, METH_O, "_stub_context(value): cuCtxGetCurrent answers value (tests; None: undo)"},
    {"uses_extra", uses_extra, METH_NOARGS, "True while launches pass the packed buffer through `extra`"},
    {"pdl_launches", pdl_launches, METH_NOARGS,
     "(launches made as programmatic dependents, whether such launches are still made)"},
    {NULL, NULL, 0, NULL},
};

/* readies type t and adds it to module m as `name` (a new reference the module keeps): 0, or -1
 * with an exception set */
int gp_add_type(PyObject *m, PyTypeObject *t, const char *name) {
    if (PyType_Ready(t) < 0) return -1;
    Py_INCREF(t);
    if (PyModule_AddObject(m, name, (PyObject *)t) < 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_claunch", "Compiled kernel launches for gparray.", -1, methods,
};

PyMODINIT_FUNC PyInit__claunch(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    if (gp_add_type(m, &GpLaunchType, "Launch") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (gp_ops_init(m) < 0 || gp_block_init(m) < 0 || gp_join_init(m) < 0 || gp_prof_init(m) < 0 ||
        gp_user_init(m) < 0 || gp_blas_init(m) < 0 || gp_fft_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
