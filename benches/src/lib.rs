//! Shared set-up for the criterion benches (the benches themselves are in `benches/`).
