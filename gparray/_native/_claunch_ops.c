/* Compiled fast paths of the elementwise functions and Array operators.
 *
 * The Python ops (gparray/_array/_ops.py) check every call; once a combination of operand types
 * has passed the checks and launched its contiguous kernel, they record it in their Table
 * (gparray/_engine/_elementwise.py: learn_* functions). A Fast object then serves later
 * calls with the same combination entirely in C:
 *
 *   - unary:   op(x)                     x a C-contiguous Array of the recorded dtype
 *   - binary:  op(x1, x2)                two C-contiguous Arrays of one shape and device
 *   - scalar:  op(x, s) / op(s, x)       s a Python float or int within the recorded range
 *
 * on the recorded device, for a non-empty array, while the CUDA context that was current when
 * the entry was added (the device's) is current: with several GPUs, a call made while another
 * device is current goes to the Python path, which switches devices around the launch. It
 * takes the current CuPy stream of the device, a block
 * from the device's gparray pool (one of the pool's last deferred frees that was the same
 * request on the same stream, see _claunch_block.c; else its Python malloc), builds
 * the result Array (C-contiguous strides, its contiguity flag set) and launches the recorded
 * kernel with one packed buffer. Anything else goes to the Python fallback unchanged, so
 * both paths give the same results and raise the same errors.
 *
 * Fast objects are method descriptors: set on the Array class as __add__, __radd__, ... the
 * interpreter calls them with (self, other) without a Python frame.
 *
 * While a profile is active on the calling thread (gparray.cuda.profile), the launch is
 * bracketed by two CUDA events and recorded (_claunch_prof.c); entries added without a
 * kernel name are then left to the Python path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

#include "_claunch.h"

/* ------------------------------------------------------------------ the Array class */
static PyTypeObject *array_type = NULL;
static Py_ssize_t off_buf, off_offset, off_shape, off_strides, off_dtype, off_device, off_flags;
static PyObject *get_stream = NULL;  /* cupy.cuda.get_current_stream(device_id) */
static PyObject *str_ptr = NULL;
static PyObject *zero = NULL;

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

int gp_slot_offset(PyTypeObject *t, const char *name, Py_ssize_t *off) {
    PyObject *d = PyObject_GetAttrString((PyObject *)t, name);
    if (d == NULL) return -1;
    int ok = Py_TYPE(d) == &PyMemberDescr_Type;
    Py_DECREF(d);  /* the class keeps it */
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "configure: %s.%s is not a __slots__ member", t->tp_name, name);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "configure: %s.%s is not an object slot", t->tp_name, name);
        return -1;
    }
    *off = m->offset;
    return 0;
}

/* configure(Array, get_current_stream) */
static PyObject *configure(PyObject *mod, PyObject *args) {
    PyObject *t, *gs;
    if (!PyArg_ParseTuple(args, "OO", &t, &gs)) return NULL;
    if (t == Py_None) {  /* configure(None, None): every Fast falls back */
        Py_CLEAR(array_type);
        Py_CLEAR(get_stream);
        Py_RETURN_NONE;
    }
    if (!PyType_Check(t) || !PyCallable_Check(gs)) {
        PyErr_SetString(PyExc_TypeError, "configure: expected (Array class, get_current_stream) or (None, None)");
        return NULL;
    }
    PyTypeObject *at = (PyTypeObject *)t;
    if (gp_slot_offset(at, "_buf", &off_buf) || gp_slot_offset(at, "_offset", &off_offset) ||
        gp_slot_offset(at, "_shape", &off_shape) || gp_slot_offset(at, "_strides", &off_strides) ||
        gp_slot_offset(at, "_dtype", &off_dtype) || gp_slot_offset(at, "_device", &off_device) ||
        gp_slot_offset(at, "_flags", &off_flags))
        return NULL;
    Py_INCREF(t);
    Py_INCREF(gs);
    Py_XSETREF(array_type, at);
    Py_XSETREF(get_stream, gs);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ the fast path */
/* 1 C-contiguous, 0 not, -1 error; caches the answer in the Array's _flags like
 * Array._is_c_contig (size-1 dims ignored; empty arrays count as contiguous) */
static int contig(PyObject *x, Py_ssize_t isz) {
    PyObject *f = SLOT(x, off_flags);
    if (f == Py_True) return 1;
    if (f == Py_False) return 0;
    PyObject *shape = SLOT(x, off_shape), *strides = SLOT(x, off_strides);
    if (!PyTuple_CheckExact(shape) || !PyTuple_CheckExact(strides) || PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides))
        return 0;
    Py_ssize_t nd = PyTuple_GET_SIZE(shape), acc = isz;
    int c = 1;
    for (Py_ssize_t i = nd - 1; i >= 0; i--) {
        Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (s == -1 && PyErr_Occurred()) return -1;
        if (s == 0) { c = 1; break; }
        if (s != 1 && c) {
            Py_ssize_t st = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, i));
            if (st == -1 && PyErr_Occurred()) return -1;
            if (st != acc) c = 0;
            acc *= s;
        }
    }
    PyObject *v = c ? Py_True : Py_False;
    Py_INCREF(v);
    Py_XSETREF(SLOT(x, off_flags), v);
    return c;
}

/* number of elements of a shape tuple; -1 with an exception set on error */
static Py_ssize_t numel(PyObject *shape) {
    if (!PyTuple_CheckExact(shape)) return 0;
    Py_ssize_t n = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (s < 0) return PyErr_Occurred() ? -1 : 0;
        n *= s;
    }
    return n;
}

/* the C-order byte strides of shape for the entry's output itemsize (new reference) */
static PyObject *out_strides(Entry *e, PyObject *shape) {
    if (shape == e->last_shape) {
        Py_INCREF(e->last_strides);
        return e->last_strides;
    }
    Py_ssize_t nd = PyTuple_GET_SIZE(shape), acc = e->oisz;
    PyObject *st = PyTuple_New(nd);
    if (st == NULL) return NULL;
    for (Py_ssize_t i = nd - 1; i >= 0; i--) {
        PyObject *v = PyLong_FromSsize_t(acc);
        if (v == NULL) { Py_DECREF(st); return NULL; }
        PyTuple_SET_ITEM(st, i, v);
        Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        acc *= s > 1 ? s : 1;
    }
    Py_INCREF(shape);
    Py_INCREF(st);
    Py_XSETREF(e->last_shape, shape);
    Py_XSETREF(e->last_strides, st);
    return st;
}

/* the device address of an Array's first element: _buf.ptr + _offset */
static int data_ptr(PyObject *x, unsigned long long *p) {
    PyObject *o = PyObject_GetAttr(SLOT(x, off_buf), str_ptr);
    if (o == NULL) return -1;
    unsigned long long base = PyLong_AsUnsignedLongLong(o);
    Py_DECREF(o);
    if (base == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    long long off = PyLong_AsLongLong(SLOT(x, off_offset));
    if (off == -1 && PyErr_Occurred()) return -1;
    *p = base + (unsigned long long)off;
    return 0;
}

static int scalar_in_range(Entry *e, PyObject *s) {
    if (PyFloat_CheckExact(s)) {
        if (!e->float_range) return 0;
        double d = PyFloat_AS_DOUBLE(s);
        return d >= e->flo && d <= e->fhi;  /* NaN: no */
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(s, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    if (e->float_range) return (double)v >= e->flo && (double)v <= e->fhi;
    return v >= e->ilo && v <= e->ihi;
}

/* run_entry's launch while the thread is profiled: between two events, recorded under
 * ``label`` with the bytes the Python path counts (the distinct arrays: out, x and, when
 * with_y, y). What it needs of the entry is read before any Python call (which may let
 * another thread change the table). Returns out, or NULL (out released). */
static PyObject *run_profiled(Entry *e, Launch *l, char *buf, unsigned grid, long long nn, int with_y,
                              unsigned long long stream_ptr, PyObject *out, PyObject *ps, PyObject *label) {
    long long nbytes = nn * e->oisz + nn * e->aisz + (with_y ? nn * e->bisz : 0);
    unsigned block = e->block;
    PyObject *devid = Py_NewRef(e->devid), *name = Py_NewRef(e->name), *ev0, *ev1;
    Py_INCREF(l);
    int rc = gp_prof_begin(ps, devid, stream_ptr, &ev0, &ev1);
    if (rc == 0) {
        rc = gp_launch_packed(l, grid, block, 0, (void *)(uintptr_t)stream_ptr, buf);
        if (rc < 0)
            gp_prof_abort(ps, devid, ev0, ev1);
        else
            rc = gp_prof_end(ps, label, name, grid, block, nbytes, devid, stream_ptr, ev0, ev1);
    }
    Py_DECREF(l);
    Py_DECREF(devid);
    Py_DECREF(name);
    if (rc < 0) Py_CLEAR(out);
    return out;
}

/* launch entry e over x (and y or scalar s) into a new Array of x's shape; with a profiling
 * state ps, between two events and recorded under function ``label`` (run_profiled) */
static PyObject *run_entry(Entry *e, PyObject *x, PyObject *y, PyObject *s, Py_ssize_t n, PyObject *ps,
                           PyObject *label) {
    Launch *l = e->launch;
    _Alignas(16) char buf[GP_BUFSIZE];
    unsigned long long px, py = 0, pout;
    memset(buf, 0, (size_t)l->size);  /* padding too: launches are reproducible to the byte */
    if (data_ptr(x, &px) || (y != NULL && data_ptr(y, &py))) return NULL;
    if (s != NULL && gp_pack_one(l, 2, s, buf) < 0) return NULL;
    PyObject *nbytes = PyLong_FromSsize_t(n * e->oisz);
    if (nbytes == NULL) return NULL;
    PyObject *sptr;
    PyObject *blk = gp_result_block(e->pool, e->malloc, e->deferred, e->devid, nbytes, &sptr);
    Py_DECREF(nbytes);
    if (blk == NULL) return NULL;
    unsigned long long stream_ptr = PyLong_AsUnsignedLongLong(sptr);
    Py_DECREF(sptr);
    if (stream_ptr == (unsigned long long)-1 && PyErr_Occurred()) { Py_DECREF(blk); return NULL; }
    if (gp_block_ptr(blk, &pout) < 0) { Py_DECREF(blk); return NULL; }
    PyObject *shape = SLOT(x, off_shape);
    PyObject *strides = out_strides(e, shape);
    if (strides == NULL) { Py_DECREF(blk); return NULL; }
    PyObject *out = gp_array_build(blk, shape, strides, e->odt, e->device);  /* steals blk */
    Py_DECREF(strides);
    if (out == NULL) return NULL;
    long long nn = n;
    memcpy(buf + l->off[0], &pout, 8);
    memcpy(buf + l->off[1], &px, 8);
    if (y != NULL) memcpy(buf + l->off[2], &py, 8);
    memcpy(buf + l->off[l->nvals - 1], &nn, 8);
    unsigned grid = (unsigned)((nn + e->tile - 1) / e->tile);
    if (ps != NULL)  /* y's bytes count unless y is x's memory again */
        return run_profiled(e, l, buf, grid, nn, y != NULL && !(py == px && e->bisz == e->aisz), stream_ptr, out,
                            ps, label);
    if (gp_launch_packed(l, grid, e->block, 0, (void *)(uintptr_t)stream_ptr, buf) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* whether the calling thread's current CUDA context is the one e was added under (a query of
 * the driver's thread-local state, ~20 ns; a thread without a context is not served) */
static int ctx_matches(const Entry *e) {
    void *c;
    return gp_current_ctx(&c) == 0 && c == e->ctx;
}

/* 1: *out is the result; 0: not served here; -1: error */
static int try_unary(Table *t, PyObject *x, PyObject **out, PyObject *ps, PyObject *label) {
    if (Py_TYPE(x) != array_type) return 0;
    Entry *e = gp_find(t, SLOT(x, off_dtype), NULL, SIDE_NONE, SLOT(x, off_device));
    if (e == NULL || (ps != NULL && e->name == NULL) || !ctx_matches(e)) return 0;
    Py_ssize_t n = numel(SLOT(x, off_shape));
    if (n <= 0) return (int)n;
    int c = contig(x, e->aisz);
    if (c <= 0) return c;
    *out = run_entry(e, x, NULL, NULL, n, ps, label);
    return *out ? 1 : -1;
}

static int try_binary(Table *t, PyObject *x1, PyObject *x2, PyObject **out, PyObject *ps, PyObject *label) {
    PyTypeObject *at = array_type;
    PyObject *arr, *y = NULL, *s = NULL, *b;
    int side;
    if (Py_TYPE(x1) == at) {
        arr = x1;
        if (Py_TYPE(x2) == at) {
            y = x2;
            side = SIDE_NONE;
            b = SLOT(x2, off_dtype);
        } else if (PyFloat_CheckExact(x2) || PyLong_CheckExact(x2)) {
            s = x2;
            side = SIDE_RIGHT;
            b = (PyObject *)Py_TYPE(x2);
        } else {
            return 0;
        }
    } else if (Py_TYPE(x2) == at && (PyFloat_CheckExact(x1) || PyLong_CheckExact(x1))) {
        arr = x2;
        s = x1;
        side = SIDE_LEFT;
        b = (PyObject *)Py_TYPE(x1);
    } else {
        return 0;
    }
    PyObject *dev = SLOT(arr, off_device);
    Entry *e = gp_find(t, SLOT(arr, off_dtype), b, side, dev);
    if (e == NULL || (ps != NULL && e->name == NULL) || !ctx_matches(e)) return 0;
    PyObject *shape = SLOT(arr, off_shape);
    if (y != NULL) {
        if (SLOT(y, off_device) != dev) return 0;
        PyObject *s2 = SLOT(y, off_shape);
        if (s2 != shape) {
            int eq = PyObject_RichCompareBool(shape, s2, Py_EQ);
            if (eq <= 0) return eq;
        }
    } else if (!scalar_in_range(e, s)) {
        return 0;
    }
    Py_ssize_t n = numel(shape);
    if (n <= 0) return (int)n;
    int c = contig(arr, e->aisz);
    if (c <= 0) return c;
    if (y != NULL && (c = contig(y, e->bisz)) <= 0) return c;
    *out = run_entry(e, arr, y, s, n, ps, label);
    return *out ? 1 : -1;
}

/* ------------------------------------------------------------------ for the reductions
 * (_claunch_reduce.c): the configured Array class and its slots, the stream getter */
PyTypeObject *gp_array_type(void) { return array_type; }

PyObject *gp_array_slot(PyObject *x, int slot) {
    switch (slot) {
        case GP_SLOT_SHAPE: return SLOT(x, off_shape);
        case GP_SLOT_DTYPE: return SLOT(x, off_dtype);
        default: return SLOT(x, off_device);
    }
}

int gp_array_contig(PyObject *x, Py_ssize_t isz) { return contig(x, isz); }

int gp_array_ptr(PyObject *x, unsigned long long *p) { return data_ptr(x, p); }

PyObject *gp_array_build(PyObject *blk, PyObject *shape, PyObject *strides, PyObject *dtype, PyObject *device) {
    return gp_array_build_as(blk, shape, strides, dtype, device, Py_True);
}

PyObject *gp_array_build_as(PyObject *blk, PyObject *shape, PyObject *strides, PyObject *dtype, PyObject *device,
                            PyObject *contig) {
    PyObject *out = array_type->tp_alloc(array_type, 0);
    if (out == NULL) { Py_DECREF(blk); return NULL; }
    SLOT(out, off_buf) = blk;
    SLOT(out, off_strides) = Py_NewRef(strides);
    SLOT(out, off_offset) = Py_NewRef(zero);
    SLOT(out, off_shape) = Py_NewRef(shape);
    SLOT(out, off_dtype) = Py_NewRef(dtype);
    SLOT(out, off_device) = Py_NewRef(device);
    SLOT(out, off_flags) = Py_NewRef(contig);
    return out;
}

PyObject *gp_stream_of(PyObject *devid) { return PyObject_CallOneArg(get_stream, devid); }

int gp_ctx_is(void *ctx) {
    void *c;
    return gp_current_ctx(&c) == 0 && c == ctx;
}

/* ------------------------------------------------------------------ Fast */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Table *table;
    PyObject *fallback;
    int nin;
    int reflected;
    PyObject *label;  /* the function of profile records made from user code */
} Fast;

static PyObject *Fast_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Fast *f = (Fast *)op;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && n == f->nin && array_type != NULL) {
        PyObject *out = NULL, *ps = NULL;
        int rc;
        if (gp_prof_threads) {  /* a profile is active on some thread: this one's state */
            ps = gp_prof_state();
            if (ps == NULL && PyErr_Occurred()) return NULL;
            if (ps == Py_False) goto fallback;
            Py_XINCREF(ps);     /* held while Python code runs (events, the function's label) */
        }
        if (n == 1)
            rc = try_unary(f->table, args[0], &out, ps, f->label);
        else if (f->reflected)
            rc = try_binary(f->table, args[1], args[0], &out, ps, f->label);
        else
            rc = try_binary(f->table, args[0], args[1], &out, ps, f->label);
        Py_XDECREF(ps);
        if (rc > 0) return out;
        if (rc < 0) return NULL;
    }
fallback:
    return PyObject_Vectorcall(f->fallback, args, nargsf, kwnames);
}

/* Fast(table, fallback, nin, reflected=False, label=None) */
static PyObject *Fast_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *table, *fallback, *label = Py_None;
    int nin, reflected = 0;
    static char *kw[] = {"table", "fallback", "nin", "reflected", "label", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!Oi|pO", kw, &GpTableType, &table, &fallback, &nin, &reflected,
                                     &label))
        return NULL;
    if (label != Py_None && !PyUnicode_Check(label)) {
        PyErr_SetString(PyExc_TypeError, "Fast: label must be a str or None");
        return NULL;
    }
    if (nin != 1 && nin != 2) {
        PyErr_SetString(PyExc_ValueError, "Fast: nin must be 1 or 2");
        return NULL;
    }
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "Fast: fallback must be callable");
        return NULL;
    }
    if (label == Py_None) {  /* the fallback's name */
        label = PyObject_GetAttrString(fallback, "__name__");
        if (label == NULL || !PyUnicode_Check(label)) {
            PyErr_Clear();
            Py_XDECREF(label);
            label = PyUnicode_FromString("?");
            if (label == NULL) return NULL;
        }
    } else {
        Py_INCREF(label);
    }
    Fast *self = (Fast *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(label);
        return NULL;
    }
    self->label = label;
    Py_INCREF(table);
    Py_INCREF(fallback);
    self->table = (Table *)table;
    self->fallback = fallback;
    self->nin = nin;
    self->reflected = reflected && nin == 2;
    self->vectorcall = Fast_vectorcall;
    return (PyObject *)self;
}

static int Fast_traverse(Fast *self, visitproc visit, void *arg) {
    Py_VISIT(self->fallback);
    return 0;
}

static int Fast_clear(Fast *self) {
    Py_CLEAR(self->fallback);
    return 0;
}

static void Fast_dealloc(Fast *self) {
    PyObject_GC_UnTrack(self);
    Fast_clear(self);
    Py_CLEAR(self->table);
    Py_CLEAR(self->label);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* as a class attribute: bound to the instance like a function */
static PyObject *Fast_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *Fast_repr(Fast *self) {
    return PyUnicode_FromFormat("<gparray compiled fast path of %R>", self->fallback);
}

static PyMemberDef Fast_members[] = {
    {"table", T_OBJECT, offsetof(Fast, table), READONLY, "the Table of served combinations"},
    {"fallback", T_OBJECT, offsetof(Fast, fallback), READONLY, "the Python function for everything else"},
    {"reflected", T_INT, offsetof(Fast, reflected), READONLY, "computes op(x2, x1) for a call (x1, x2)"},
    {"label", T_OBJECT, offsetof(Fast, label), READONLY, "the function of profile records made from user code"},
    {NULL},
};

static PyObject *Fast_get_doc(Fast *self, void *closure) {
    return PyObject_GetAttrString(self->fallback, "__doc__");
}

static PyObject *Fast_get_name(Fast *self, void *closure) {
    return PyObject_GetAttrString(self->fallback, "__name__");
}

static PyGetSetDef Fast_getset[] = {
    {"__doc__", (getter)Fast_get_doc, NULL, NULL, NULL},
    {"__name__", (getter)Fast_get_name, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject FastType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gparray._native._claunch.Fast",
    .tp_basicsize = sizeof(Fast),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_GC,
    .tp_new = Fast_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Fast, vectorcall),
    .tp_descr_get = Fast_descr_get,
    .tp_repr = (reprfunc)Fast_repr,
    .tp_traverse = (traverseproc)Fast_traverse,
    .tp_clear = (inquiry)Fast_clear,
    .tp_dealloc = (destructor)Fast_dealloc,
    .tp_members = Fast_members,
    .tp_getset = Fast_getset,
};

static PyMethodDef ops_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Array, get_current_stream): the class Fast objects serve and build; (None, None): none"},
    {NULL, NULL, 0, NULL},
};

int gp_ops_init(PyObject *m) {
    if (gp_table_init(m) < 0 || gp_reduce_init(m) < 0 || PyType_Ready(&FastType) < 0) return -1;
    str_ptr = PyUnicode_InternFromString("ptr");
    zero = PyLong_FromLong(0);
    if (str_ptr == NULL || zero == NULL) return -1;
    Py_INCREF(&FastType);
    if (PyModule_AddObject(m, "Fast", (PyObject *)&FastType) < 0) return -1;
    return PyModule_AddFunctions(m, ops_methods);
}
