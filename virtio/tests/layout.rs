//! The offsets and sizes `proto.rs` states, checked against the compiler-computed layout of
//! upstream's protocol structs (`tests/data/proto-layout.tsv`, see SOURCE.md there).

use hsakmt_core::abi::generation::Record;
use hsakmt_virtio::proto::{self, event, gl_inter, memory, query, queue};
use std::collections::HashMap;

type Types = HashMap<String, (usize, usize)>;
type Fields = HashMap<(String, String), (usize, usize)>;

fn table() -> (Types, Fields) {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/proto-layout.tsv")).expect("the layout table");
    let (mut types, mut fields) = (HashMap::new(), HashMap::new());
    for line in text.lines() {
        let c: Vec<&str> = line.split('\t').collect();
        match c[0] {
            "type" => {
                types.insert(c[1].to_string(), (c[2].parse().unwrap(), c[3].parse().unwrap()));
            }
            "field" => {
                fields.insert((c[1].to_string(), c[2].to_string()), (c[3].parse().unwrap(), c[4].parse().unwrap()));
            }
            other => panic!("unknown row kind {other}"),
        }
    }
    (types, fields)
}

#[test]
fn sizes_match_upstream() {
    let (types, _) = table();
    let size = |t: &str| types.get(t).unwrap_or_else(|| panic!("{t} in the table")).0;
    assert_eq!(size("struct virgl_renderer_capset_hsakmt"), proto::CAPSET_SIZE);
    assert_eq!(size("struct virtio_gpu_shmem"), proto::SHMEM_SIZE);
    assert_eq!(size("struct virtio_gpu_ccmd_req"), proto::REQ_HDR_SIZE);
    assert_eq!(size("vHsaEvent"), event::VEVENT_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_query_info_req"), query::REQ_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_query_info_rsp"), query::RSP_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_event_req"), event::REQ_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_event_rsp"), event::RSP_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_memory_req"), memory::REQ_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_memory_rsp"), memory::RSP_SIZE);
    assert_eq!(size("vHsaQueueResource"), queue::VQ_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_queue_req"), queue::REQ_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_queue_rsp"), queue::RSP_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_gl_inter_req"), gl_inter::REQ_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_gl_inter_rsp"), gl_inter::RSP_SIZE);
}

#[test]
fn offsets_match_upstream() {
    let (_, fields) = table();
    let q = "struct vhsakmt_ccmd_query_info_req";
    let qr = "struct vhsakmt_ccmd_query_info_rsp";
    let e = "struct vhsakmt_ccmd_event_req";
    let m = "struct vhsakmt_ccmd_memory_req";
    let u = "struct vhsakmt_ccmd_queue_req";
    let checks: &[(&str, &str, usize)] = &[
        ("struct virgl_renderer_capset_hsakmt", "context_type", proto::CAPSET_CONTEXT_TYPE),
        ("struct virtio_gpu_shmem", "base.seqno", proto::SHMEM_SEQNO),
        ("struct virtio_gpu_shmem", "base.rsp_mem_offset", proto::SHMEM_RSP_MEM_OFFSET),
        ("struct virtio_gpu_shmem", "async_error", proto::SHMEM_ASYNC_ERROR),
        ("struct virtio_gpu_ccmd_req", "cmd", proto::REQ_CMD),
        ("struct virtio_gpu_ccmd_req", "len", proto::REQ_LEN),
        ("struct virtio_gpu_ccmd_req", "seqno", proto::REQ_SEQNO),
        ("struct virtio_gpu_ccmd_req", "rsp_off", proto::REQ_RSP_OFF),
        ("struct virtio_gpu_ccmd_rsp", "len", proto::RSP_LEN),
        ("struct vhsakmt_ccmd_event_rsp", "ret", proto::RSP_RET),
        ("vHsaEvent", "event_handle", event::VEVENT_HANDLE),
        ("vHsaEvent", "bo_handle", event::VEVENT_BO_HANDLE),
        ("vHsaEvent", "res_id", event::VEVENT_RES_ID),
        (q, "info", query::INFO),
        (q, "type", query::TYPE),
        (q, "pointer", query::ARG),
        (q, "NodeID", query::ARG),
        (q, "open_kfd_args.cur_vm_start", query::ARG),
        (q, "run_time_enable_args.setupTtmp", query::ARG_SETUP_TTMP),
        (q, "node_mem_prop_args.NumBanks", query::ARG_U32_1),
        (q, "node_cache_prop_args.ProcessorId", query::ARG_U32_1),
        (q, "node_cache_prop_args.NumCaches", query::ARG_U32_2),
        (q, "node_io_link_args.NumIoLinks", query::ARG_U32_1),
        (q, "tile_config_args.config", query::ARG_TILE_CONFIG),
        (q, "tile_config_args.NodeId", query::ARG_TILE_NODE),
        (q, "payload", query::REQ_SIZE),
        (qr, "ret", proto::RSP_RET),
        (qr, "ptr_info", query::RSP_U),
        (qr, "node_props", query::RSP_U),
        (qr, "clock_counters", query::RSP_U),
        (qr, "caps", query::RSP_U),
        (qr, "open_kfd_rsp.vm_size", query::RSP_VM_SIZE),
        (qr, "payload", query::RSP_SIZE),
        (e, "event_hanele", event::ARG),
        (e, "create_args.EventDesc", event::ARG),
        (e, "create_args.ManualReset", event::ARG_CREATE_MANUAL_RESET),
        (e, "create_args.IsSignaled", event::ARG_CREATE_IS_SIGNALED),
        (e, "wait_on_multi_args.NumEvents", event::ARG_WAIT_NUM),
        (e, "wait_on_multi_args.Milliseconds", event::ARG_WAIT_MS),
        (e, "wait_on_multi_ext_args.event_age", event::ARG_WAIT_EXT_AGE),
        (e, "wait_on_multi_ext_args.WaitOnAll", event::ARG_WAIT_EXT_ALL),
        (e, "set_trap_handler_args.TrapHandlerBaseAddress", event::ARG),
        (e, "set_trap_handler_args.NodeId", event::ARG_TRAP_NODE),
        (e, "type", event::TYPE),
        (e, "sync_shmem_res_id", event::SYNC_SHMEM_RES_ID),
        (e, "blob_id", event::BLOB_ID),
        (e, "res_id", event::RES_ID),
        (e, "payload", event::REQ_SIZE),
        ("struct vhsakmt_ccmd_event_rsp", "vevent", event::RSP_VEVENT),
        (m, "MemoryAddress", memory::ARG),
        (m, "alloc_args.PreferredNode", memory::ARG),
        (m, "alloc_args.MemFlags", memory::ARG_ALLOC_FLAGS),
        (m, "alloc_args.SizeInBytes", memory::ARG_ALLOC_SIZE),
        (m, "map_to_GPU_nodes_args.MemorySizeInBytes", memory::ARG_SIZE),
        (m, "map_to_GPU_nodes_args.MemMapFlags", memory::ARG_MAP_FLAGS),
        (m, "map_to_GPU_nodes_args.NumberOfNodes", memory::ARG_MAP_NUM_NODES),
        (m, "free_args.SizeInBytes", memory::ARG_SIZE),
        (m, "map_to_GPU_args.MemorySizeInBytes", memory::ARG_SIZE),
        (m, "map_to_GPU_args.need_create_bo", memory::ARG_NEED_CREATE_BO),
        (m, "reg_mem_with_flag.MemorySizeInBytes", memory::ARG_SIZE),
        (m, "reg_mem_with_flag.MemFlags", memory::ARG_REG_FLAGS),
        (m, "blob_id", memory::BLOB_ID),
        (m, "type", memory::TYPE),
        (m, "res_id", memory::RES_ID),
        (m, "payload", memory::REQ_SIZE),
        ("struct vhsakmt_ccmd_memory_rsp", "memory_handle", memory::RSP_U),
        (u, "QueueId", queue::ARG),
        (u, "create_queue_args.NodeId", queue::ARG_NODE),
        (u, "create_queue_args.Type", queue::ARG_TYPE),
        (u, "create_queue_args.QueuePercentage", queue::ARG_PERCENTAGE),
        (u, "create_queue_args.Priority", queue::ARG_PRIORITY),
        (u, "create_queue_args.SdmaEngineId", queue::ARG_SDMA_ENGINE),
        (u, "create_queue_args.QueueAddress", queue::ARG_QUEUE_ADDRESS),
        (u, "create_queue_args.QueueSizeInBytes", queue::ARG_QUEUE_SIZE),
        (u, "create_queue_args.Event", queue::ARG_EVENT),
        (u, "create_queue_args.Queue_write_ptr_aql", queue::ARG_WPTR_AQL),
        (u, "create_queue_args.Queue_read_ptr_aql", queue::ARG_RPTR_AQL),
        (u, "blob_id", queue::BLOB_ID),
        (u, "rw_ptr_blob_id", queue::RW_PTR_BLOB_ID),
        (u, "doorbell_blob_id", queue::DOORBELL_BLOB_ID),
        (u, "res_id", queue::RES_ID),
        (u, "type", queue::TYPE),
        (u, "queue_mem_res_id", queue::QUEUE_MEM_RES_ID),
        (u, "payload", queue::REQ_SIZE),
        ("struct vhsakmt_ccmd_queue_rsp", "vqueue_res", queue::RSP_VQUEUE),
        ("vHsaQueueResource", "host_doorbell", queue::VQ_HOST_DOORBELL),
        ("vHsaQueueResource", "host_doorbell_offset", queue::VQ_HOST_DOORBELL_OFFSET),
        ("vHsaQueueResource", "host_write_offset", queue::VQ_HOST_WRITE_OFFSET),
        ("vHsaQueueResource", "host_read_offset", queue::VQ_HOST_READ_OFFSET),
        ("vHsaQueueResource", "host_rw_handle", queue::VQ_HOST_RW_HANDLE),
        ("vHsaQueueResource", "queue_handle", queue::VQ_QUEUE_HANDLE),
        ("struct vhsakmt_ccmd_gl_inter_req", "type", gl_inter::TYPE),
    ];
    for (t, f, want) in checks {
        let got = fields.get(&(t.to_string(), f.to_string())).unwrap_or_else(|| panic!("{t}.{f} in the table"));
        assert_eq!(got.0, *want, "{t}.{f}");
    }
}

#[test]
fn embedded_thunk_structs_have_the_wire_generation_layout() {
    let (_, fields) = table();
    let size = |t: &str, f: &str| fields[&(t.to_string(), f.to_string())].1;
    // The grown records the protocol embeds, as the wire generation lays them out.
    assert_eq!(size("struct vhsakmt_ccmd_query_info_rsp", "node_props"), proto::wire_size(Record::HsaNodeProperties));
    assert_eq!(size("vHsaQueueResource", "r"), proto::wire_size(Record::HsaQueueResource));
    assert_eq!(size("struct vhsakmt_ccmd_gl_inter_rsp", "info"), proto::wire_size(Record::HsaGraphicsResourceInfo));
    assert_eq!(size("vHsaQueueResource", "r"), proto::queue::VQ_HOST_DOORBELL);
    assert_eq!(size("struct vhsakmt_ccmd_query_info_rsp", "ptr_info"), query::PTR_INFO_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_event_req", "create_args.EventDesc"), event::DESC_SIZE);
    assert_eq!(size("vHsaEvent", "event"), event::HSA_EVENT_SIZE);
    assert_eq!(size("struct vhsakmt_ccmd_query_info_req", "tile_config_args.config"), 64);
}
