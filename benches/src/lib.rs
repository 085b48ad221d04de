//! Shared set-up for the criterion benches (the benches themselves are in `benches/`): the null
//! port that measures the thunk alone.

pub mod null_port;
