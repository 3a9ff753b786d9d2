"""The namespace: one module per section of the standard (argument checks, dtype and shape
rules, one call into the engines, Arrays built from the results). ``gparray/__init__.py``
re-exports it."""
