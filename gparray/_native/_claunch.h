/* Shared between the compiled launcher (_claunch.c), the compiled elementwise fast paths
 * (_claunch_ops.c, _claunch_table.c, _claunch_prof.c), the user kernel launches
 * (_claunch_user.c) and the pool and join helpers, which
 * build one extension module, gparray._native._claunch. */
#ifndef GP_CLAUNCH_H
#define GP_CLAUNCH_H

#include <Python.h>
#include <stdint.h>

#define GP_BUFSIZE 4096  /* the kernel parameter limit of older drivers */
#define GP_MAXVALS 512
#define GP_MAXPARAMS 512

enum { V_BOOL, V_I8, V_U8, V_I16, V_U16, V_I32, V_U32, V_I64, V_U64, V_F16, V_F32, V_F64, V_BYTES };

typedef struct {
    PyObject_HEAD
    void *func;
    Py_ssize_t size;      /* bytes of the parameter buffer */
    Py_ssize_t nvals;
    Py_ssize_t nparams;
    unsigned char kind[GP_MAXVALS];
    uint16_t off[GP_MAXVALS];
    uint16_t len[GP_MAXVALS];
    uint16_t poff[GP_MAXPARAMS];
    vectorcallfunc vectorcall;
    int pdl;              /* launched with programmatic stream serialization (cuLaunchKernelEx) */
} Launch;

extern PyTypeObject GpLaunchType;

/* pack values[i] of kind self->kind[i] into buf (0, or -1 with an exception set) */
int gp_pack_one(const Launch *self, Py_ssize_t i, PyObject *o, char *buf);
/* launch with a packed buffer: 0, or -1 with an exception set (context retry included) */
int gp_launch_packed(const Launch *self, unsigned grid, unsigned block, unsigned smem, void *stream, char *buf);
/* add the compiled elementwise types to the module: 0 or -1 */
int gp_ops_init(PyObject *module);
/* add the pool's Block type to the module: 0 or -1 */
int gp_block_init(PyObject *module);
/* a Block of nbytes on the stream whose ptr is sptr: one of pool's last few deferred frees
 * that was the same request on that stream, else pool.malloc (deferred may be NULL); new reference, or NULL
 * with an exception set */
PyObject *gp_block_take(PyObject *pool, PyObject *malloc, PyObject *deferred, PyObject *devid, PyObject *nbytes,
                        PyObject *sptr);
/* new references to pool.malloc, pool._deferred (NULL: none) and device._id, what a compiled
 * table entry allocates its results with: 0, or -1 with an exception set */
int gp_pool_refs(PyObject *pool, PyObject *device, PyObject **malloc, PyObject **deferred, PyObject **devid);
/* the device address of pool block blk (0 for None): 0, or -1 with an exception set */
int gp_block_ptr(PyObject *blk, unsigned long long *p);
/* the ptr of device devid's current stream: new reference, or NULL with an exception set */
PyObject *gp_stream_ptr(PyObject *devid);
/* a compiled call's result block of nbytes on device devid's current stream (one of the last
 * deferred frees of the same request there, else pool.malloc) and *sptr the stream's ptr: new
 * references, or NULL with an exception set */
PyObject *gp_result_block(PyObject *pool, PyObject *malloc, PyObject *deferred, PyObject *devid, PyObject *nbytes,
                          PyObject **sptr);

/* the offset of object slot ``name`` (a __slots__ member) of class t: 0, or -1 with a
 * TypeError set (_claunch_ops.c) */
int gp_slot_offset(PyTypeObject *t, const char *name, Py_ssize_t *off);
/* add the join scan (_claunch_join.c) to the module: 0 or -1 */
int gp_join_init(PyObject *module);
int gp_blas_init(PyObject *module);
/* add FftCall (_claunch_fft.c) to the module: 0 or -1 */
int gp_fft_init(PyObject *module);

/* profiling of the Fast objects (_claunch_prof.c) */
extern int gp_prof_threads;  /* threads given a profiling state (0: none) */
/* this thread's state (borrowed): NULL without one (an exception set on error), Py_False
 * (take the Python path) or the recording tuple */
PyObject *gp_prof_state(void);
/* take two events (new references) and record the first on stream: 0, or -1 (none taken) */
int gp_prof_begin(PyObject *state, PyObject *devid, unsigned long long stream, PyObject **ev0, PyObject **ev1);
/* the launch failed: give both events back (stolen), keeping the exception */
void gp_prof_abort(PyObject *state, PyObject *devid, PyObject *ev0, PyObject *ev1);
/* record the second event and append the record (the events are stolen): 0 or -1 */
int gp_prof_end(PyObject *state, PyObject *label, PyObject *name, unsigned grid, unsigned block, long long nbytes,
                PyObject *devid, unsigned long long stream, PyObject *ev0, PyObject *ev1);
/* the calling thread's current CUDA context (cuCtxGetCurrent) into *ctx: 0, or -1 when the
 * driver refuses (no exception set); NULL where the driver has not been loaded yet */
int gp_current_ctx(void **ctx);
/* add set_profile to the module: 0 or -1 */
int gp_prof_init(PyObject *module);
/* add UserCall and user_configure (_claunch_user.c) to the module: 0 or -1 */
int gp_user_init(PyObject *module);
/* readies a type and adds it to the module under `name` (_claunch.c): 0, or -1 with an exception */
int gp_add_type(PyObject *module, PyTypeObject *type, const char *name);

/* ------------------------------------------------------------------ elementwise tables
 * (_claunch_table.c): the operand combinations one op serves in C (_claunch_ops.c) */
enum { SIDE_NONE = 0, SIDE_RIGHT = 1, SIDE_LEFT = 2 };  /* where a scalar operand sits */

typedef struct {
    PyObject *a;       /* dtype of the array operand (x1 of two arrays) */
    PyObject *b;       /* dtype of x2; float or int (the scalar's type); NULL: unary */
    int side;
    PyObject *device;
    PyObject *devid;   /* device._id, for get_current_stream(devid): no cudaGetDevice */
    Py_ssize_t aisz, bisz;
    int float_range;   /* the scalar's range: doubles (flo, fhi) or integers (ilo, ihi) */
    double flo, fhi;
    long long ilo, ihi;
    Launch *launch;
    PyObject *odt;
    Py_ssize_t oisz;
    long long tile;
    unsigned block;
    PyObject *pool;    /* the device's pool */
    PyObject *malloc;  /* its malloc(nbytes, stream) */
    PyObject *deferred;  /* its _deferred list (NULL: a pool without one) */
    PyObject *last_shape, *last_strides;  /* result strides of the last shape seen */
    PyObject *name;    /* the kernel's "family: instance" name, for profile records (or NULL) */
    void *ctx;         /* the CUDA context current when the entry was added (its device's):
                        * the entry serves only calls made while it is current */
} Entry;

typedef struct {
    PyObject_HEAD
    Entry *e;
    Py_ssize_t n, cap;
} Table;

static inline Entry *gp_find(Table *t, PyObject *a, PyObject *b, int side, PyObject *device) {
    Entry *e = t->e, *end = t->e + t->n;
    for (; e < end; e++)
        if (e->a == a && e->b == b && e->side == side && e->device == device) return e;
    return NULL;
}

extern PyTypeObject GpTableType;
/* add the Table type to the module: 0 or -1 */
int gp_table_init(PyObject *module);

/* ------------------------------------------------------------------ repeat reductions
 * (_claunch_reduce.c) and what they read of _claunch_ops.c's configuration */
enum { GP_SLOT_SHAPE, GP_SLOT_DTYPE, GP_SLOT_DEVICE };
/* the Array class configure() set (NULL: none; then nothing is served) */
PyTypeObject *gp_array_type(void);
/* one of an Array's slots (borrowed) */
PyObject *gp_array_slot(PyObject *x, int slot);
/* 1 C-contiguous, 0 not, -1 error */
int gp_array_contig(PyObject *x, Py_ssize_t isz);
/* the device address of x's first element: 0, or -1 with an exception set */
int gp_array_ptr(PyObject *x, unsigned long long *p);
/* a new C-contiguous Array over block blk (stolen) at offset 0 */
PyObject *gp_array_build(PyObject *blk, PyObject *shape, PyObject *strides, PyObject *dtype, PyObject *device);
/* the same with the Array's contiguity flag given: Py_True (C order) or Py_None (not known) */
PyObject *gp_array_build_as(PyObject *blk, PyObject *shape, PyObject *strides, PyObject *dtype, PyObject *device,
                            PyObject *contig);
/* the current stream object of device devid (new reference) */
PyObject *gp_stream_of(PyObject *devid);
/* whether ctx is the calling thread's current CUDA context */
int gp_ctx_is(void *ctx);
/* add RTable to the module: 0 or -1 */
int gp_reduce_init(PyObject *module);

/* ------------------------------------------------------------------ the driver entry points
 * (_claunch.c loads them from libcuda; _claunch_stubs.c swaps in the CPU tests' stand-ins) */
typedef int (*cu_launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void *, void **, void **);

typedef int (*cu_ctx_get_t)(void **);

/* cuLaunchKernelEx's configuration and one attribute, as cuda.h lays them out */
typedef struct {
    int id;
    char pad[4];
    union { char pad[64]; int i; } value;
} cu_attr_t;
typedef struct {
    unsigned gx, gy, gz, bx, by, bz, smem;
    void *stream;
    cu_attr_t *attrs;
    unsigned nattrs;
} cu_config_t;
typedef int (*cu_launch_ex_t)(const cu_config_t *, void *, void **, void **);
#define GP_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION 6

extern cu_launch_t cu_launch;
extern cu_launch_ex_t cu_launch_ex;  /* cuLaunchKernelEx (optional) */
extern int pdl_ok;                   /* 0 once the driver refused the attribute */
extern cu_ctx_get_t cu_ctx_get;      /* cuCtxGetCurrent (optional) */
extern void *stub_ctx;               /* _stub_context: the context the stand-in answers */
extern cu_ctx_get_t saved_ctx_get;   /* the driver's, while the stand-in is in place */
extern int ctx_stubbed;
extern int use_extra;                /* 0 once the driver rejected a packed buffer */
/* the stand-ins (tests): _stub_driver(log, status0=0, status1=0), _stub_context(value) */
PyObject *gp_stub_driver(PyObject *mod, PyObject *args);
PyObject *gp_stub_context(PyObject *mod, PyObject *arg);

#endif
