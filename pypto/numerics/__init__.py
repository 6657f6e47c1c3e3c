"""Bit-exact numerics of the simulated accelerator (hardware casts, rounding modes)."""
