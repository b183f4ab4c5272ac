//! The status pages every member and router serve on `--http-addr`, in the
//! spirit of the NameNode's web UI: plain HTML written on the server,
//! styled by an inline sheet, with no script and nothing fetched from
//! elsewhere (a browser on a machine without Internet access shows them
//! whole).
//!
//! * [`StatusShell`]: the frame of every page (which node serves it, the
//!   tabs, the title), and [`StatusShell::error_page`] for a refusal.
//! * [`explorer_routes`]: `/explorer.html`, the file browser, over any
//!   [`crate::webhdfs::WebHdfsNamespace`]; files download through the
//!   node's own WebHDFS (`op=OPEN`, redirected to a DataNode).
//! * [`member_rows`]: a Raft group's members as each answered `MemberInfo`.
//! * [`datanode_table`]: one block pool's DataNodes.
//! * [`units`]: sizes, ages and times as the pages print them.
//!
//! What each node shows is its own (the member's and the router's crates
//! build their tabs from these pieces). Who may see them: the tabs that
//! show the node's state follow [`crate::HttpCaller::may_read_instrumentation`]
//! (as `/jmx`); the file browser runs every listing as the caller, with
//! WebHDFS's credentials (`user.name` under simple authentication, a
//! certificate or `delegation=` under strong), so it shows what that user
//! may list and nothing more.
//!
//! Values are escaped by `maud` wherever they land (a file named
//! `<script>` is text on the page).

mod datanode_table;
mod explorer;
mod member_table;
mod shell;
pub mod units;

pub use datanode_table::{datanode_counts, datanode_table};
pub use explorer::{explorer_routes, MAX_EXPLORER_ENTRIES_PER_PAGE};
pub use member_table::{health_cell, member_header, member_rows, MemberAnswer};
pub use shell::{NavTab, StatusShell};
