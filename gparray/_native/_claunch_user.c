/* The compiled fast path of user kernel launches (gparray/cuda/_user_kernels.py).
 *
 * UserCall(fallback) is set on the UserKernel class as __call__ (a method descriptor, as the
 * Fast objects of _claunch_ops.c: the interpreter calls it with the kernel first, without a
 * Python frame). It serves k(grid, block, args[, shared_mem[, stream]]) in C when
 *
 *   - grid and block are ints in range (1 to 2**31 - 1, 1 to 1024), shared_mem an int in
 *     [0, 2**32), stream None, args a tuple or list, no keyword arguments;
 *   - user_configure(...) was called (one visible device: every array is on device 0) and
 *     the profiler's hook (_user_kernels._hook) is None;
 *   - the kernel's plan for the classes of args exists (k._plans, made by a checked call):
 *     (positions of the arrays, positions of Python ints, {device id: Kernel}), with a
 *     Kernel for device 0 whose launch is a compiled Launch (a plain parameter layout);
 *   - every array is on device 0 and every other value packs (a Python int beyond long long
 *     does not: the Python path raises its error).
 *
 * It then packs the parameters (an array as its data pointer + offset) and launches on
 * get_current_stream().ptr. Anything else calls fallback (the Python __call__, which checks
 * everything and has the same fast path in Python), so both give the same results and errors.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

#include "_claunch.h"

static PyObject *u_array = NULL;    /* the Array class (user_configure) */
static PyObject *u_stream = NULL;   /* get_current_stream() */
static PyObject *u_globals = NULL;  /* _user_kernels' module dict: its _hook */
static PyObject *s_plans, *s_launch, *s_hook, *s_device, *s_id, *s_buf, *s_ptr, *s_offset, *u_zero;

/* user_configure(Array, get_current_stream, module globals) or (None, None, None) */
static PyObject *user_configure(PyObject *mod, PyObject *args) {
    PyObject *a, *gs, *g;
    if (!PyArg_ParseTuple(args, "OOO", &a, &gs, &g)) return NULL;
    if (a == Py_None) {
        Py_CLEAR(u_array);
        Py_CLEAR(u_stream);
        Py_CLEAR(u_globals);
        Py_RETURN_NONE;
    }
    if (!PyType_Check(a) || !PyCallable_Check(gs) || !PyDict_Check(g)) {
        PyErr_SetString(PyExc_TypeError, "user_configure: expected (Array class, get_current_stream, module dict) "
                                         "or (None, None, None)");
        return NULL;
    }
    Py_INCREF(a);
    Py_INCREF(gs);
    Py_INCREF(g);
    Py_XSETREF(u_array, a);
    Py_XSETREF(u_stream, gs);
    Py_XSETREF(u_globals, g);
    Py_RETURN_NONE;
}

/* a non-negative int attribute chain value o.name (exact int): 0, or -1 (no exception kept) */
static int attr_u64(PyObject *o, PyObject *name, unsigned long long *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) { PyErr_Clear(); return -1; }
    int ok = PyLong_CheckExact(v);
    if (ok) *out = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    if (!ok || (*out == (unsigned long long)-1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
    return 0;
}

/* array x's data pointer when it is on device 0: 0, or -1 (no exception kept) */
static int array_ptr(PyObject *x, unsigned long long *p) {
    unsigned long long id, base, off;
    PyObject *dev = PyObject_GetAttr(x, s_device);
    if (dev == NULL) { PyErr_Clear(); return -1; }
    int rc = attr_u64(dev, s_id, &id);
    Py_DECREF(dev);
    if (rc < 0 || id != 0) return -1;
    PyObject *buf = PyObject_GetAttr(x, s_buf);
    if (buf == NULL) { PyErr_Clear(); return -1; }
    rc = attr_u64(buf, s_ptr, &base);
    Py_DECREF(buf);
    if (rc < 0 || attr_u64(x, s_offset, &off) < 0) return -1;
    *p = base + off;
    return 0;
}

static int in_range(PyObject *o, long long lo, long long hi, long long *v) {
    if (!PyLong_CheckExact(o)) return 0;
    int overflow;
    *v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (*v == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    return !overflow && *v >= lo && *v <= hi;
}

/* 1: launched; 0: not served here (no exception); -1: the launch failed */
static int try_launch(PyObject *const *a, Py_ssize_t n) {
    long long grid, block, smem = 0;
    if (!in_range(a[1], 1, 2147483647LL, &grid) || !in_range(a[2], 1, 1024, &block)) return 0;
    if (n > 4 && !in_range(a[4], 0, 4294967295LL, &smem)) return 0;
    if (n > 5 && a[5] != Py_None) return 0;
    PyObject *args = a[3];
    if (!PyTuple_CheckExact(args) && !PyList_CheckExact(args)) return 0;
    PyObject *hook = PyDict_GetItemWithError(u_globals, s_hook);
    if (hook != Py_None) { PyErr_Clear(); return 0; }
    Py_ssize_t nv = PySequence_Fast_GET_SIZE(args);
    if (nv > GP_MAXVALS) return 0;
    PyObject *plans = PyObject_GetAttr(a[0], s_plans);
    if (plans == NULL) { PyErr_Clear(); return 0; }
    int rc = 0;
    PyObject *classes = PyTuple_New(nv), *launch = NULL;
    if (classes == NULL) { PyErr_Clear(); goto done; }
    PyObject **items = PySequence_Fast_ITEMS(args);
    for (Py_ssize_t i = 0; i < nv; i++) {
        PyObject *t = (PyObject *)Py_TYPE(items[i]);
        Py_INCREF(t);
        PyTuple_SET_ITEM(classes, i, t);
    }
    PyObject *plan = PyDict_Check(plans) ? PyDict_GetItemWithError(plans, classes) : NULL;  /* borrowed */
    if (plan == NULL || !PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != 3) { PyErr_Clear(); goto done; }
    PyObject *arrays = PyTuple_GET_ITEM(plan, 0), *kernels = PyTuple_GET_ITEM(plan, 2);
    if (!PyTuple_CheckExact(arrays) || !PyDict_Check(kernels)) goto done;
    PyObject *k = PyDict_GetItemWithError(kernels, u_zero);
    if (k == NULL) { PyErr_Clear(); goto done; }
    launch = PyObject_GetAttr(k, s_launch);
    if (launch == NULL) { PyErr_Clear(); goto done; }
    if (Py_TYPE(launch) != &GpLaunchType) goto done;
    Launch *l = (Launch *)launch;
    if (l->nvals != nv) goto done;
    unsigned char is_array[GP_MAXVALS];
    memset(is_array, 0, (size_t)nv);
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(arrays); j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(arrays, j));
        if (i < 0 || i >= nv || l->kind[i] != V_U64) { PyErr_Clear(); goto done; }
        is_array[i] = 1;
    }
    _Alignas(16) char buf[GP_BUFSIZE];
    memset(buf, 0, (size_t)l->size);
    for (Py_ssize_t i = 0; i < nv; i++) {
        if (is_array[i]) {
            unsigned long long p;
            if (array_ptr(items[i], &p) < 0) goto done;
            memcpy(buf + l->off[i], &p, 8);
        } else if (gp_pack_one(l, i, items[i], buf) < 0) {
            PyErr_Clear();
            goto done;
        }
    }
    PyObject *stream = PyObject_CallNoArgs(u_stream);
    if (stream == NULL) { PyErr_Clear(); goto done; }
    unsigned long long sptr;
    int ok = attr_u64(stream, s_ptr, &sptr);
    Py_DECREF(stream);
    if (ok < 0) goto done;
    rc = gp_launch_packed(l, (unsigned)grid, (unsigned)block, (unsigned)smem, (void *)(uintptr_t)sptr, buf) < 0
         ? -1 : 1;
done:
    Py_XDECREF(launch);
    Py_XDECREF(classes);
    Py_DECREF(plans);
    return rc;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;
} UserCall;

static PyObject *UserCall_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    UserCall *u = (UserCall *)op;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (u_array != NULL && kwnames == NULL && n >= 4 && n <= 6) {
        int rc = try_launch(args, n);
        if (rc > 0) Py_RETURN_NONE;
        if (rc < 0) return NULL;
    }
    return PyObject_Vectorcall(u->fallback, args, nargsf, kwnames);
}

static PyObject *UserCall_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *fallback;
    static char *kw[] = {"fallback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", kw, &fallback)) return NULL;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "UserCall: fallback must be callable");
        return NULL;
    }
    UserCall *self = (UserCall *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    Py_INCREF(fallback);
    self->fallback = fallback;
    self->vectorcall = UserCall_vectorcall;
    return (PyObject *)self;
}

static int UserCall_traverse(UserCall *self, visitproc visit, void *arg) {
    Py_VISIT(self->fallback);
    return 0;
}

static int UserCall_clear(UserCall *self) {
    Py_CLEAR(self->fallback);
    return 0;
}

static void UserCall_dealloc(UserCall *self) {
    PyObject_GC_UnTrack(self);
    UserCall_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *UserCall_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *UserCall_get_doc(UserCall *self, void *closure) {
    return PyObject_GetAttrString(self->fallback, "__doc__");
}

static PyObject *UserCall_get_name(UserCall *self, void *closure) {
    return PyObject_GetAttrString(self->fallback, "__name__");
}

static PyGetSetDef UserCall_getset[] = {
    {"__doc__", (getter)UserCall_get_doc, NULL, NULL, NULL},
    {"__name__", (getter)UserCall_get_name, NULL, NULL, NULL},
    {NULL},
};

static PyMemberDef UserCall_members[] = {
    {"fallback", T_OBJECT, offsetof(UserCall, fallback), READONLY, "the Python __call__"},
    {NULL},
};

static PyTypeObject UserCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gparray._native._claunch.UserCall",
    .tp_basicsize = sizeof(UserCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "UserCall(fallback): the compiled fast path of UserKernel.__call__",
    .tp_new = UserCall_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(UserCall, vectorcall),
    .tp_descr_get = UserCall_descr_get,
    .tp_traverse = (traverseproc)UserCall_traverse,
    .tp_clear = (inquiry)UserCall_clear,
    .tp_dealloc = (destructor)UserCall_dealloc,
    .tp_members = UserCall_members,
    .tp_getset = UserCall_getset,
};

static PyMethodDef user_methods[] = {
    {"user_configure", user_configure, METH_VARARGS,
     "user_configure(Array, get_current_stream, _user_kernels globals): UserCall serves launches "
     "(one visible device); (None, None, None): it does not"},
    {NULL, NULL, 0, NULL},
};

int gp_user_init(PyObject *m) {
    const char *names[] = {"_plans", "launch", "_hook", "_device", "_id", "_buf", "ptr", "_offset"};
    PyObject **slots[] = {&s_plans, &s_launch, &s_hook, &s_device, &s_id, &s_buf, &s_ptr, &s_offset};
    for (int i = 0; i < 8; i++)
        if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) return -1;
    if ((u_zero = PyLong_FromLong(0)) == NULL || gp_add_type(m, &UserCallType, "UserCall") < 0) return -1;
    return PyModule_AddFunctions(m, user_methods);
}
