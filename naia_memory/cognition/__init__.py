"""Pure, deterministic cognitive modules: no I/O, time passed in as an argument."""
