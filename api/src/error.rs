//! The crate's one error type.

use hsakmt_core::Status;
use std::fmt;

/// What went wrong in a call of this crate.
///
/// Every fallible function returns `Result<T, Error>`. `Error` implements
/// [`std::error::Error`] (`core::error::Error`), so `?` turns it into `Box<dyn Error>`:
///
/// ```
/// fn first_gpu_name() -> Result<String, Box<dyn std::error::Error>> {
///     let dev = hsakmt_api::Device::open_model("mi210")?;
///     let gpu = dev.gpus()?.into_iter().next().ok_or("no GPU")?;
///     Ok(gpu.name())
/// }
/// assert!(first_gpu_name().unwrap().contains("MI210"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    status: Option<Status>,
    message: String,
}

/// The class of an [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Opening `/dev/kfd` or the model failed (or the KFD's interface is not supported).
    Open,
    /// Reading the topology failed.
    Topology,
    /// The thunk answered an `HSAKMT_STATUS` other than success ([`Error::status`]).
    Status,
    /// A wait ran out of time.
    Timeout,
    /// An argument this crate checks itself (an offset past a buffer's end, a size of 0, CPU
    /// access to memory the CPU cannot reach, …).
    InvalidArgument,
    /// A queue's ring has no room for the packets (the GPU has not consumed enough yet).
    RingFull,
    /// Not available in this build or on this backend.
    Unsupported,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, status: None, message: message.into() }
    }

    /// `what` (the operation) answered `status`.
    pub(crate) fn status(what: &str, status: Status) -> Error {
        let kind = if status == Status::WAIT_TIMEOUT { ErrorKind::Timeout } else { ErrorKind::Status };
        Error { kind, status: Some(status), message: format!("{what}: {status}") }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The thunk's status code, when the error came from the thunk.
    pub fn hsakmt_status(&self) -> Option<Status> {
        self.status
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<hsakmt_core::context::OpenError> for Error {
    fn from(e: hsakmt_core::context::OpenError) -> Error {
        Error { kind: ErrorKind::Open, status: Some(e.status), message: e.message }
    }
}

impl From<hsakmt_core::topology::TopologyError> for Error {
    fn from(e: hsakmt_core::topology::TopologyError) -> Error {
        Error { kind: ErrorKind::Topology, status: Some(e.status), message: format!("topology: {e}") }
    }
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Map a thunk status to an [`Error`] naming the operation.
pub(crate) fn st<T>(what: &'static str, r: std::result::Result<T, Status>) -> Result<T> {
    r.map_err(|s| Error::status(what, s))
}
