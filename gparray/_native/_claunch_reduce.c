/* Compiled repeat calls of the reductions (sum, mean, std, var over an axis, vector_norm).
 *
 * A reduction's Python path checks its arguments, plans its launches (gparray/_engine/
 * _reduce.py, memoized per layout) and allocates its result; that host work was two to
 * three times the elementwise fast path's (15.9 us per vector_norm(x, axis=1) call against
 * 6.4 us per x + 1 on an H200), a fifth of a 268 MB reduction's time there. Once a call
 * has gone through the Python path, gparray/_engine/_reduce_fast.py records it in the
 * function's RTable: (input dtype, shape, axis, device, whether x's address is 16-byte
 * aligned) -> the result's shape, strides and dtype, the bound kernel (and the finishing
 * kernel of a two-pass plan) with their grids and constant argument bytes, the workspace
 * size. RTable.serve(x, axis) then makes a later call with the same key entirely in C:
 *
 *   - x a C-contiguous Array of the recorded dtype, shape and device, axis the same int (or
 *     None), x's alignment class the same, the entry's CUDA context current;
 *   - the workspace, then the result, from the device's pool (each: one of its last deferred
 *     frees of the same request on the same stream, see _claunch_block.c, else its malloc);
 *   - the launches through the kernels' own launch callables (the C Launch objects, or the
 *     checked launches of GPARRAY_LAUNCH_BLOCKING), with the values the Python path passes:
 *     (out, workspace, x) + the constant bytes, then (out, workspace) + the finisher's;
 *   - the workspace handed back to the pool after the launches, as the Python path does.
 *
 * Anything else returns None and the caller takes the Python path, which raises the same
 * errors and gives the same results. The callers skip serve() while a profile is active.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_claunch.h"

typedef struct {
    PyObject *dtype, *shape, *axis, *device, *devid;
    int aligned;               /* x's address % 16 == 0 when recorded: calls must match */
    Py_ssize_t isz;            /* x's itemsize */
    PyObject *launch1, *tail1; /* the reducing kernel's launch callable, its constant values (a tuple) */
    unsigned grid1;
    PyObject *launch2, *tail2; /* the finishing kernel (NULL: one pass) */
    unsigned grid2, block;
    PyObject *ws_bytes;        /* int; 0: none */
    PyObject *out_shape, *out_strides, *odt, *out_bytes;
    PyObject *pool, *malloc, *deferred;
    void *ctx;                 /* the CUDA context current when recorded */
} REntry;

typedef struct {
    PyObject_HEAD
    REntry *e;
    Py_ssize_t n, cap, max;
} RTable;

static PyObject *zero = NULL;

static void rentry_clear(REntry *e) {
    Py_CLEAR(e->dtype); Py_CLEAR(e->shape); Py_CLEAR(e->axis); Py_CLEAR(e->device); Py_CLEAR(e->devid);
    Py_CLEAR(e->launch1); Py_CLEAR(e->tail1); Py_CLEAR(e->launch2); Py_CLEAR(e->tail2); Py_CLEAR(e->ws_bytes);
    Py_CLEAR(e->out_shape); Py_CLEAR(e->out_strides); Py_CLEAR(e->odt); Py_CLEAR(e->out_bytes);
    Py_CLEAR(e->pool); Py_CLEAR(e->malloc); Py_CLEAR(e->deferred);
}

static void RTable_dealloc(RTable *self) {
    for (Py_ssize_t i = 0; i < self->n; i++) rentry_clear(&self->e[i]);
    PyMem_Free(self->e);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *RTable_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    Py_ssize_t max = 64;
    static char *kw[] = {"max_entries", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|n", kw, &max)) return NULL;
    RTable *self = (RTable *)type->tp_alloc(type, 0);
    if (self != NULL) self->max = max > 0 ? max : 1;
    return (PyObject *)self;
}

/* 1 when axis a (None or an int) is the recorded b; 0 when not; -1 error */
static int same_axis(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (!PyLong_CheckExact(a) || !PyLong_CheckExact(b)) return 0;
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

static REntry *rfind(RTable *t, PyObject *dtype, PyObject *shape, PyObject *axis, PyObject *device, int aligned,
                     int *err) {
    REntry *e = t->e, *end = t->e + t->n;
    *err = 0;
    for (; e < end; e++) {
        if (e->dtype != dtype || e->device != device || e->aligned != aligned) continue;
        int r = same_axis(axis, e->axis);
        if (r < 0) { *err = 1; return NULL; }
        if (!r) continue;
        if (e->shape != shape) {
            r = PyObject_RichCompareBool(shape, e->shape, Py_EQ);
            if (r < 0) { *err = 1; return NULL; }
            if (!r) continue;
        }
        return e;
    }
    return NULL;
}

/* rtable.add(dtype, shape, axis, device, aligned, isz, out_shape, out_strides, odt, out_bytes,
 *            launch1, grid1, tail1, launch2, grid2, tail2, block, ws_bytes, pool)
 * -> True if added; False if the key was there, the table is full or no context is current */
static PyObject *RTable_add(RTable *self, PyObject *args) {
    PyObject *dtype, *shape, *axis, *device, *out_shape, *out_strides, *odt, *out_bytes, *launch1, *tail1,
        *launch2, *tail2, *ws_bytes, *pool;
    int aligned;
    Py_ssize_t isz;
    unsigned int grid1, grid2, block;
    if (!PyArg_ParseTuple(args, "OO!OOpnO!O!OO!OIO!OIO!IO!O", &dtype, &PyTuple_Type, &shape, &axis, &device,
                          &aligned, &isz, &PyTuple_Type, &out_shape, &PyTuple_Type, &out_strides, &odt,
                          &PyLong_Type, &out_bytes, &launch1, &grid1, &PyTuple_Type, &tail1, &launch2, &grid2,
                          &PyTuple_Type, &tail2, &block, &PyLong_Type, &ws_bytes, &pool))
        return NULL;
    if (axis != Py_None && !PyLong_CheckExact(axis)) {
        PyErr_SetString(PyExc_TypeError, "RTable.add: axis must be None or an int");
        return NULL;
    }
    if (!PyCallable_Check(launch1) || (launch2 != Py_None && !PyCallable_Check(launch2)) || isz <= 0 || grid1 == 0 ||
        block == 0 || (launch2 != Py_None && grid2 == 0)) {
        PyErr_SetString(PyExc_ValueError, "RTable.add: bad launches, grids or sizes");
        return NULL;
    }
    int err;
    if (rfind(self, dtype, shape, axis, device, aligned != 0, &err) != NULL) Py_RETURN_FALSE;
    if (err) return NULL;
    if (self->n >= self->max) Py_RETURN_FALSE;
    REntry e;
    memset(&e, 0, sizeof e);
    if (gp_current_ctx(&e.ctx) < 0) Py_RETURN_FALSE;
    PyObject *malloc, *deferred, *devid;
    if (gp_pool_refs(pool, device, &malloc, &deferred, &devid) < 0) return NULL;
    if (self->n == self->cap) {
        Py_ssize_t cap = self->cap ? 2 * self->cap : 4;
        REntry *ne = PyMem_Realloc(self->e, (size_t)cap * sizeof(REntry));
        if (ne == NULL) { Py_DECREF(devid); Py_DECREF(malloc); Py_XDECREF(deferred); return PyErr_NoMemory(); }
        self->e = ne;
        self->cap = cap;
    }
    e.dtype = Py_NewRef(dtype), e.shape = Py_NewRef(shape), e.axis = Py_NewRef(axis), e.device = Py_NewRef(device);
    e.devid = devid, e.aligned = aligned != 0, e.isz = isz;
    e.out_shape = Py_NewRef(out_shape), e.out_strides = Py_NewRef(out_strides), e.odt = Py_NewRef(odt);
    e.out_bytes = Py_NewRef(out_bytes);
    e.launch1 = Py_NewRef(launch1), e.grid1 = grid1, e.tail1 = Py_NewRef(tail1);
    e.launch2 = launch2 == Py_None ? NULL : Py_NewRef(launch2), e.grid2 = grid2;
    e.tail2 = launch2 == Py_None ? NULL : Py_NewRef(tail2);
    e.block = block, e.ws_bytes = Py_NewRef(ws_bytes);
    e.pool = Py_NewRef(pool), e.malloc = malloc, e.deferred = deferred;
    self->e[self->n++] = e;
    Py_RETURN_TRUE;
}

/* launch(grid, block, head + tail, 0, stream): 0, or -1 with an exception set */
static int launch_with(PyObject *launch, unsigned grid, unsigned block, PyObject *head, PyObject *tail,
                       PyObject *sptr) {
    PyObject *vals = PySequence_Concat(head, tail);
    if (vals == NULL) return -1;
    PyObject *g = PyLong_FromUnsignedLong(grid), *b = PyLong_FromUnsignedLong(block);
    if (g == NULL || b == NULL) { Py_XDECREF(g); Py_XDECREF(b); Py_DECREF(vals); return -1; }
    PyObject *argv[5] = {g, b, vals, zero, sptr};
    PyObject *r = PyObject_Vectorcall(launch, argv, 5, NULL);
    Py_DECREF(g);
    Py_DECREF(b);
    Py_DECREF(vals);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* the entry's objects, referenced for one call: the Python calls below (the stream getter,
 * the pool, the launches) may let another thread add to the table (moving its entries) or
 * clear it, so a call works on its own copy taken before the first of them */
static void rentry_hold(REntry *c, const REntry *e) {
    *c = *e;
    Py_INCREF(c->devid); Py_INCREF(c->device); Py_INCREF(c->launch1); Py_INCREF(c->tail1);
    Py_XINCREF(c->launch2); Py_XINCREF(c->tail2); Py_INCREF(c->ws_bytes); Py_INCREF(c->out_shape);
    Py_INCREF(c->out_strides); Py_INCREF(c->odt); Py_INCREF(c->out_bytes); Py_INCREF(c->pool);
    Py_INCREF(c->malloc); Py_XINCREF(c->deferred);
    c->dtype = c->shape = c->axis = NULL;   /* (not needed past the lookup) */
}

static PyObject *rrun(REntry *e, unsigned long long px) {
    unsigned long long pout, pws;
    PyObject *blk = NULL, *ws = NULL, *out = NULL, *head = NULL, *sptr = NULL;
    ws = Py_NewRef(Py_None);
    sptr = gp_stream_ptr(e->devid);
    if (sptr == NULL) goto done;
    int has_ws = PyObject_IsTrue(e->ws_bytes);
    if (has_ws < 0) goto done;
    /* the workspace first: the previous call's, queued before the result its caller dropped
     * since (or, the result still held, the last queued free) */
    if (has_ws) {
        Py_SETREF(ws, gp_block_take(e->pool, e->malloc, e->deferred, e->devid, e->ws_bytes, sptr));
        if (ws == NULL) goto done;
    }
    blk = gp_block_take(e->pool, e->malloc, e->deferred, e->devid, e->out_bytes, sptr);
    if (blk == NULL) goto done;
    if (gp_block_ptr(blk, &pout) < 0 || gp_block_ptr(ws, &pws) < 0) goto done;
    head = Py_BuildValue("(KKK)", pout, pws, px);
    if (head == NULL) goto done;
    if (launch_with(e->launch1, e->grid1, e->block, head, e->tail1, sptr) < 0) goto done;
    if (e->launch2 != NULL) {
        PyObject *h2 = PyTuple_GetSlice(head, 0, 2);
        if (h2 == NULL) goto done;
        int rc = launch_with(e->launch2, e->grid2, e->block, h2, e->tail2, sptr);
        Py_DECREF(h2);
        if (rc < 0) goto done;
    }
    out = gp_array_build(blk, e->out_shape, e->out_strides, e->odt, e->device);  /* steals blk */
    blk = NULL;
done:
    Py_XDECREF(blk);
    Py_XDECREF(ws);   /* the workspace back to the pool, stream-ordered (as the Python path's) */
    Py_XDECREF(head);
    Py_XDECREF(sptr);
    rentry_clear(e);  /* the call's copy */
    return out;
}

/* rtable.serve(x, axis) -> the reduction of x over axis, or None (take the Python path) */
static PyObject *RTable_serve(RTable *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "RTable.serve(x, axis)");
        return NULL;
    }
    PyObject *x = args[0], *axis = args[1];
    PyTypeObject *at = gp_array_type();
    if (at == NULL || Py_TYPE(x) != at || self->n == 0) Py_RETURN_NONE;
    unsigned long long px;
    if (gp_array_ptr(x, &px) < 0) return NULL;  /* (before the lookup: it may run Python code) */
    int err;
    REntry *e = rfind(self, gp_array_slot(x, GP_SLOT_DTYPE), gp_array_slot(x, GP_SLOT_SHAPE), axis,
                      gp_array_slot(x, GP_SLOT_DEVICE), (px & 15) == 0, &err);
    if (e == NULL) {
        if (err) return NULL;
        Py_RETURN_NONE;
    }
    if (!gp_ctx_is(e->ctx)) Py_RETURN_NONE;
    int c = gp_array_contig(x, e->isz);
    if (c < 0) return NULL;
    if (c == 0) Py_RETURN_NONE;
    REntry own;
    rentry_hold(&own, e);
    return rrun(&own, px);
}

static PyObject *RTable_clear(RTable *self, PyObject *unused) {
    for (Py_ssize_t i = 0; i < self->n; i++) rentry_clear(&self->e[i]);
    self->n = 0;
    Py_RETURN_NONE;
}

/* rtable.keys() -> [(dtype, shape, axis, device, aligned), ...] */
static PyObject *RTable_keys(RTable *self, PyObject *unused) {
    PyObject *out = PyList_New(self->n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        REntry *e = &self->e[i];
        PyObject *k = Py_BuildValue("(OOOOO)", e->dtype, e->shape, e->axis, e->device, e->aligned ? Py_True : Py_False);
        if (k == NULL) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, k);
    }
    return out;
}

static Py_ssize_t RTable_len(RTable *self) { return self->n; }

static PyMethodDef RTable_methods[] = {
    {"add", (PyCFunction)RTable_add, METH_VARARGS,
     "add(dtype, shape, axis, device, aligned, isz, out_shape, out_strides, odt, out_bytes, launch1, grid1, "
     "tail1, launch2, grid2, tail2, block, ws_bytes, pool) -> bool"},
    {"serve", (PyCFunction)(void (*)(void))RTable_serve, METH_FASTCALL,
     "serve(x, axis) -> the recorded reduction of x, or None (the caller's Python path)"},
    {"clear", (PyCFunction)RTable_clear, METH_NOARGS, "forget every entry"},
    {"keys", (PyCFunction)RTable_keys, METH_NOARGS, "[(dtype, shape, axis, device, aligned)] of the entries"},
    {NULL},
};

static PySequenceMethods RTable_as_sequence = {.sq_length = (lenfunc)RTable_len};

static PyTypeObject GpRTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gparray._native._claunch.RTable",
    .tp_basicsize = sizeof(RTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Repeat calls of one reduction served in C (RTable(max_entries=64))",
    .tp_new = RTable_new,
    .tp_dealloc = (destructor)RTable_dealloc,
    .tp_methods = RTable_methods,
    .tp_as_sequence = &RTable_as_sequence,
};

int gp_reduce_init(PyObject *m) {
    if (zero == NULL) zero = PyLong_FromLong(0);
    if (zero == NULL) return -1;
    return gp_add_type(m, &GpRTableType, "RTable");
}
