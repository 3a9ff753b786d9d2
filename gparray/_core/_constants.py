"""Constants (spec section "Constants"): e, inf, nan, newaxis, pi."""
import math

e = math.e
inf = math.inf
nan = math.nan
newaxis = None
pi = math.pi
