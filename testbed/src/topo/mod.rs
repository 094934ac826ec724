//! Namespace topology `pc — box — [sat] — pop — srv`: create, exec, guaranteed cleanup.
