//! Shared set-up for the criterion benches (the benches themselves are in `benches/`): the null
//! port that measures the thunk alone, and GPU set-up through the C API.

pub mod gpu;
pub mod null_port;
