//! Real AMD machine code on the model GPU (issue 14): gfx90a, gfx942, gfx1100; see model/ISA.md.
//!
//! - [`descriptor`]: the code object v4/v5 `kernel_descriptor_t` an AQL dispatch names.
//! - [`elf`]: a minimal reader of AMDGPU ELF code objects (tests and tools load kernels with it).
//! - [`gfx9`]: the gfx90a and gfx942 decoder (our own tables, from AMD's ISA documentation; LLVM's
//!   disassembler is the test oracle) and its LLVM-syntax printer.
//! - `print`: printing pieces the two decoders' printers share.
//! - [`fp`]: the float operations of division, square roots and the transcendentals.
//! - `wave`: wave launch and the interpreter, running through the GPU page table.

pub mod descriptor;
pub mod elf;
pub mod fp;
pub mod gfx11;
pub mod gfx9;
mod print;
pub(crate) mod wave;
