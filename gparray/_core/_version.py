"""gparray's version (hashed into the kernel cache key)."""
__version__ = "0.1.0"
