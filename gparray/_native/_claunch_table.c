/* Tables of the compiled elementwise fast paths (_claunch_ops.c): one per op, the operand
 * combinations it serves in C, each with what its launch needs (the kernel's Launch, the
 * output dtype, the tile, the device's pool; see Table.add). The Entry and Table structs
 * are in _claunch.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_claunch.h"

static void entry_clear(Entry *e) {
    Py_CLEAR(e->a);
    Py_CLEAR(e->b);
    Py_CLEAR(e->device);
    Py_CLEAR(e->devid);
    Py_CLEAR(e->launch);
    Py_CLEAR(e->odt);
    Py_CLEAR(e->malloc);
    Py_CLEAR(e->pool);
    Py_CLEAR(e->deferred);
    Py_CLEAR(e->last_shape);
    Py_CLEAR(e->last_strides);
    Py_CLEAR(e->name);
}

static void Table_dealloc(Table *self) {
    for (Py_ssize_t i = 0; i < self->n; i++) entry_clear(&self->e[i]);
    PyMem_Free(self->e);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int as_range(PyObject *o, double *d, long long *ll, int *is_float) {
    if (PyFloat_Check(o)) {
        *is_float = 1;
        *d = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    int overflow;
    *is_float = 0;
    *ll = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (*ll == -1 && PyErr_Occurred()) return -1;
    if (overflow) *ll = overflow > 0 ? LLONG_MAX : LLONG_MIN;  /* the fallback serves beyond */
    return 0;
}

/* table.add(a, b, side, device, aisz, bisz, lo, hi, launch, odt, oisz, tile, block, pool,
 * name=None) -> True if added, False if the key was there already */
static PyObject *Table_add(Table *self, PyObject *args) {
    PyObject *a, *b, *device, *lo, *hi, *launch, *odt, *pool, *name = Py_None;
    int side;
    Py_ssize_t aisz, bisz, oisz;
    long long tile;
    unsigned int block;
    if (!PyArg_ParseTuple(args, "OOiOnnOOO!OnLIO|O", &a, &b, &side, &device, &aisz, &bisz, &lo, &hi,
                          &GpLaunchType, &launch, &odt, &oisz, &tile, &block, &pool, &name))
        return NULL;
    if (name != Py_None && !PyUnicode_Check(name)) {
        PyErr_SetString(PyExc_TypeError, "Table.add: name must be a str or None");
        return NULL;
    }
    Launch *l = (Launch *)launch;
    int unary = b == Py_None;
    Py_ssize_t want = unary ? 3 : 4;
    if (side < 0 || side > 2 || (unary && side) || tile <= 0 || block == 0 || oisz <= 0 || aisz <= 0 ||
        (side == SIDE_NONE && !unary && bisz <= 0)) {
        PyErr_SetString(PyExc_ValueError, "Table.add: bad side, sizes or tile");
        return NULL;
    }
    if (l->nvals != want || l->kind[0] != V_U64 || l->kind[1] != V_U64 || l->kind[want - 1] != V_I64 ||
        (want == 4 && (side == SIDE_NONE ? l->kind[2] != V_U64 : l->kind[2] == V_BYTES))) {
        PyErr_SetString(PyExc_ValueError, "Table.add: the kernel does not take (out, x, [y or scalar,] n)");
        return NULL;
    }
    if (side != SIDE_NONE && b != (PyObject *)&PyFloat_Type && b != (PyObject *)&PyLong_Type) {
        PyErr_SetString(PyExc_ValueError, "Table.add: a scalar entry's type must be float or int");
        return NULL;
    }
    PyObject *bk = unary ? NULL : b;
    if (gp_find(self, a, bk, side, device) != NULL) Py_RETURN_FALSE;
    Entry e;
    memset(&e, 0, sizeof e);
    /* the context the kernel was just launched in (the caller makes sure it is the device's):
     * with several GPUs, calls made while another device is current are not served */
    if (gp_current_ctx(&e.ctx) < 0) Py_RETURN_FALSE;
    if (side != SIDE_NONE) {
        int f1, f2;
        double d1 = 0, d2 = 0;
        long long i1 = 0, i2 = 0;
        if (as_range(lo, &d1, &i1, &f1) || as_range(hi, &d2, &i2, &f2)) return NULL;
        if (f1 != f2) {
            PyErr_SetString(PyExc_ValueError, "Table.add: lo and hi must both be floats or both ints");
            return NULL;
        }
        e.float_range = f1;
        e.flo = d1, e.fhi = d2, e.ilo = i1, e.ihi = i2;
    }
    PyObject *malloc, *deferred, *devid;
    if (gp_pool_refs(pool, device, &malloc, &deferred, &devid) < 0) return NULL;
    if (self->n == self->cap) {
        Py_ssize_t cap = self->cap ? 2 * self->cap : 8;
        Entry *ne = PyMem_Realloc(self->e, (size_t)cap * sizeof(Entry));
        if (ne == NULL) {
            Py_DECREF(devid);
            Py_DECREF(malloc);
            Py_XDECREF(deferred);
            return PyErr_NoMemory();
        }
        self->e = ne;
        self->cap = cap;
    }
    Py_INCREF(a);
    Py_XINCREF(bk);
    Py_INCREF(device);
    Py_INCREF(launch);
    Py_INCREF(odt);
    Py_INCREF(pool);
    e.pool = pool, e.deferred = deferred;
    e.a = a, e.b = bk, e.side = side, e.device = device, e.devid = devid, e.aisz = aisz, e.bisz = bisz;
    e.launch = l, e.odt = odt, e.oisz = oisz, e.tile = tile, e.block = block, e.malloc = malloc;
    e.name = name == Py_None ? NULL : Py_NewRef(name);
    self->e[self->n++] = e;
    Py_RETURN_TRUE;
}

static PyObject *Table_clear(Table *self, PyObject *unused) {
    for (Py_ssize_t i = 0; i < self->n; i++) entry_clear(&self->e[i]);
    self->n = 0;
    Py_RETURN_NONE;
}

/* table.keys() -> [(a, b, side, device), ...] */
static PyObject *Table_keys(Table *self, PyObject *unused) {
    PyObject *out = PyList_New(self->n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        Entry *e = &self->e[i];
        PyObject *k = Py_BuildValue("(OOiO)", e->a, e->b ? e->b : Py_None, e->side, e->device);
        if (k == NULL) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, k);
    }
    return out;
}

static Py_ssize_t Table_len(Table *self) { return self->n; }

static PyMethodDef Table_methods[] = {
    {"add", (PyCFunction)Table_add, METH_VARARGS,
     "add(a, b, side, device, aisz, bisz, lo, hi, launch, odt, oisz, tile, block, pool, name=None) -> bool "
     "(the entry serves calls made while the CUDA context current now is current)"},
    {"clear", (PyCFunction)Table_clear, METH_NOARGS, "forget every entry"},
    {"keys", (PyCFunction)Table_keys, METH_NOARGS, "[(a, b, side, device)] of the entries"},
    {NULL},
};

static PySequenceMethods Table_as_sequence = {.sq_length = (lenfunc)Table_len};

PyTypeObject GpTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gparray._native._claunch.Table",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Operand combinations one elementwise op serves in C (see Fast)",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)Table_dealloc,
    .tp_methods = Table_methods,
    .tp_as_sequence = &Table_as_sequence,
};

int gp_table_init(PyObject *m) {
    return gp_add_type(m, &GpTableType, "Table");
}
