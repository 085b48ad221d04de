//! Memory banks and KFD-reported caches: parsing `mem_banks/M/properties` and
//! `caches/C/properties` (with its trailing `sibling_map` list) into the C structs.

use super::props::{parse_sibling_list, Props};
use crate::abi::hsakmt::{HsaCacheProperties, HsaMemoryProperties};
use zerocopy::FromZeros;

/// Parse one memory bank. The heap type is the kernel's choice (FB_PUBLIC for large-BAR
/// VRAM, FB_PRIVATE otherwise, SYSTEM for CPU memory); the thunk copies it unchanged.
/// `heap_type` and `size_in_bytes` are printed by every kernel, so a file without them is
/// truncated or garbled.
pub(crate) fn parse_mem_bank(text: &[u8]) -> Result<HsaMemoryProperties, &'static str> {
    let mut m = HsaMemoryProperties::new_zeroed();
    let (mut heap, mut size) = (false, false);
    let mut pairs = 0usize;
    for (key, v) in Props::new(text) {
        pairs += 1;
        match key {
            b"heap_type" => {
                m.HeapType = v as u32;
                heap = true;
            }
            b"size_in_bytes" => {
                m.__anon_union_1.SizeInBytes = v;
                size = true;
            }
            b"flags" => m.Flags.Value = v as u32,
            b"width" => m.Width = v as u32,
            b"mem_clk_max" => m.MemoryClockMax = v as u32,
            _ => {}
        }
    }
    if pairs == 0 {
        return Err("no properties (empty or garbled file)");
    }
    if !(heap && size) {
        return Err("mandatory memory bank property missing (truncated or garbled file)");
    }
    Ok(m)
}

/// Parse one KFD cache. `size` is in KiB as KFD writes it and is copied raw. The key loop
/// ends at `sibling_map`, whose comma list fills SiblingMap\[i\] with bit i of the mask.
/// `level`, `size` and `type` are printed by every kernel.
pub(crate) fn parse_cache(text: &[u8]) -> Result<HsaCacheProperties, &'static str> {
    let mut c = HsaCacheProperties::new_zeroed();
    let mut seen = 0u8;
    let mut pairs = 0usize;
    let mut props = Props::new(text);
    let mut siblings: Option<&[u8]> = None;
    while let Some((key, v)) = props.next() {
        pairs += 1;
        let v32 = v as u32;
        match key {
            b"processor_id_low" => c.ProcessorIdLow = v32,
            b"level" => {
                c.CacheLevel = v32;
                seen |= 1;
            }
            b"size" => {
                c.CacheSize = v32;
                seen |= 2;
            }
            b"cache_line_size" => c.CacheLineSize = v32,
            b"cache_lines_per_tag" => c.CacheLinesPerTag = v32,
            b"association" => c.CacheAssociativity = v32,
            b"latency" => c.CacheLatency = v32,
            b"type" => {
                c.CacheType.Value = v32;
                seen |= 4;
            }
            b"sibling_map" => {
                siblings = Some(props.rest_from_value());
                break;
            }
            _ => {}
        }
    }
    if pairs == 0 {
        return Err("no properties (empty or garbled file)");
    }
    if seen != 7 {
        return Err("mandatory cache property missing (truncated or garbled file)");
    }
    if let Some(list) = siblings {
        parse_sibling_list(list, &mut c.SiblingMap);
    }
    Ok(c)
}
