/* The host side of concat/stack over many inputs, in C.
 *
 *   join_scan(Array, arrays, axis, stack) -> None | (dtype, device, axis, addresses, ks, total)
 *
 * One pass over a list or tuple of instances of the class Array (exactly: its __slots__ are
 * read in place; their offsets are looked up once per class) that are all of
 * one dtype and one device (by identity) and whose shapes join: for concat (stack false)
 * the same number of dimensions and the same extents off ``axis`` (axis None: any shapes,
 * joined flattened); for stack every shape equal. It returns the shared dtype and device,
 * ``axis`` normalized (0 for None), the int64 bytes of each input's first element's
 * address where the Array's contiguity flag is already True (-1 elsewhere: the join engine
 * checks those inputs in full), ``ks`` (int64 bytes: each input's extent along ``axis``, or
 * its size for axis None; None for stack) and their total (the number of inputs for stack).
 * ``join_table`` below then builds the launch's piece table from those bytes.
 *
 * Anything else (another type, mixed dtypes or devices, shapes that do not join, a bad
 * axis) returns None and the Python path (gparray/_api/_manipulation.py)
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
    int64_t *kv = NULL, total = 0;
    if (!stack) {
        ks = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
        if (ks == NULL) {
            Py_DECREF(addrs);
            return NULL;
        }
        kv = (int64_t *)PyBytes_AS_STRING(ks);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = items[i];
        if (Py_TYPE(a) != at || SLOT(a, sl.dtype) != dt || SLOT(a, sl.device) != dev) goto irregular;
        PyObject *s = SLOT(a, sl.shape);
        if (s == NULL || !PyTuple_CheckExact(s)) goto irregular;
        Py_ssize_t k = 0;
        if (flat) {
            Py_ssize_t size = 1;
            for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(s); d++) {
                Py_ssize_t e = extent(PyTuple_GET_ITEM(s, d));
                if (e < 0) goto irregular;
                if (e && size > PY_SSIZE_T_MAX / e) goto irregular;
                size *= e;
            }
            k = size;
        } else {
            if (PyTuple_GET_SIZE(s) != nd) goto irregular;
            if (s != s0) {
                for (Py_ssize_t d = 0; d < nd; d++)
                    if ((stack || d != ax) && !same_extent(PyTuple_GET_ITEM(s, d), PyTuple_GET_ITEM(s0, d)))
                        goto irregular;
            }
            if (!stack) {
                k = extent(PyTuple_GET_ITEM(s, ax));
                if (k < 0) goto irregular;
            }
        }
        if (kv != NULL) {
            kv[i] = k;
            total += k;
        }
        ad[i] = address(a, &sl);
    }
    if (ks == NULL) {
        Py_INCREF(Py_None);
        ks = Py_None;
        total = n;
    }
    return Py_BuildValue("(OOnNNL)", dt, dev, ax, addrs, ks, (long long)total);
irregular:
    if (PyErr_Occurred()) PyErr_Clear();
    Py_DECREF(addrs);
    Py_XDECREF(ks);
    Py_RETURN_NONE;
}

/* join_table(addresses, ks, obase, rows, slice, pitch, tile_bytes[, cap]) -> None | (table, n, grid)
 *
 * The device piece table of the join engine (gparray/_engine/_join.py, ``_pieces_np`` and
 * ``device_table``) when every input is a C-contiguous array of the output's dtype (no -1
 * address; else None): int64 words, the n + 1 first tiles, then per piece (kept inputs: k >
 * 0) its source address, source row step (its row bytes), byte column, width and unit
 * shift (the log2 of the largest power of two up to 16 dividing its addresses, width and,
 * with several rows, both row steps). ``tile_bytes``: 5 int64, the bytes a block moves per
 * unit shift. Pure arithmetic: tests/test_join_scan.py compares it with the NumPy build.
 * ``cap`` > 0 (at least the number of inputs): the same words laid out as gp::join::Table<cap>,
 * the launch's by-value table (cap + 1 starts, then cap pieces; unused entries zero). */
static PyObject *join_table(PyObject *mod, PyObject *args) {
    Py_buffer ab, kb, tb;
    long long obase, rows, sl, pitch;
    Py_ssize_t cap = 0;
    if (!PyArg_ParseTuple(args, "y*y*LLLLy*|n", &ab, &kb, &obase, &rows, &sl, &pitch, &tb, &cap)) return NULL;
    PyObject *res = NULL;
    Py_ssize_t n_in = ab.len / 8;
    if (ab.len % 8 || kb.len != ab.len || tb.len != 5 * 8 || rows < 1 || sl < 0 || cap < 0 || (cap && cap < n_in)) {
        PyErr_SetString(PyExc_ValueError, "join_table: inconsistent buffer sizes or geometry");
        goto done;
    }
    const int64_t *ad = (const int64_t *)ab.buf, *ks = (const int64_t *)kb.buf, *tile = (const int64_t *)tb.buf;
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < n_in; i++) {
        if (ad[i] < 0) {
            Py_INCREF(Py_None);
            res = Py_None;
            goto done;
        }
        n += ks[i] > 0;
    }
    Py_ssize_t slots = cap ? cap : n;
    PyObject *table = PyBytes_FromStringAndSize(NULL, (slots + 1 + 5 * slots) * 8);
    if (table == NULL) goto done;
    int64_t *starts = (int64_t *)PyBytes_AS_STRING(table), *pc = starts + slots + 1;
    if (cap) memset(starts, 0, (size_t)(slots + 1 + 5 * slots) * 8);
    int64_t col = 0, t = 0;
    Py_ssize_t j = 0;
    starts[0] = 0;
    for (Py_ssize_t i = 0; i < n_in; i++) {
        int64_t w = ks[i] * sl;
        if (ks[i] > 0) {
            uint64_t g = (uint64_t)ad[i] | (uint64_t)(obase + col) | (uint64_t)w;
            if (rows > 1) g |= (uint64_t)w | (uint64_t)pitch;
            int shift = 4;
            if (g) {
                shift = __builtin_ctzll(g);
                if (shift > 4) shift = 4;
            }
            int64_t bytes = rows * w;
            t += (bytes + tile[shift] - 1) / tile[shift];
            starts[++j] = t;
            int64_t *q = pc + 5 * (j - 1);
            q[0] = ad[i];
            q[1] = w;
            q[2] = col;
            q[3] = w;
            q[4] = shift;
        }
        col += w;
    }
    res = Py_BuildValue("(NnL)", table, n, (long long)t);
done:
    PyBuffer_Release(&ab);
    PyBuffer_Release(&kb);
    PyBuffer_Release(&tb);
    return res;
}

static PyMethodDef join_methods[] = {
    {"join_table", join_table, METH_VARARGS,
     "join_table(addresses, ks, obase, rows, slice, pitch, tile_bytes[, cap]) -> None | (table, n, grid): "
     "the join engine's device piece table (cap: its by-value Table<cap>) when every input is C-contiguous"},
    {"join_scan", join_scan, METH_VARARGS,
     "join_scan(Array, arrays, axis, stack) -> None | (dtype, device, axis, addresses, ks, total): "
     "the checks and addresses of a concat/stack of Arrays of one dtype and device"},
    {NULL, NULL, 0, NULL},
};

int gp_join_init(PyObject *m) {
    str_ptr_j = PyUnicode_InternFromString("ptr");
    if (str_ptr_j == NULL) return -1;
    return PyModule_AddFunctions(m, join_methods);
}
