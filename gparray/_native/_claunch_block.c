/* The pool's Block in C (gparray/_memory/_pool.py uses it when this extension is built).
 *
 * Same attributes as the Python class it replaces: ptr, size, nbytes, device_id, stream,
 * _chunk, _pool. free() gives the chunk back at once through the pool's _release(chunk,
 * nbytes). A collected Block instead appends (chunk, nbytes) to the pool's _deferred list,
 * which the pool applies under its lock at its next malloc or statistics read (the pool
 * already treats frees that find its lock taken this way); no Python code runs. The
 * compiled calls may hand that chunk out again (gp_block_take).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_claunch.h"

typedef struct {
    PyObject_HEAD
    PyObject *ptr, *size, *nbytes, *device_id, *stream, *chunk, *pool;
} Block;

static PyObject *str_release = NULL;
static PyObject *str_deferred = NULL;
static PyObject *str_arena = NULL, *str_stream = NULL, *str_ptr_b = NULL, *str_size = NULL;
static PyObject *zero_int = NULL;

/* give the chunk back once: 0, or -1 with an exception set */
static int block_release(Block *self) {
    PyObject *c = self->chunk;
    if (c == NULL || c == Py_None) return 0;
    self->chunk = Py_None;
    Py_INCREF(Py_None);
    PyObject *args[3] = {self->pool, c, self->nbytes};
    PyObject *r = PyObject_VectorcallMethod(str_release, args, 3, NULL);
    Py_DECREF(c);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* queue the chunk on the pool's _deferred list: 1 done, 0 no such list, -1 error */
static int block_defer(Block *self) {
    PyObject *d = PyObject_GetAttr(self->pool, str_deferred);
    if (d == NULL) {
        PyErr_Clear();
        return 0;
    }
    int rc = 0;
    if (PyList_CheckExact(d)) {
        PyObject *item = PyTuple_Pack(2, self->chunk, self->nbytes);
        rc = item == NULL ? -1 : (PyList_Append(d, item) < 0 ? -1 : 1);
        Py_XDECREF(item);
        if (rc == 1) Py_SETREF(self->chunk, Py_NewRef(Py_None));
    }
    Py_DECREF(d);
    return rc;
}

static void Block_dealloc(Block *self) {
    if (self->chunk != NULL && self->chunk != Py_None) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);  /* deallocation may run while an exception is set */
        int rc = block_defer(self);
        if (rc == 0) rc = block_release(self) < 0 ? -1 : 1;
        if (rc < 0) PyErr_WriteUnraisable((PyObject *)self);
        PyErr_Restore(et, ev, tb);
    }
    Py_CLEAR(self->ptr);
    Py_CLEAR(self->size);
    Py_CLEAR(self->nbytes);
    Py_CLEAR(self->device_id);
    Py_CLEAR(self->stream);
    Py_CLEAR(self->chunk);
    Py_CLEAR(self->pool);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Block_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n != 7 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "Block(ptr, size, nbytes, device_id, stream, chunk, pool): 7 positional arguments");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)type;
    Block *self = (Block *)t->tp_alloc(t, 0);
    if (self == NULL) return NULL;
    PyObject **f = &self->ptr;
    for (int i = 0; i < 7; i++) {
        Py_INCREF(args[i]);
        f[i] = args[i];
    }
    return (PyObject *)self;
}

static PyObject *Block_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Block: no keyword arguments");
        return NULL;
    }
    return Block_vectorcall((PyObject *)type, &PyTuple_GET_ITEM(args, 0), (size_t)PyTuple_GET_SIZE(args), NULL);
}

static PyObject *Block_free(Block *self, PyObject *unused) {
    if (block_release(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Block_get_freed(Block *self, void *closure) {
    if (self->chunk != Py_None && self->chunk != NULL) Py_RETURN_FALSE;
    int zero = PyObject_RichCompareBool(self->ptr, zero_int, Py_EQ);
    if (zero < 0) return NULL;
    return PyBool_FromLong(!zero);
}

static PyObject *Block_repr(Block *self) {
    PyObject *freed = Block_get_freed(self, NULL);
    if (freed == NULL) return NULL;
    int f = freed == Py_True;
    Py_DECREF(freed);
    PyObject *hex = PyNumber_ToBase(self->ptr, 16);
    if (hex == NULL) return NULL;
    PyObject *r = PyUnicode_FromFormat("<gparray Block ptr=%U size=%S nbytes=%S device=%S stream=%S %s>", hex,
                                       self->size, self->nbytes, self->device_id, self->stream, f ? "freed" : "live");
    Py_DECREF(hex);
    return r;
}

static PyMemberDef Block_members[] = {
    {"ptr", T_OBJECT_EX, offsetof(Block, ptr), 0, "device address (0 for an empty block)"},
    {"size", T_OBJECT_EX, offsetof(Block, size), 0, "bytes reserved (the request rounded up to 512)"},
    {"nbytes", T_OBJECT_EX, offsetof(Block, nbytes), 0, "bytes requested"},
    {"device_id", T_OBJECT_EX, offsetof(Block, device_id), 0, "device ordinal"},
    {"stream", T_OBJECT_EX, offsetof(Block, stream), 0, "the stream it was allocated on"},
    {"_chunk", T_OBJECT_EX, offsetof(Block, chunk), 0, "the pool's chunk (None once freed)"},
    {"_pool", T_OBJECT_EX, offsetof(Block, pool), 0, "the owning pool"},
    {NULL},
};

static PyMethodDef Block_methods[] = {
    {"free", (PyCFunction)Block_free, METH_NOARGS, "Give the memory back to the pool now (later calls do nothing)."},
    {"__del__", (PyCFunction)Block_free, METH_NOARGS, "Same as free()."},
    {NULL},
};

static PyGetSetDef Block_getset[] = {
    {"freed", (getter)Block_get_freed, NULL,
     "True once the block has been given back (always False for an empty block).", NULL},
    {NULL},
};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gparray._memory.Block",
    .tp_basicsize = sizeof(Block),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A piece of device memory handed out by a pool (see gparray._memory._pool.Block).",
    .tp_new = Block_new,
    .tp_vectorcall = Block_vectorcall,
    .tp_dealloc = (destructor)Block_dealloc,
    .tp_repr = (reprfunc)Block_repr,
    .tp_members = Block_members,
    .tp_methods = Block_methods,
    .tp_getset = Block_getset,
};

/* How far back from the end of the pool's deferred frees a compiled call looks for its
 * request: a call that takes a workspace and a result finds the workspace its last run gave
 * back behind the result the caller dropped since (the frees are queued in that order) */
#define GP_REUSE_DEPTH 4

/* A new Block for `nbytes` on `stream` from one of pool's GP_REUSE_DEPTH most recent
 * deferred frees that was the same request (nbytes) on the same stream (the most recent
 * first; the scan stops at an entry that is not a chunk's free): popped under the GIL with
 * no Python code running, so no counter changes (one free and one malloc of the same size
 * cancel out). New reference; NULL with no exception set when there is no such chunk. */
static PyObject *block_reuse(PyObject *pool, PyObject *deferred, PyObject *nbytes, PyObject *stream,
                             PyObject *device_id) {
    Py_ssize_t n = PyList_GET_SIZE(deferred);
    for (Py_ssize_t i = n - 1; i >= 0 && i >= n - GP_REUSE_DEPTH; i--) {
        PyObject *item = PyList_GET_ITEM(deferred, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) return NULL;
        PyObject *c = PyTuple_GET_ITEM(item, 0), *nb = PyTuple_GET_ITEM(item, 1);
        int same = PyObject_RichCompareBool(nb, nbytes, Py_EQ);
        if (same < 0) { PyErr_Clear(); return NULL; }
        if (!same) continue;
        PyObject *arena = PyObject_GetAttr(c, str_arena);
        if (arena == NULL) { PyErr_Clear(); return NULL; }
        PyObject *owner = arena == Py_None ? NULL : PyObject_GetAttr(arena, str_stream);
        Py_DECREF(arena);
        if (owner == NULL) { PyErr_Clear(); return NULL; }
        same = PyObject_RichCompareBool(owner, stream, Py_EQ);
        Py_DECREF(owner);
        if (same < 0) { PyErr_Clear(); return NULL; }
        if (!same) continue;
        PyObject *ptr = PyObject_GetAttr(c, str_ptr_b);
        PyObject *size = ptr ? PyObject_GetAttr(c, str_size) : NULL;
        if (size == NULL) { Py_XDECREF(ptr); PyErr_Clear(); return NULL; }
        Block *b = (Block *)BlockType.tp_alloc(&BlockType, 0);
        if (b == NULL) { Py_DECREF(ptr); Py_DECREF(size); return NULL; }
        b->ptr = ptr;
        b->size = size;
        b->nbytes = Py_NewRef(nbytes);
        b->device_id = Py_NewRef(device_id);
        b->stream = Py_NewRef(stream);
        b->chunk = Py_NewRef(c);
        b->pool = Py_NewRef(pool);
        if (PyList_SetSlice(deferred, i, i + 1, NULL) < 0) {  /* drop the queued free */
            Py_SETREF(b->chunk, Py_NewRef(Py_None));  /* not ours after all: free nothing */
            Py_DECREF(b);
            PyErr_Clear();
            return NULL;
        }
        return (PyObject *)b;
    }
    return NULL;
}

/* What a compiled table entry keeps of a pool and a device to allocate its results: new
 * references to pool.malloc, pool._deferred (NULL when the pool has no deferred list) and
 * device._id. 0, or -1 with an exception set and nothing kept. */
int gp_pool_refs(PyObject *pool, PyObject *device, PyObject **malloc, PyObject **deferred, PyObject **devid) {
    *malloc = PyObject_GetAttrString(pool, "malloc");
    if (*malloc == NULL) return -1;
    *deferred = PyObject_GetAttrString(pool, "_deferred");
    if (*deferred == NULL || !PyList_CheckExact(*deferred)) {
        PyErr_Clear();
        Py_CLEAR(*deferred);
    }
    *devid = PyObject_GetAttrString(device, "_id");
    if (*devid == NULL) {
        Py_CLEAR(*malloc);
        Py_CLEAR(*deferred);
        return -1;
    }
    return 0;
}

/* A block of `nbytes` for a compiled call on the stream whose ptr is `sptr`: one of the pool's
 * last deferred frees of the same request on that stream (block_reuse), else a new
 * pool.malloc(nbytes, sptr) (`deferred` may be NULL). New reference, or NULL with an
 * exception set. */
PyObject *gp_block_take(PyObject *pool, PyObject *malloc, PyObject *deferred, PyObject *devid, PyObject *nbytes,
                        PyObject *sptr) {
    PyObject *blk = NULL;
    if (deferred != NULL && PyList_GET_SIZE(deferred)) blk = block_reuse(pool, deferred, nbytes, sptr, devid);
    if (blk == NULL && !PyErr_Occurred()) {
        PyObject *margs[2] = {nbytes, sptr};
        blk = PyObject_Vectorcall(malloc, margs, 2, NULL);
    }
    return blk;
}

/* The device address of pool block blk (0 for None): 0, or -1 with an exception set */
int gp_block_ptr(PyObject *blk, unsigned long long *p) {
    if (blk == Py_None) { *p = 0; return 0; }
    PyObject *o = PyObject_GetAttr(blk, str_ptr_b);
    if (o == NULL) return -1;
    *p = PyLong_AsUnsignedLongLong(o);
    Py_DECREF(o);
    return (*p == (unsigned long long)-1 && PyErr_Occurred()) ? -1 : 0;
}

/* The ptr of device devid's current stream: a new reference, or NULL with an exception set */
PyObject *gp_stream_ptr(PyObject *devid) {
    PyObject *stream = gp_stream_of(devid);
    if (stream == NULL) return NULL;
    PyObject *p = PyObject_GetAttr(stream, str_ptr_b);
    Py_DECREF(stream);
    return p;
}

/* The result block of a compiled call: `nbytes` on device devid's current stream
 * (gp_block_take). New reference, with *sptr a new reference to the stream's ptr; NULL with
 * an exception set (and *sptr NULL). */
PyObject *gp_result_block(PyObject *pool, PyObject *malloc, PyObject *deferred, PyObject *devid, PyObject *nbytes,
                          PyObject **sptr) {
    *sptr = gp_stream_ptr(devid);
    if (*sptr == NULL) return NULL;
    PyObject *blk = gp_block_take(pool, malloc, deferred, devid, nbytes, *sptr);
    if (blk == NULL) Py_CLEAR(*sptr);
    return blk;
}

int gp_block_init(PyObject *m) {
    str_deferred = PyUnicode_InternFromString("_deferred");
    str_release = PyUnicode_InternFromString("_release");
    str_arena = PyUnicode_InternFromString("arena");
    str_stream = PyUnicode_InternFromString("stream");
    str_ptr_b = PyUnicode_InternFromString("ptr");
    str_size = PyUnicode_InternFromString("size");
    if (!str_arena || !str_stream || !str_ptr_b || !str_size) return -1;
    zero_int = PyLong_FromLong(0);
    if (str_release == NULL || str_deferred == NULL || zero_int == NULL || PyType_Ready(&BlockType) < 0) return -1;
    Py_INCREF(&BlockType);
    return PyModule_AddObject(m, "Block", (PyObject *)&BlockType);
}
