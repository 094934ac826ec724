//! Daemon wiring shared by the client box and the POP: config → I/O → event loops, control socket.
