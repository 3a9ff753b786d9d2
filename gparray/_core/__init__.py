"""The bottom layer: dtypes and the promotion table, constants, the CUDA backend bindings,
devices, CUDA error reporting and the host-conversion policy. Imports nothing of gparray."""
