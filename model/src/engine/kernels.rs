//! The model's built-in kernels (hsakmt_core::packet::model_kernel): what a dispatch runs in
//! place of shader code. The descriptor and the kernarg are read through the GPU page table,
//! so an unmapped kernel object or kernarg segment faults like on hardware.

use super::{bad_ec, Exec, Halt, CHUNK};
use hsakmt_core::abi::kfd::EC_QUEUE_PACKET_DISPATCH_CODE_INVALID as CODE_INVALID;
use hsakmt_core::packet::model_kernel::{Args, Descriptor, DESCRIPTOR_ALIGN, DESCRIPTOR_LEN};

/// Run the kernel whose descriptor is at `desc_va` with the kernarg at `kernarg_va`; `at` is
/// the dispatching packet's position (for errors).
pub(super) fn run(x: &Exec<'_>, desc_va: u64, kernarg_va: u64, at: u64) -> Result<(), Halt> {
    if !desc_va.is_multiple_of(DESCRIPTOR_ALIGN) {
        return Err(bad_ec(at, "kernel object is not 256-byte aligned", CODE_INVALID));
    }
    let mut d = [0u8; DESCRIPTOR_LEN];
    x.read(desc_va, &mut d)?;
    let desc = Descriptor::parse(&d).map_err(|_| bad_ec(at, "kernel object is not a model kernel descriptor", CODE_INVALID))?;
    let mut a = [0u8; hsakmt_core::packet::model_kernel::ARGS_LEN];
    let n = desc.kernel.args_len();
    if n > 0 {
        x.read(kernarg_va, &mut a[..n])?;
    }
    match Args::parse(desc.kernel, &a[..n]).map_err(|_| bad_ec(at, "model kernel arguments out of range", CODE_INVALID))? {
        Args::Nop => Ok(()),
        Args::Fill(f) => fill(x, f.dst, &f.value.to_le_bytes(), f.count * 4),
        Args::Copy(c) => copy(x, c.dst, c.src, c.bytes),
    }
}

/// Store `bytes` bytes at `dst`, repeating `pattern` (1, 2 or 4 bytes) from its first byte.
pub(super) fn fill(x: &Exec<'_>, dst: u64, pattern: &[u8], bytes: u64) -> Result<(), Halt> {
    let chunk_len = (bytes.min(CHUNK as u64)) as usize;
    let chunk: Vec<u8> = (0..chunk_len).map(|i| pattern[i % pattern.len()]).collect();
    let mut done = 0u64;
    while done < bytes {
        let n = (bytes - done).min(chunk_len as u64) as usize;
        // CHUNK is a multiple of every pattern length, so each chunk starts on a pattern boundary.
        x.write(dst.wrapping_add(done), &chunk[..n])?;
        x.count_written(n as u64);
        done += n as u64;
    }
    Ok(())
}

/// Copy `bytes` bytes from `src` to `dst`, front to back in chunks.
pub(super) fn copy(x: &Exec<'_>, dst: u64, src: u64, bytes: u64) -> Result<(), Halt> {
    let mut buf = vec![0u8; bytes.min(CHUNK as u64) as usize];
    let mut done = 0u64;
    while done < bytes {
        let n = (bytes - done).min(buf.len() as u64) as usize;
        x.read(src.wrapping_add(done), &mut buf[..n])?;
        x.count_read(n as u64);
        x.write(dst.wrapping_add(done), &buf[..n])?;
        x.count_written(n as u64);
        done += n as u64;
    }
    Ok(())
}
