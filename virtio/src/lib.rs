//! hsakmt-virtio: the thunk API carried over virtio-gpu, as upstream's `vhsaKmt*` API
//! (`hsakmt_virtio.h`) does: the protocol ([`proto`]), the host end that runs it on a thunk
//! context ([`host`]), and transports between a guest and a host ([`loopback`], [`drm`]). The guest's
//! C exports live in libhsakmt (hsakmt-ffi). Design: `docs/virtio.md`.

pub mod drm;
pub mod guest;
pub mod host;
pub mod loopback;
pub mod proto;
