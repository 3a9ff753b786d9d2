/* The host side of concat/stack over many inputs, in C.
 *
 *   join_scan(Array, arrays, axis, stack) -> None | (dtype, device, axis, addresses, ks)
 *
 * One pass over a list or tuple of instances of the class Array (exactly: its __slots__ are
 * read in place; their offsets are looked up once per class) that are all of
 * one dtype and one device (by identity) and whose shapes join: for concat (stack false)
 * the same number of dimensions and the same extents off ``axis`` (axis None: any shapes,
 * joined flattened); for stack every shape equal. It returns the shared dtype and device,
 * ``axis`` normalized (0 for None), the int64 bytes of each input's first element's
 * address where the Array's contiguity flag is already True (-1 elsewhere: the join engine
 * checks those inputs in full), and ``ks`` (each input's extent along ``axis``, or its size
 * for axis None; None for stack).
 *
 * Anything else (another type, mixed dtypes or devices, shapes that do not join, a bad
 * axis) returns None and the Python path (gparray/_manipulation.py)
 * runs unchanged: it promotes, or raises the error with its message. So this scan only
 * replaces the per-input attribute reads of the Python path (about 0.2 us an input on the
 * GPU machine's host) for the inputs it accepts; tests/test_join_plan.py compares both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_claunch.h"

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static PyObject *str_ptr_j = NULL;

typedef struct {
    Py_ssize_t buf, offset, shape, dtype, device, flags;
} Slots;

static PyTypeObject *slots_of = NULL;  /* the class the offsets below belong to (a reference) */
static Slots slots;

/* the slot offsets of class t (looked up on its first use): 0, or -1 with an exception */
static int array_slots(PyTypeObject *t) {
    if (t == slots_of) return 0;
    Slots s;
    if (gp_slot_offset(t, "_buf", &s.buf) || gp_slot_offset(t, "_offset", &s.offset) ||
        gp_slot_offset(t, "_shape", &s.shape) || gp_slot_offset(t, "_dtype", &s.dtype) ||
        gp_slot_offset(t, "_device", &s.device) || gp_slot_offset(t, "_flags", &s.flags))
        return -1;
    Py_INCREF(t);
    Py_XSETREF(slots_of, t);
    slots = s;
    return 0;
}

/* extent as a Py_ssize_t (-1 with an exception set, or for a negative value) */
static Py_ssize_t extent(PyObject *o) {
    if (!PyLong_CheckExact(o)) return -1;
    Py_ssize_t v = PyLong_AsSsize_t(o);
    return v;
}

/* equal extents: the same object (small ints are shared) or equal values */
static int same_extent(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (!PyLong_CheckExact(a) || !PyLong_CheckExact(b)) return 0;
    Py_ssize_t x = PyLong_AsSsize_t(a), y = PyLong_AsSsize_t(b);
    if ((x == -1 || y == -1) && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return x == y;
}

/* the first element's address of a (whose contiguity flag is True), or -1 */
static long long address(PyObject *a, const Slots *sl) {
    if (SLOT(a, sl->flags) != Py_True) return -1;
    PyObject *b = SLOT(a, sl->buf);
    if (b == NULL) return -1;
    PyObject *p = PyObject_GetAttr(b, str_ptr_j);
    if (p == NULL) {
        PyErr_Clear();
        return -1;
    }
    long long base = PyLong_AsLongLong(p);
    Py_DECREF(p);
    PyObject *o = SLOT(a, sl->offset);
    if (o == NULL) return -1;
    long long off = PyLong_AsLongLong(o);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return base + off;
}

static PyObject *join_scan(PyObject *mod, PyObject *args) {
    PyObject *t, *seq, *axis_o;
    int stack;
    if (!PyArg_ParseTuple(args, "OOOp", &t, &seq, &axis_o, &stack)) return NULL;
    if (!PyType_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "join_scan: expected the Array class first");
        return NULL;
    }
    PyTypeObject *at = (PyTypeObject *)t;
    if (array_slots(at) < 0) return NULL;
    const Slots sl = slots;
    if (!(PyList_CheckExact(seq) || PyTuple_CheckExact(seq))) Py_RETURN_NONE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    if (n == 0 || Py_TYPE(items[0]) != at) Py_RETURN_NONE;
    PyObject *a0 = items[0];
    PyObject *dt = SLOT(a0, sl.dtype), *dev = SLOT(a0, sl.device), *s0 = SLOT(a0, sl.shape);
    if (dt == NULL || dev == NULL || s0 == NULL || !PyTuple_CheckExact(s0)) Py_RETURN_NONE;
    Py_ssize_t nd = PyTuple_GET_SIZE(s0);
    int flat = axis_o == Py_None;
    if (flat && stack) Py_RETURN_NONE;
    Py_ssize_t ax = 0;
    if (!flat) {
        if (!PyLong_CheckExact(axis_o)) Py_RETURN_NONE;
        ax = PyLong_AsSsize_t(axis_o);
        if (ax == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        Py_ssize_t ndim = stack ? nd + 1 : nd;
        if (ax < 0) ax += ndim;
        if (nd == 0 && !stack) Py_RETURN_NONE;
        if (ax < 0 || ax >= ndim) Py_RETURN_NONE;
    }
    PyObject *addrs = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (addrs == NULL) return NULL;
    int64_t *ad = (int64_t *)PyBytes_AS_STRING(addrs);
    PyObject *ks = NULL;
    if (!stack) {
        ks = PyList_New(n);
        if (ks == NULL) {
            Py_DECREF(addrs);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = items[i];
        if (Py_TYPE(a) != at || SLOT(a, sl.dtype) != dt || SLOT(a, sl.device) != dev) goto irregular;
        PyObject *s = SLOT(a, sl.shape);
        if (s == NULL || !PyTuple_CheckExact(s)) goto irregular;
        PyObject *k;
        if (flat) {
            Py_ssize_t size = 1;
            for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(s); d++) {
                Py_ssize_t e = extent(PyTuple_GET_ITEM(s, d));
                if (e < 0) goto irregular;
                if (e && size > PY_SSIZE_T_MAX / e) goto irregular;
                size *= e;
            }
            k = PyLong_FromSsize_t(size);
            if (k == NULL) goto fail;
        } else {
            if (PyTuple_GET_SIZE(s) != nd) goto irregular;
            if (s != s0) {
                for (Py_ssize_t d = 0; d < nd; d++)
                    if ((stack || d != ax) && !same_extent(PyTuple_GET_ITEM(s, d), PyTuple_GET_ITEM(s0, d)))
                        goto irregular;
            }
            if (stack) {
                k = NULL;
            } else {
                k = PyTuple_GET_ITEM(s, ax);
                if (!PyLong_CheckExact(k)) goto irregular;
                Py_INCREF(k);
            }
        }
        if (k != NULL) PyList_SET_ITEM(ks, i, k);
        ad[i] = address(a, &sl);
    }
    if (ks == NULL) {
        Py_INCREF(Py_None);
        ks = Py_None;
    }
    return Py_BuildValue("(OOnNN)", dt, dev, ax, addrs, ks);
irregular:
    if (PyErr_Occurred()) PyErr_Clear();
    Py_DECREF(addrs);
    Py_XDECREF(ks);
    Py_RETURN_NONE;
fail:
    Py_DECREF(addrs);
    Py_XDECREF(ks);
    return NULL;
}

static PyMethodDef join_methods[] = {
    {"join_scan", join_scan, METH_VARARGS,
     "join_scan(Array, arrays, axis, stack) -> None | (dtype, device, axis, addresses, ks): "
     "the checks and addresses of a concat/stack of Arrays of one dtype and device"},
    {NULL, NULL, 0, NULL},
};

int gp_join_init(PyObject *m) {
    str_ptr_j = PyUnicode_InternFromString("ptr");
    if (str_ptr_j == NULL) return -1;
    return PyModule_AddFunctions(m, join_methods);
}
