//! satlink emulator I/O: AF_PACKET sockets in the `sat` namespace driving `link` in real time.
