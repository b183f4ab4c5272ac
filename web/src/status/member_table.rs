//! The rows of a Raft group's members, as both node kinds show them (a
//! member its nameservice's, a router its own group and each
//! nameservice's): each as it answered `MemberInfo`, or UNREACHABLE with
//! why.

use maud::{html, Markup};
use raftfs_proto::pb;

/// One member: who it is and what it answered.
#[derive(Debug, Clone)]
pub struct MemberAnswer {
    pub id: u64,
    pub addr: String,
    /// Whether it votes, when the page shows it (a member's own group).
    pub voter: Option<bool>,
    pub info: Result<pb::MemberInfoReply, String>,
}

/// A cell with `text`, marked good when it says HEALTHY and bad otherwise.
pub fn health_cell(text: &str) -> Markup {
    html! { td class=(if text == "HEALTHY" { "good" } else { "bad" }) { (text) } }
}

/// The header row; a Voter column when `voter_column`.
pub fn member_header(voter_column: bool) -> Markup {
    html! {
        tr {
            th { "ID" } th { "Address" } @if voter_column { th { "Voter" } } th { "Role" } th { "Term" }
            th { "Last log index" } th { "Commit index" } th { "Applied index" } th { "Snapshot index" } th { "Health" }
        }
    }
}

/// One row per member; `role_of` names each answering member's role.
pub fn member_rows(rows: &[MemberAnswer], role_of: impl Fn(&MemberAnswer, &pb::MemberInfoReply) -> String) -> Markup {
    html! {
        @for row in rows {
            tr {
                td.num { (row.id) }
                td { (row.addr) }
                @if let Some(voter) = row.voter { td { (if voter { "yes" } else { "learner" }) } }
                @match &row.info {
                    Ok(i) => {
                        td { (role_of(row, i)) }
                        td.num { (i.term) }
                        td.num { (i.last_log_index) }
                        td.num { (i.commit_index) }
                        td.num { (i.applied_index) }
                        td.num { (i.snapshot_index) }
                        (health_cell(&i.health))
                    }
                    Err(e) => {
                        td.bad { "UNREACHABLE" }
                        td colspan="5" {}
                        td.bad { (e) }
                    }
                }
            }
        }
    }
}
