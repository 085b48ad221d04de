//! File access for the snapshot: one reusable read buffer, path formatting without heap
//! allocation, and turning a failed read into a [`TopologyError`] that names the path.

use super::TopologyError;
use crate::port::{Kfd, SysTree};
use crate::status::{Errno, Status};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::{self, Write};

/// Size of the shared read buffer. sysfs caps a properties file at one page, but cache files
/// with long `sibling_map` lines and model-generated files may be longer; anything past this
/// is reported by the port as ERANGE and treated as a malformed file.
pub(crate) const FILE_BUF_SIZE: usize = 16 * 1024;

/// A relative path inside one of the port's trees.
pub(crate) type PathBuf = heapless::String<128>;

/// Reads files through the port into one buffer that every read reuses.
pub(crate) struct Reader<'k> {
    pub(crate) kfd: &'k dyn Kfd,
    buf: Vec<u8>,
    path: PathBuf,
}

/// The bytes of a file just read, with the path they came from.
pub(crate) struct File<'b> {
    pub(crate) data: &'b [u8],
    pub(crate) path: &'b str,
}

impl<'b> File<'b> {
    /// An error about this file.
    pub(crate) fn error(&self, status: Status, reason: &'static str) -> TopologyError {
        TopologyError::new(status, reason, self.path)
    }
}

impl<'k> Reader<'k> {
    pub(crate) fn new(kfd: &'k dyn Kfd) -> Self {
        Reader { kfd, buf: vec![0u8; FILE_BUF_SIZE], path: PathBuf::new() }
    }

    /// Set the path the next [`Reader::read`] or [`Reader::error`] refers to.
    pub(crate) fn set_path(&mut self, args: fmt::Arguments<'_>) -> Result<(), TopologyError> {
        self.path.clear();
        if self.path.write_fmt(args).is_err() {
            return Err(TopologyError::new(Status::ERROR, "path too long", &self.path));
        }
        Ok(())
    }

    /// An error about the current path.
    pub(crate) fn error(&self, status: Status, reason: &'static str) -> TopologyError {
        TopologyError::new(status, reason, &self.path)
    }

    /// Read the file at the current path of `tree` with one port call.
    pub(crate) fn read(&mut self, tree: SysTree) -> Result<File<'_>, Errno> {
        let n = self.kfd.read_file(tree, &self.path, &mut self.buf)?;
        // A port that claims more than it was given is clamped rather than trusted.
        let data = self.buf.get(..n).unwrap_or(&self.buf);
        Ok(File { data, path: &self.path })
    }

    /// Format a path and read it: the usual pair.
    pub(crate) fn read_at(&mut self, tree: SysTree, args: fmt::Arguments<'_>) -> Result<File<'_>, ReadError> {
        self.set_path(args).map_err(ReadError::Path)?;
        self.read(tree).map_err(ReadError::Errno)
    }

    /// Whether a directory exists (the port counts its numbered entries, which we ignore).
    pub(crate) fn dir_exists(&mut self, tree: SysTree, args: fmt::Arguments<'_>) -> Result<bool, TopologyError> {
        self.set_path(args)?;
        match self.kfd.count_numbered_entries(tree, &self.path) {
            Ok(_) => Ok(true),
            Err(Errno(Errno::ENOENT)) | Err(Errno(Errno::ENOTDIR)) => Ok(false),
            Err(_) => Err(self.error(Status::ERROR, "cannot list directory")),
        }
    }
}

/// A failed [`Reader::read_at`].
pub(crate) enum ReadError {
    /// The path did not fit the buffer (cannot happen with the paths we build).
    Path(TopologyError),
    /// The port's answer.
    Errno(Errno),
}

impl ReadError {
    /// The error a failed read of a mandatory file becomes: upstream's `fopen` failure or empty
    /// `fread` is HSAKMT_STATUS_ERROR.
    pub(crate) fn into_error(self, r: &Reader<'_>) -> TopologyError {
        match self {
            ReadError::Path(e) => e,
            ReadError::Errno(Errno(Errno::ENOENT)) => r.error(Status::ERROR, "file missing"),
            ReadError::Errno(Errno(Errno::ERANGE)) => r.error(Status::ERROR, "file too large"),
            ReadError::Errno(_) => r.error(Status::ERROR, "cannot read file"),
        }
    }
}
