//! `raftfs haadmin`: the state of a nameservice's members, leadership
//! transfer and membership changes (HDFS's `haadmin` plus what a JournalNode
//! reconfiguration does).

use std::time::Duration;

use raftfs_client::{ClientOptions, FileSystem, Identity};
use raftfs_proto::{pb, AdminOp, AdminResult};

pub const USAGE: &str = "Usage: raftfs haadmin [--fs raftfs://host:port,...] [--user USER]
\t[-getServiceState <host:port>]
\t[-getAllServiceState]
\t[-transferLeader <member id>]
\t[-addMember <member id> <host:port>]
\t[-removeMember <member id>]";

/// Run `op` on the leader of `fs`; print what happened.
async fn admin(fs: Option<String>, user: Option<String>, op: AdminOp) -> i32 {
    let Some(fs) = fs else {
        eprintln!("haadmin: pass --fs or set RAFTFS_FS");
        return 255;
    };
    let client = match FileSystem::connect(&fs, Identity::resolve(user.as_deref()), ClientOptions::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("haadmin: {e}");
            return 255;
        }
    };
    match client.admin(op).await {
        Ok(AdminResult::LeaderTransferred { leader, elapsed_ms }) => {
            println!("Leadership transferred to member {leader} in {elapsed_ms} ms");
            0
        }
        Ok(AdminResult::Membership { voters }) => {
            let v: Vec<String> = voters.iter().map(u64::to_string).collect();
            println!("Voters: {}", v.join(","));
            0
        }
        Ok(other) => {
            eprintln!("haadmin: unexpected answer {other:?}");
            1
        }
        Err(e) => {
            eprintln!("haadmin: {e}");
            1
        }
    }
}

fn member_id(arg: Option<&String>) -> Option<u64> {
    arg.and_then(|s| s.parse().ok()).filter(|id| *id > 0)
}

/// Member `addr`'s report of itself; a router is refused with what to do
/// instead (routers answer the same `MemberInfo`, as clients reach both).
async fn info(addr: &str) -> Result<pb::MemberInfoReply, String> {
    let ep = raftfs_client::ClientTls::FromEnv
        .dialer()
        .map_err(|e| e.to_string())?
        .namespace_endpoint(addr)
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_millis(1000))
        .timeout(Duration::from_millis(2000));
    let ch = ep.connect().await.map_err(|e| format!("connect: {e}"))?;
    let mut c = pb::namespace_client::NamespaceClient::new(ch);
    let i = c
        .member_info(pb::MemberInfoRequest {})
        .await
        .map(|r| r.into_inner())
        .map_err(|s| s.message().to_string())?;
    if i.role == raftfs_client::ROUTER_ROLE {
        return Err("a router, not a member: pass a nameservice's members with --fs (raftfs dev prints them)".into());
    }
    Ok(i)
}

pub async fn run(fs: Option<String>, user: Option<String>, args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        Some("-transferLeader") => match (member_id(args.get(1)), args.len()) {
            (Some(to), 2) => admin(fs, user, AdminOp::TransferLeader { to }).await,
            _ => {
                eprintln!("{USAGE}");
                255
            }
        },
        Some("-addMember") => match (member_id(args.get(1)), args.get(2), args.len()) {
            (Some(id), Some(addr), 3) => admin(fs, user, AdminOp::AddMember { id, addr: addr.clone() }).await,
            _ => {
                eprintln!("{USAGE}");
                255
            }
        },
        Some("-removeMember") => match (member_id(args.get(1)), args.len()) {
            (Some(id), 2) => admin(fs, user, AdminOp::RemoveMember { id }).await,
            _ => {
                eprintln!("{USAGE}");
                255
            }
        },
        Some("-getServiceState") => {
            let Some(addr) = args.get(1) else {
                eprintln!("{USAGE}");
                return 255;
            };
            match info(addr).await {
                Ok(i) => {
                    println!("{}", i.role.to_lowercase());
                    0
                }
                Err(e) => {
                    eprintln!("haadmin: {addr}: {e}");
                    1
                }
            }
        }
        Some("-getAllServiceState") => {
            let Some(fs) = fs else {
                eprintln!("haadmin: pass --fs or set RAFTFS_FS");
                return 255;
            };
            let seeds = match raftfs_client::uri::parse_fs(&fs) {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("haadmin: {e}");
                    return 255;
                }
            };
            // The membership as the first member that answers knows it (it
            // includes members added since --fs was written); the --fs
            // addresses if none answers.
            let mut members: Vec<String> = seeds.clone();
            for addr in &seeds {
                if let Ok(i) = info(addr).await {
                    if !i.members.is_empty() {
                        members = i.members.iter().map(|m| m.addr.clone()).collect();
                    }
                    break;
                }
            }
            println!(
                "{:<8} {:<22} {:<10} {:>6} {:>10} {:>10} {:>10} {:>10} {:<6} HEALTH",
                "MEMBER", "ADDRESS", "ROLE", "TERM", "LAST_LOG", "APPLIED", "SNAPSHOT", "READS", "EXEC"
            );
            let mut code = 0;
            for addr in members {
                match info(&addr).await {
                    Ok(i) => println!(
                        "{:<8} {:<22} {:<10} {:>6} {:>10} {:>10} {:>10} {:>10} {:<6} {}",
                        i.member_id,
                        addr,
                        i.role,
                        i.term,
                        i.last_log_index,
                        i.applied_index,
                        i.snapshot_index,
                        i.reads_served,
                        i.exec_mode,
                        i.health
                    ),
                    Err(e) => {
                        code = 1;
                        println!("{:<8} {:<22} {:<10} ({e})", "?", addr, "DOWN");
                    }
                }
            }
            code
        }
        _ => {
            eprintln!("{USAGE}");
            255
        }
    }
}
