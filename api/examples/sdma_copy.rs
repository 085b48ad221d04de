//! Open the KFD (or the built-in model, as kmtinfo does), list the nodes, copy 1 MiB from host
//! memory to VRAM and back with SDMA, and check it. `cargo run -p hsakmt-api --example sdma_copy`.

use hsakmt_api::{packet::sdma, Device, MemFlags};
use std::error::Error;
use std::time::Duration;

fn main() -> Result<(), Box<dyn Error>> {
    let dev = Device::open()?;
    println!("{:?} (KFD {}.{})", dev.backend(), dev.version().0, dev.version().1);
    for n in dev.nodes()? {
        println!("  node {}: {} {}", n.id(), n.name(), n.gfx_target().unwrap_or_else(|| "CPU".into()));
    }
    let gpu = dev.gpus()?.into_iter().next().ok_or("no GPU node")?;
    let len = 1u64 << 20;
    let mut host = dev.alloc(&gpu, len, MemFlags::host().uncached())?;
    let mut vram = dev.alloc(&gpu, len, MemFlags::vram())?;
    let mut back = dev.alloc(&gpu, len, MemFlags::host().uncached())?;
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    host.write(0, &data)?;
    let (host, vram, back) = (host.map_to(&[&gpu])?, vram.map_to(&[&gpu])?, back.map_to(&[&gpu])?);

    let q = dev.queue(&gpu).sdma()?;
    let done = dev.event(&gpu)?;
    q.submit(&[
        sdma::Repr::copy_linear(host.gpu_addr(), vram.gpu_addr(), len as u32),
        sdma::Repr::copy_linear(vram.gpu_addr(), back.gpu_addr(), len as u32),
        sdma::Repr::fence(done.mailbox(), done.id()),
        sdma::Repr::Trap { int_context: done.id() },
    ])?;
    done.wait(Duration::from_secs(10))?;
    let mut got = vec![0u8; len as usize];
    back.read(0, &mut got)?;
    if got != data {
        return Err("the data copied through VRAM differs".into());
    }
    println!("SDMA host → VRAM → host, {len} bytes: OK");
    Ok(())
}
