//! Configuration: wg-quick syntax (strict, file:line:key errors) parsed into typed structs (pure).
