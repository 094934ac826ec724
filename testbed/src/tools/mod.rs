//! Measurement tools run on the end hosts (owd-bulk, ...).
