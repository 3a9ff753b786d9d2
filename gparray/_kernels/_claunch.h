/* Shared between the compiled launcher (_claunch.c) and the compiled elementwise fast
 * paths (_claunch_ops.c), which build one extension module, gparray._kernels._claunch. */
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
/* a Block reusing pool's last deferred free of the same request on the same stream, or
 * NULL (no exception set) */
PyObject *gp_block_reuse(PyObject *pool, PyObject *deferred, PyObject *nbytes, PyObject *stream, PyObject *device_id);

/* the offset of object slot ``name`` (a __slots__ member) of class t: 0, or -1 with a
 * TypeError set (_claunch_ops.c) */
int gp_slot_offset(PyTypeObject *t, const char *name, Py_ssize_t *off);
/* add the join scan (_claunch_join.c) to the module: 0 or -1 */
int gp_join_init(PyObject *module);

#endif
