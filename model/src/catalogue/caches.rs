//! GPU cache entries as the kernel derives them (kfd_crat.c / kfd_topology.c,
//! `kfd_fill_cache_non_crat_info`): per cache type, level-1 caches are emitted per XCC, shader
//! engine, shader array and block of `num_cu_shared` CU slots that holds an active CU; level-2
//! and level-3 caches once per node.

use super::sysfs::Cache;

/// `type` bits: HSA_CACHE_TYPE_DATA | HSA_CACHE_TYPE_HSACU.
pub const DATA: u64 = 1 | 8;
/// `type` bits: HSA_CACHE_TYPE_INSTRUCTION | HSA_CACHE_TYPE_HSACU.
pub const INST: u64 = 2 | 8;

/// One row of a per-ASIC cache table.
#[derive(Clone, Copy, Debug)]
pub struct CacheKind {
    pub size_kib: u64,
    pub level: u64,
    pub cache_type: u64,
    pub num_cu_shared: u32,
    pub line: u64,
}

pub const fn kind(size_kib: u64, level: u64, cache_type: u64, shared: u32, line: u64) -> CacheKind {
    CacheKind { size_kib, level, cache_type, num_cu_shared: shared, line }
}

/// The CU layout of one node (partition).
pub struct CuLayout {
    pub num_xcc: u32,
    pub se_per_xcc: u32,
    pub sa_per_se: u32,
    /// CU slots per shader array (`cu_per_simd_array`).
    pub cu_slots: u32,
    /// Active-CU bitmap of (xcc, se, sa).
    pub active: fn(u32, u32, u32) -> u32,
}

fn set_word(map: &mut [u8; 32], word: usize, mask: u32) {
    if word < 8 {
        map[word * 4..word * 4 + 4].copy_from_slice(&mask.to_le_bytes());
    }
}

fn shared_mask(n: u32) -> u32 {
    if n >= 32 {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

/// Generate the caches of one node whose CUs are numbered from `processor_base`.
pub fn generate(kinds: &[CacheKind], l: &CuLayout, processor_base: u64) -> Vec<Cache> {
    let mut out = Vec::new();
    for k in kinds {
        let mut cu_id = processor_base;
        if k.level == 1 {
            for xcc in 0..l.num_xcc {
                for se in 0..l.se_per_xcc {
                    for sa in 0..l.sa_per_se {
                        let bitmap = (l.active)(xcc, se, sa);
                        let mut slot = 0;
                        while slot < l.cu_slots {
                            let mask = (bitmap >> slot) & shared_mask(k.num_cu_shared);
                            if mask != 0 {
                                let first = mask.trailing_zeros();
                                let mut sibling_map = [0u8; 32];
                                set_word(&mut sibling_map, 0, mask >> first);
                                out.push(Cache {
                                    processor_id_low: cu_id + u64::from(first),
                                    level: k.level,
                                    size: k.size_kib,
                                    cache_line_size: k.line,
                                    cache_type: k.cache_type,
                                    sibling_map,
                                });
                            }
                            let step = k.num_cu_shared.min(l.cu_slots - slot);
                            cu_id += u64::from(step);
                            slot += k.num_cu_shared;
                        }
                    }
                }
            }
        } else {
            // One entry for the node; its sibling map lists the (shared-masked) CU bitmap of each
            // shader array in turn, 32 bits each, as far as the 256-bit map reaches.
            let mut words = Vec::new();
            for xcc in 0..l.num_xcc {
                for se in 0..l.se_per_xcc {
                    for sa in 0..l.sa_per_se {
                        words.push((l.active)(xcc, se, sa) & shared_mask(k.num_cu_shared));
                    }
                }
            }
            let Some(first_word) = words.iter().copied().find(|w| *w != 0) else {
                continue;
            };
            let first = first_word.trailing_zeros();
            let mut sibling_map = [0u8; 32];
            for (i, w) in words.iter().enumerate() {
                let w = if i == 0 { w >> first } else { *w };
                set_word(&mut sibling_map, i, w);
            }
            out.push(Cache {
                processor_id_low: processor_base + u64::from(first),
                level: k.level,
                size: k.size_kib,
                cache_line_size: k.line,
                cache_type: k.cache_type,
                sibling_map,
            });
        }
    }
    out
}
