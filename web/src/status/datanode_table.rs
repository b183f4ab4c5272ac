//! One block pool's DataNodes as a table (the NameNode UI's DataNodes
//! tab): each node's state as HDFS's UI names it, its last contact,
//! capacity and use. A member shows its own block pool's; a router one
//! table per nameservice, as that nameservice's leader reported them.

use maud::{html, Markup};
use raftfs_proto::{AdminState, DatanodeInfo};

use super::units::{age, bytes, percent};

/// A DataNode's state as HDFS's UI names it.
fn datanode_state(n: &DatanodeInfo) -> &'static str {
    match (n.live, n.admin_state) {
        (true, AdminState::Normal) => "In Service",
        (true, AdminState::DecommissionInProgress) => "Decommissioning",
        (true, AdminState::Decommissioned) => "Decommissioned",
        (false, AdminState::Decommissioned) => "Dead, Decommissioned",
        (false, _) => "Dead",
    }
}

/// "N live, M dead."
pub fn datanode_counts(nodes: &[DatanodeInfo]) -> String {
    let live = nodes.iter().filter(|n| n.live).count();
    format!("{live} live, {} dead.", nodes.len() - live)
}

/// The table of `nodes` (live first, then by host and address), with HTML
/// id `id` and `data-block-pool` naming the pool (so a test or a script
/// can pick one pool's table).
pub fn datanode_table(id: Option<&str>, block_pool: &str, nodes: &[DatanodeInfo]) -> Markup {
    let mut nodes: Vec<&DatanodeInfo> = nodes.iter().collect();
    nodes.sort_by(|a, b| (!a.live, &a.id.hostname, &a.id.addr).cmp(&(!b.live, &b.id.hostname, &b.id.addr)));
    html! {
        table.datanodes id=[id] data-block-pool=(block_pool) {
            thead { tr {
                th { "Node" } th { "Transfer address" } th { "HTTP address" } th { "State" } th { "Last contact" }
                th { "Capacity" } th { "Used" } th { "Block pool used" } th { "Remaining" } th { "Blocks" }
                th { "Failed volumes" } th { "Transfers" }
            } }
            tbody {
                @for n in nodes {
                    tr {
                        td { (n.id.hostname) " " span.note { (n.id.uuid) } }
                        td { (n.id.addr) }
                        td { (n.http_addr) }
                        td class=[(!n.live).then_some("bad")] { (datanode_state(n)) }
                        td.num { (age(n.last_heartbeat_ago_ms)) }
                        td.num { (bytes(n.capacity_bytes)) }
                        td.num { (bytes(n.dfs_used_bytes)) " (" (percent(n.dfs_used_bytes, n.capacity_bytes)) ")" }
                        td.num { (bytes(n.block_pool_used_bytes)) }
                        td.num { (bytes(n.remaining_bytes)) }
                        td.num { (n.blocks) }
                        td.num class=[(n.failed_volumes > 0).then_some("bad")] { (n.failed_volumes) }
                        td.num { (n.xceivers) }
                    }
                }
            }
        }
    }
}
