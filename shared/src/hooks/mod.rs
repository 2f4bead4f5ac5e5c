//! Host hook I/O.
