//! A minimal reader of AMDGPU ELF code objects (ELF64, little-endian, `EM_AMDGPU`): the
//! loadable segments and the symbol table, which is all a loader needs to place a code object
//! in GPU memory and find its kernels' descriptors (`<kernel>.kd` symbols).

/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
const PT_LOAD: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;

/// Why bytes are not a code object we can load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfError {
    NotElf64Le,
    NotAmdgpu,
    /// A header, segment or table points outside the file.
    OutOfBounds,
}

/// One `PT_LOAD` segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub offset: u64,
    pub filesz: u64,
    pub memsz: u64,
}

/// A parsed code object, borrowing the file.
#[derive(Debug)]
pub struct CodeObject<'a> {
    pub bytes: &'a [u8],
    pub segments: Vec<Segment>,
    /// (name, value, size) of every named symbol.
    pub symbols: Vec<(String, u64, u64)>,
}

fn get<const N: usize>(b: &[u8], at: u64) -> Result<[u8; N], ElfError> {
    let at = usize::try_from(at).map_err(|_| ElfError::OutOfBounds)?;
    b.get(at..at.checked_add(N).ok_or(ElfError::OutOfBounds)?).and_then(|s| s.try_into().ok()).ok_or(ElfError::OutOfBounds)
}
fn u16_at(b: &[u8], at: u64) -> Result<u16, ElfError> {
    Ok(u16::from_le_bytes(get(b, at)?))
}
fn u32_at(b: &[u8], at: u64) -> Result<u32, ElfError> {
    Ok(u32::from_le_bytes(get(b, at)?))
}
fn u64_at(b: &[u8], at: u64) -> Result<u64, ElfError> {
    Ok(u64::from_le_bytes(get(b, at)?))
}

impl<'a> CodeObject<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<CodeObject<'a>, ElfError> {
        if bytes.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1][..]) {
            return Err(ElfError::NotElf64Le);
        }
        if u16_at(bytes, 18)? != EM_AMDGPU {
            return Err(ElfError::NotAmdgpu);
        }
        let (phoff, shoff) = (u64_at(bytes, 32)?, u64_at(bytes, 40)?);
        let (phentsize, phnum) = (u64::from(u16_at(bytes, 54)?), u64::from(u16_at(bytes, 56)?));
        let (shentsize, shnum) = (u64::from(u16_at(bytes, 58)?), u64::from(u16_at(bytes, 60)?));
        let mut segments = Vec::new();
        for i in 0..phnum {
            let p = phoff + i * phentsize;
            if u32_at(bytes, p)? == PT_LOAD {
                let s = Segment {
                    offset: u64_at(bytes, p + 8)?,
                    vaddr: u64_at(bytes, p + 16)?,
                    filesz: u64_at(bytes, p + 32)?,
                    memsz: u64_at(bytes, p + 40)?,
                };
                if s.offset.checked_add(s.filesz).is_none_or(|end| end > bytes.len() as u64) || s.filesz > s.memsz {
                    return Err(ElfError::OutOfBounds);
                }
                segments.push(s);
            }
        }
        let mut symbols = Vec::new();
        for i in 0..shnum {
            let sh = shoff + i * shentsize;
            let kind = u32_at(bytes, sh + 4)?;
            if kind != SHT_SYMTAB && kind != SHT_DYNSYM {
                continue;
            }
            let (off, size, link, entsize) =
                (u64_at(bytes, sh + 24)?, u64_at(bytes, sh + 32)?, u64::from(u32_at(bytes, sh + 40)?), u64_at(bytes, sh + 56)?);
            let strsh = shoff + link * shentsize;
            let (stroff, strsize) = (u64_at(bytes, strsh + 24)?, u64_at(bytes, strsh + 32)?);
            if entsize < 24 {
                return Err(ElfError::OutOfBounds);
            }
            for j in 0..size / entsize {
                let s = off + j * entsize;
                let name_off = u64::from(u32_at(bytes, s)?);
                if name_off == 0 || name_off >= strsize {
                    continue;
                }
                let start = usize::try_from(stroff + name_off).map_err(|_| ElfError::OutOfBounds)?;
                let tail = bytes.get(start..).ok_or(ElfError::OutOfBounds)?;
                let end = tail.iter().position(|&c| c == 0).ok_or(ElfError::OutOfBounds)?;
                let name = String::from_utf8_lossy(&tail[..end]).into_owned();
                if !symbols.iter().any(|(n, _, _)| *n == name) {
                    symbols.push((name, u64_at(bytes, s + 8)?, u64_at(bytes, s + 16)?));
                }
            }
        }
        Ok(CodeObject { bytes, segments, symbols })
    }

    /// The value of the symbol `name`.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        self.symbols.iter().find(|(n, _, _)| n == name).map(|s| s.1)
    }

    /// Bytes the loaded image spans from address 0 (the highest segment end).
    pub fn image_len(&self) -> u64 {
        self.segments.iter().map(|s| s.vaddr + s.memsz).max().unwrap_or(0)
    }

    /// The image as loaded at address 0: segment bytes at their vaddr, the rest zero.
    pub fn image(&self) -> Vec<u8> {
        let mut img = vec![0u8; self.image_len() as usize];
        for s in &self.segments {
            let src = &self.bytes[s.offset as usize..(s.offset + s.filesz) as usize];
            img[s.vaddr as usize..(s.vaddr + s.filesz) as usize].copy_from_slice(src);
        }
        img
    }
}
