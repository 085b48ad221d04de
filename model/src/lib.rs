//! hsakmt-model: the software KFD.
pub mod catalogue;
pub mod vfs;
pub use catalogue::catalogue_names;
