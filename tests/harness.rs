//! Shared harness for the netns integration tests: locating the built binaries, topology guards.
