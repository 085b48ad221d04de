//! Layering of hsakmt-core: no import cycle between its modules (what a module and a dependency
//! are: `support/modgraph.rs`). Data flows one way: ABI types and the `Kfd` port at the bottom,
//! the services (topology, memory, events, queues, SVM) above them, `Context` composing them.

#[path = "support/modgraph.rs"]
mod modgraph;

#[test]
fn core_modules_have_no_import_cycle() {
    modgraph::assert_acyclic(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}
