//! PEP cores (pure): flow table, per-direction relay state, bypass rules, buffer sizing.
