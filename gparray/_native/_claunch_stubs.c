/* The stand-in driver of the CPU tests: launches are recorded instead of run, and the
 * "current context" is a number the test chooses. Nothing here runs unless a test calls
 * _stub_driver or _stub_context; the real entry points live in _claunch.c. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_claunch.h"

static int stub_status[2] = {0, 0};  /* statuses of the next two launches, then 0 */
static PyObject *stub_log = NULL;     /* list of (func, grid, block, smem, stream, params) */

static int stub_launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned smem, void *stream, void **params, void **extra) {
    PyGILState_STATE g = PyGILState_Ensure();  /* called with the GIL released */
    int st = stub_status[0];
    stub_status[0] = stub_status[1];
    stub_status[1] = 0;
    if (st == 0 && stub_log != NULL) {  /* kernelParams launches record None for the buffer */
        PyObject *rec = extra != NULL
            ? Py_BuildValue("(KIIIKy#)", (unsigned long long)(uintptr_t)f, gx, bx, smem,
                            (unsigned long long)(uintptr_t)stream, (char *)extra[1], (Py_ssize_t)*(size_t *)extra[3])
            : Py_BuildValue("(KIIIKO)", (unsigned long long)(uintptr_t)f, gx, bx, smem,
                            (unsigned long long)(uintptr_t)stream, Py_None);
        if (rec == NULL || PyList_Append(stub_log, rec) < 0) PyErr_Clear();
        Py_XDECREF(rec);
    }
    PyGILState_Release(g);
    return st;
}

/* the stand-in's cuLaunchKernelEx: the same record (grid and block from the config) */
static int stub_launch_ex(const cu_config_t *c, void *f, void **params, void **extra) {
    return stub_launch(f, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->smem, c->stream, params, extra);
}

/* _stub_driver(log, status0=0, status1=0): launches append to list `log` (None: back to
 * libcuda); the next two launches return the given statuses */
PyObject *gp_stub_driver(PyObject *mod, PyObject *args) {
    PyObject *log;
    int s0 = 0, s1 = 0;
    if (!PyArg_ParseTuple(args, "O|ii", &log, &s0, &s1)) return NULL;
    if (log == Py_None) {
        Py_CLEAR(stub_log);
        cu_launch = NULL;
        cu_launch_ex = NULL;
        use_extra = 1;
        pdl_ok = 1;
        Py_RETURN_NONE;
    }
    if (!PyList_Check(log)) {
        PyErr_SetString(PyExc_TypeError, "_stub_driver: log must be a list or None");
        return NULL;
    }
    Py_INCREF(log);
    Py_XSETREF(stub_log, log);
    stub_status[0] = s0;
    stub_status[1] = s1;
    use_extra = 1;
    pdl_ok = 1;
    cu_launch = stub_launch;
    cu_launch_ex = stub_launch_ex;
    Py_RETURN_NONE;
}

/* ---- a stand-in for cuCtxGetCurrent (CPU tests): the "current context" is a number */
static int stub_ctx_get(void **ctx) {
    *ctx = stub_ctx;
    return 0;
}

/* _stub_context(value): cuCtxGetCurrent answers the int `value` from now on (None: back to
 * the driver's, or to none when the driver was not loaded) */
PyObject *gp_stub_context(PyObject *mod, PyObject *arg) {
    if (arg == Py_None) {
        if (ctx_stubbed) cu_ctx_get = saved_ctx_get;
        ctx_stubbed = 0;
        Py_RETURN_NONE;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(arg);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    if (!ctx_stubbed) saved_ctx_get = cu_ctx_get;
    ctx_stubbed = 1;
    stub_ctx = (void *)(uintptr_t)v;
    cu_ctx_get = stub_ctx_get;
    Py_RETURN_NONE;
}
