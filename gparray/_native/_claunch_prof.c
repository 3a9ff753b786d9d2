/* Profiling of the compiled elementwise fast path (gparray.cuda.profile).
 *
 * While a profile is active on a host thread, gparray/cuda/_profile.py gives that thread a
 * state (set_profile, kept in the thread's state dict, so it dies with the thread). The Fast
 * objects (_claunch_ops.c) still serve that thread's calls in C, and around each launch:
 *
 *   - take two CUDA events (the profiler's pool of the device, else new_event(device id)),
 *   - record(ev0, stream) before the launch and record(ev1, stream) after it,
 *   - append (function, kernel, grid, block, nbytes, device id, stream, ev0, ev1) to the
 *     thread's sink list, which the profiler turns into ProfileRecords when asked.
 *
 * The function is the op's label (``__add__``) when the Python frame that called it is not
 * gparray code (its code object is in ``codes`` as 0, the profiler's classification), else
 * ``labeler(frame, label)`` (the outermost gparray frame's label). A failed launch gives
 * its events back (``release(device id, event)``) and leaves no record, as the Python path.
 *
 * A state of False sends the thread's calls to the Python fallback (an NVTX range is
 * wanted around each launch). Threads without a state are served as without profiling.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>  /* PyFrame_Check, PyFrame_GetBack before Python 3.11 */
#include <stdint.h>

#include "_claunch.h"

/* the state tuple's items */
enum { P_SINK, P_FREE, P_NEW_EVENT, P_RELEASE, P_RECORD, P_CODES, P_LABELER, P_SIZE };

int gp_prof_threads = 0;          /* threads given a state (0: the fast path tests nothing more) */
static PyObject *state_key = NULL;  /* the key in the thread state dict */

/* set_profile(state): None, False or (sink, free, new_event, release, record, codes, labeler) */
static PyObject *set_profile(PyObject *mod, PyObject *state) {
    if (state != Py_None && state != Py_False) {
        if (!PyTuple_CheckExact(state) || PyTuple_GET_SIZE(state) != P_SIZE ||
            !PyList_Check(PyTuple_GET_ITEM(state, P_SINK)) || !PyDict_Check(PyTuple_GET_ITEM(state, P_FREE)) ||
            !PyDict_Check(PyTuple_GET_ITEM(state, P_CODES))) {
            PyErr_SetString(PyExc_TypeError, "set_profile: expected None, False or (sink list, free-event dict, "
                                             "new_event, release, record, codes dict, labeler)");
            return NULL;
        }
    }
    PyObject *d = PyThreadState_GetDict();
    if (d == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "set_profile: no thread state dict");
        return NULL;
    }
    int had = PyDict_Contains(d, state_key);
    if (had < 0) return NULL;
    if (state == Py_None) {
        if (had) {
            if (PyDict_DelItem(d, state_key) < 0) return NULL;
            gp_prof_threads--;
        }
    } else {
        if (PyDict_SetItem(d, state_key, state) < 0) return NULL;
        if (!had) gp_prof_threads++;
    }
    Py_RETURN_NONE;
}

/* profile_threads() -> the number of threads given a state (tests) */
static PyObject *profile_threads(PyObject *mod, PyObject *unused) { return PyLong_FromLong(gp_prof_threads); }

PyObject *gp_prof_state(void) {
    PyObject *d = PyThreadState_GetDict();
    if (d == NULL) return NULL;
    return PyDict_GetItemWithError(d, state_key);
}

/* an event for device devid (new reference): the last of the pool's list, else new_event(devid) */
static PyObject *take_event(PyObject *st, PyObject *devid) {
    PyObject *pool = PyDict_GetItemWithError(PyTuple_GET_ITEM(st, P_FREE), devid);
    if (pool == NULL && PyErr_Occurred()) return NULL;
    if (pool != NULL && PyList_CheckExact(pool)) {
        Py_ssize_t n = PyList_GET_SIZE(pool);
        if (n > 0) {
            PyObject *ev = PyList_GET_ITEM(pool, n - 1);
            Py_INCREF(ev);
            if (PyList_SetSlice(pool, n - 1, n, NULL) < 0) {
                Py_DECREF(ev);
                return NULL;
            }
            return ev;
        }
    }
    return PyObject_CallOneArg(PyTuple_GET_ITEM(st, P_NEW_EVENT), devid);
}

/* release(devid, ev) for each non-NULL event (stolen), keeping the current exception */
static void give_back(PyObject *st, PyObject *devid, PyObject *ev0, PyObject *ev1) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *evs[2] = {ev0, ev1};
    for (int i = 0; i < 2; i++) {
        if (evs[i] == NULL) continue;
        PyObject *r = PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(st, P_RELEASE), devid, evs[i], NULL);
        if (r == NULL) PyErr_Clear();
        Py_XDECREF(r);
        Py_DECREF(evs[i]);
    }
    PyErr_Restore(et, ev, tb);
}

static int record(PyObject *st, PyObject *ev, unsigned long long stream) {
    PyObject *s = PyLong_FromUnsignedLongLong(stream);
    if (s == NULL) return -1;
    PyObject *args[2] = {ev, s};
    PyObject *r = PyObject_Vectorcall(PyTuple_GET_ITEM(st, P_RECORD), args, 2, NULL);
    Py_DECREF(s);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

int gp_prof_begin(PyObject *st, PyObject *devid, unsigned long long stream, PyObject **ev0, PyObject **ev1) {
    *ev0 = take_event(st, devid);
    if (*ev0 == NULL) return -1;
    *ev1 = take_event(st, devid);
    if (*ev1 == NULL || record(st, *ev0, stream) < 0) {
        give_back(st, devid, *ev0, *ev1);
        *ev0 = *ev1 = NULL;
        return -1;
    }
    return 0;
}

void gp_prof_abort(PyObject *st, PyObject *devid, PyObject *ev0, PyObject *ev1) { give_back(st, devid, ev0, ev1); }

/* the function of the record: ``label`` when the calling frame is not gparray code, else
 * labeler(frame, label) (new reference) */
static PyObject *function_of(PyObject *st, PyObject *label) {
    PyFrameObject *f = PyEval_GetFrame();  /* borrowed */
    if (f == NULL) return Py_NewRef(label);
    PyCodeObject *code = PyFrame_GetCode(f);
    PyObject *w = PyDict_GetItemWithError(PyTuple_GET_ITEM(st, P_CODES), (PyObject *)code);
    Py_DECREF(code);
    if (w == NULL && PyErr_Occurred()) return NULL;
    if (w != NULL && PyLong_CheckExact(w) && PyLong_AsLong(w) == 0) return Py_NewRef(label);
    return PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(st, P_LABELER), (PyObject *)f, label, NULL);
}

int gp_prof_end(PyObject *st, PyObject *label, PyObject *name, unsigned grid, unsigned block, long long nbytes,
                PyObject *devid, unsigned long long stream, PyObject *ev0, PyObject *ev1) {
    if (record(st, ev1, stream) < 0) {
        give_back(st, devid, ev0, ev1);
        return -1;
    }
    PyObject *fn = function_of(st, label);
    if (fn == NULL) {
        give_back(st, devid, ev0, ev1);
        return -1;
    }
    /* N: the events' references move into the tuple */
    PyObject *rec = Py_BuildValue("(NOIILOKNN)", fn, name, grid, block, nbytes, devid, stream, ev0, ev1);
    if (rec == NULL) return -1;  /* Py_BuildValue released what N gave it */
    int rc = PyList_Append(PyTuple_GET_ITEM(st, P_SINK), rec);
    Py_DECREF(rec);
    return rc;
}

/* ------------------------------------------------------------------ the stack walk
 * frame_walk(frame, want_bytes, args, codes, classify, types) -> (outer frame or None, bytes
 * or None): gparray/cuda/_profile_frames.walk without the label, in C (the Python walk is
 * the reference: same frames, same arrays, same bytes; NotImplemented for the bytes when a
 * launch has more arrays or arguments than this walk holds). codes: {code: class},
 * classify(f) for a code not in it; types: (Array, Layout, numpy.uint64, numpy.int64). */
enum { W_OTHER = 0, W_GP = 1, W_ENG = 2, W_PLUMB = 3 };
#define SEQ_MAX 64      /* _profile_frames._SEQ_MAX */
#define FOUND_MAX 256   /* arrays looked at per launch (more: the Python walk) */

static PyObject *s_f_locals, *s_shape, *s_strides, *s_dtype, *s_itemsize, *s_buf, *s_ptr, *s_offset;

typedef struct {
    PyObject *arr, *lay;
    PyObject *found[FOUND_MAX];
    Py_ssize_t n;
    int overflow;
} Scan;

static void keep(Scan *sc, PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    if ((PyObject *)t != sc->arr && (PyObject *)t != sc->lay) return;
    if (sc->n == FOUND_MAX) {
        sc->overflow = 1;
        return;
    }
    Py_INCREF(v);
    sc->found[sc->n++] = v;
}

static void keep_value(Scan *sc, PyObject *v) {
    if (PyTuple_CheckExact(v) || PyList_CheckExact(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        if (n > SEQ_MAX) return;
        for (Py_ssize_t i = 0; i < n; i++) keep(sc, PySequence_Fast_GET_ITEM(v, i));
    } else {
        keep(sc, v);
    }
}

/* the arrays among frame f's variables, one level into tuples and lists: 0 or -1 */
static int scan(Scan *sc, PyObject *f) {
    PyObject *loc = PyObject_GetAttr(f, s_f_locals);
    if (loc == NULL) return -1;
    if (PyDict_Check(loc)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(loc, &pos, &k, &v)) keep_value(sc, v);
    } else {
        PyObject *vals = PyMapping_Values(loc);
        if (vals == NULL) { Py_DECREF(loc); return -1; }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(vals); i++) keep_value(sc, PyList_GET_ITEM(vals, i));
        Py_DECREF(vals);
    }
    Py_DECREF(loc);
    return 0;
}

/* an attribute as a C integer: 0, or -1 (an exception set) */
static int attr_ll(PyObject *o, PyObject *name, long long *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* (address, span, bytes) of an Array or Layout, as _profile_frames._span: 0, or -1 (an
 * exception set: the array is not counted) */
static int extent(PyObject *x, unsigned long long *ptr, long long *span, long long *nbytes) {
    PyObject *shape = PyObject_GetAttr(x, s_shape), *strides = NULL, *dt = NULL, *buf = NULL;
    long long isz, off, base;
    int rc = -1;
    if (shape == NULL || (strides = PyObject_GetAttr(x, s_strides)) == NULL ||
        (dt = PyObject_GetAttr(x, s_dtype)) == NULL || attr_ll(dt, s_itemsize, &isz) < 0 ||
        (buf = PyObject_GetAttr(x, s_buf)) == NULL || attr_ll(buf, s_ptr, &base) < 0 ||
        attr_ll(x, s_offset, &off) < 0)
        goto done;
    if (!PyTuple_Check(shape) || !PyTuple_Check(strides) || PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides)) {
        PyErr_SetString(PyExc_TypeError, "frame_walk: shape and strides must be tuples of one length");
        goto done;
    }
    long long n = 1, sp = isz;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        long long st = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i));
        if ((d == -1 || st == -1) && PyErr_Occurred()) goto done;
        n *= d;
        sp += (d - 1) * (st >= 0 ? st : -st);
    }
    *ptr = (unsigned long long)base + (unsigned long long)off;
    if (n == 0) {
        *span = *nbytes = 0;
    } else {
        *span = sp;
        *nbytes = n * isz < sp ? n * isz : sp;
    }
    rc = 0;
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(dt);
    Py_XDECREF(buf);
    return rc;
}

/* the launch's integer arguments (ints, numpy.uint64, numpy.int64) that can be addresses:
 * their number, -1 on error, -2 when there are more than cap */
static Py_ssize_t addresses(PyObject *args, PyObject *u64, PyObject *i64, unsigned long long *out, Py_ssize_t cap) {
    PyObject *seq = PySequence_Fast(args, "frame_walk: args must be a sequence");
    if (seq == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(seq) > cap) {
        Py_DECREF(seq);
        return -2;
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *a = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *t = (PyObject *)Py_TYPE(a);
        if (t != (PyObject *)&PyLong_Type && t != u64 && t != i64) continue;
        PyObject *v = PyNumber_Index(a);
        if (v == NULL) { Py_DECREF(seq); return -1; }
        unsigned long long u = PyLong_AsUnsignedLongLong(v);  /* negative or too large: no address */
        Py_DECREF(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); continue; }
        out[n++] = u;
    }
    Py_DECREF(seq);
    return n;
}

typedef struct { unsigned long long ptr; long long span, nbytes; int passed; } Ext;

/* the bytes of the found arrays (see _profile_frames._bytes), None, or NotImplemented (more
 * arguments than a kernel takes: the Python walk) */
static PyObject *found_bytes(Scan *sc, PyObject *args, PyObject *u64, PyObject *i64) {
    unsigned long long ptrs[GP_MAXVALS];
    Py_ssize_t np_ = 0;
    if (args != Py_None && (np_ = addresses(args, u64, i64, ptrs, GP_MAXVALS)) < 0) {
        if (np_ == -2) Py_RETURN_NOTIMPLEMENTED;
        return NULL;
    }
    Ext ext[FOUND_MAX];
    Py_ssize_t n = 0;
    int any_passed = 0;
    for (Py_ssize_t i = 0; i < sc->n; i++) {
        Ext e;
        if (extent(sc->found[i], &e.ptr, &e.span, &e.nbytes) < 0) {
            PyErr_Clear();  /* a layout over a released or foreign buffer: not counted */
            continue;
        }
        e.passed = 0;
        for (Py_ssize_t j = 0; j < np_; j++)
            if (ptrs[j] == e.ptr) { e.passed = any_passed = 1; break; }
        Py_ssize_t j = 0;
        while (j < n && !(ext[j].ptr == e.ptr && ext[j].span == e.span)) j++;
        if (j == n) ext[n++] = e;
        else ext[j] = e;  /* the last one seen, as a dict's value */
    }
    if (n == 0) Py_RETURN_NONE;
    long long total = 0;
    for (Py_ssize_t j = 0; j < n; j++)
        if (!any_passed || ext[j].passed) total += ext[j].nbytes;
    return PyLong_FromLongLong(total);
}

static PyObject *frame_walk(PyObject *mod, PyObject *const *a, Py_ssize_t nargs) {
    if (nargs != 6 || !PyDict_Check(a[3]) || !PyTuple_Check(a[5]) || PyTuple_GET_SIZE(a[5]) != 4) {
        PyErr_SetString(PyExc_TypeError, "frame_walk(frame, want_bytes, args, codes, classify, "
                                         "(Array, Layout, uint64, int64))");
        return NULL;
    }
    int scanning = PyObject_IsTrue(a[1]);
    if (scanning < 0) return NULL;
    PyObject *codes = a[3], *classify = a[4], *types = a[5];
    Scan sc;
    sc.arr = PyTuple_GET_ITEM(types, 0), sc.lay = PyTuple_GET_ITEM(types, 1), sc.n = 0, sc.overflow = 0;
    int want = scanning;
    PyObject *outer = NULL, *result = NULL;
    PyObject *f = a[0] == Py_None ? NULL : Py_NewRef(a[0]);
    if (f != NULL && !PyFrame_Check(f)) {
        PyErr_SetString(PyExc_TypeError, "frame_walk: expected a frame");
        goto done;
    }
    while (f != NULL) {
        PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)f);
        PyObject *wo = PyDict_GetItemWithError(codes, (PyObject *)code);
        Py_DECREF(code);
        long w;
        if (wo != NULL) {
            w = PyLong_AsLong(wo);
        } else {
            if (PyErr_Occurred()) goto done;
            PyObject *r = PyObject_CallOneArg(classify, f);
            if (r == NULL) goto done;
            w = PyLong_AsLong(r);
            Py_DECREF(r);
        }
        if (w == -1 && PyErr_Occurred()) goto done;
        if (w == W_OTHER) break;
        Py_XSETREF(outer, Py_NewRef(f));
        if (scanning && w != W_PLUMB) {
            if (scan(&sc, f) < 0) goto done;
            if (w == W_GP) scanning = 0;
        }
        PyObject *back = (PyObject *)PyFrame_GetBack((PyFrameObject *)f);
        Py_SETREF(f, back);
    }
    PyObject *nbytes;
    if (!want) {
        nbytes = Py_NewRef(Py_None);
    } else if (sc.overflow) {  /* too many arrays for the C walk: the caller walks in Python */
        nbytes = Py_NewRef(Py_NotImplemented);
    } else {
        nbytes = found_bytes(&sc, a[2], PyTuple_GET_ITEM(types, 2), PyTuple_GET_ITEM(types, 3));
        if (nbytes == NULL) goto done;
    }
    result = PyTuple_Pack(2, outer ? outer : Py_None, nbytes);
    Py_DECREF(nbytes);
done:
    Py_XDECREF(f);
    Py_XDECREF(outer);
    for (Py_ssize_t i = 0; i < sc.n; i++) Py_DECREF(sc.found[i]);
    return result;
}

static PyMethodDef prof_methods[] = {
    {"frame_walk", (PyCFunction)(void (*)(void))frame_walk, METH_FASTCALL,
     "frame_walk(frame, want_bytes, args, codes, classify, types) -> (outer frame or None, bytes or None)"},
    {"set_profile", set_profile, METH_O,
     "set_profile(state): this thread's profiling state of the Fast objects (None, False or a tuple)"},
    {"profile_threads", profile_threads, METH_NOARGS, "the number of threads given a profiling state"},
    {NULL, NULL, 0, NULL},
};

int gp_prof_init(PyObject *m) {
    state_key = PyUnicode_InternFromString("gparray._claunch.profile");
    if (state_key == NULL) return -1;
    const char *names[] = {"f_locals", "_shape", "_strides", "_dtype", "itemsize", "_buf", "ptr", "_offset"};
    PyObject **slots[] = {&s_f_locals, &s_shape, &s_strides, &s_dtype, &s_itemsize, &s_buf, &s_ptr, &s_offset};
    for (int i = 0; i < 8; i++)
        if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) return -1;
    return PyModule_AddFunctions(m, prof_methods);
}
