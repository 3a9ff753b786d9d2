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

static PyMethodDef prof_methods[] = {
    {"set_profile", set_profile, METH_O,
     "set_profile(state): this thread's profiling state of the Fast objects (None, False or a tuple)"},
    {"profile_threads", profile_threads, METH_NOARGS, "the number of threads given a profiling state"},
    {NULL, NULL, 0, NULL},
};

int gp_prof_init(PyObject *m) {
    state_key = PyUnicode_InternFromString("gparray._claunch.profile");
    if (state_key == NULL) return -1;
    return PyModule_AddFunctions(m, prof_methods);
}
