//! `raftfs haadmin`: the state of a nameservice's members, leadership
//! transfer and membership changes (HDFS's `haadmin` plus what a JournalNode
//! reconfiguration does).

use std::time::Duration;

use raftfs_client::{ClientOptions, FileSystem, Identity};
use raftfs_proto::{pb, AdminOp, AdminResult};

pub const USAGE: &str = "Usage: raftfs haadmin [--fs raftfs://host:port,...] [--user USER]
\t[-getServiceState <member id | host:port>]
\t[-getAllServiceState]
\t[-checkHealth <member id | host:port>]
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

/// One command's usage line (`Usage: raftfs haadmin [-transferLeader <member id>]`).
fn command_usage(cmd: &str) -> Option<String> {
    raftfs_client::dfs::usage_entry(USAGE, cmd).map(|entry| format!("Usage: raftfs haadmin {entry}"))
}

/// Hadoop's HAAdmin on wrong arguments: `-CMD: incorrect number of
/// arguments`, then that command's usage.
fn wrong_arguments(cmd: &str) -> i32 {
    eprintln!("{cmd}: incorrect number of arguments");
    eprintln!("{}", command_usage(cmd).unwrap_or_else(|| USAGE.to_string()));
    255
}

/// HDFS's name of a member's state (`hdfs haadmin -getServiceState`
/// prints `active` or `standby`; a learner serves reads as an observer).
fn ha_state(role: &str) -> &'static str {
    match role {
        "LEADER" => "active",
        "LEARNER" => "observer",
        _ => "standby",
    }
}

/// Every member (id, address) as the first member of `fs` that answers
/// knows them (members added since --fs was written included); the --fs
/// addresses (id 0) if none answers.
async fn membership(fs: &str) -> Result<Vec<(u64, String)>, String> {
    let seeds = raftfs_client::uri::parse_fs(fs).map_err(|e| e.to_string())?;
    for addr in &seeds {
        if let Ok(i) = info(addr).await {
            if !i.members.is_empty() {
                return Ok(i.members.iter().map(|m| (m.id, m.addr.clone())).collect());
            }
            break;
        }
    }
    Ok(seeds.into_iter().map(|a| (0, a)).collect())
}

/// The address `target` names: a member id (looked up in the membership
/// of `fs`) or an address itself.
async fn resolve(fs: Option<&str>, target: &str) -> Result<String, String> {
    let Ok(id) = target.parse::<u64>() else {
        return Ok(target.to_string());
    };
    let fs = fs.ok_or("pass --fs or set RAFTFS_FS to name a member by its id")?;
    membership(fs)
        .await?
        .into_iter()
        .find(|(m, _)| *m == id)
        .map(|(_, a)| a)
        .ok_or_else(|| format!("member {id} is not a member of {fs}"))
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
            _ => wrong_arguments("-transferLeader"),
        },
        Some("-addMember") => match (member_id(args.get(1)), args.get(2), args.len()) {
            (Some(id), Some(addr), 3) => admin(fs, user, AdminOp::AddMember { id, addr: addr.clone() }).await,
            _ => wrong_arguments("-addMember"),
        },
        Some("-removeMember") => match (member_id(args.get(1)), args.len()) {
            (Some(id), 2) => admin(fs, user, AdminOp::RemoveMember { id }).await,
            _ => wrong_arguments("-removeMember"),
        },
        Some(cmd @ ("-getServiceState" | "-checkHealth")) => {
            let [_, target] = args.as_slice() else {
                return wrong_arguments(cmd);
            };
            let got = match resolve(fs.as_deref(), target).await {
                Ok(addr) => info(&addr).await.map_err(|e| format!("{addr}: {e}")),
                Err(e) => Err(e),
            };
            match (cmd, got) {
                ("-getServiceState", Ok(i)) => {
                    println!("{}", ha_state(&i.role));
                    0
                }
                (_, Ok(i)) if i.health == "HEALTHY" => 0,
                (_, Ok(i)) => {
                    eprintln!("Health check failed: {}", i.health);
                    255
                }
                (_, Err(e)) => {
                    eprintln!("haadmin: {e}");
                    1
                }
            }
        }
        Some(cmd @ ("-transitionToActive" | "-transitionToStandby" | "-transitionToObserver" | "-failover")) => {
            eprintln!(
                "haadmin: {cmd}: raftfs members elect their leader (Raft), so no member is made active or \
                 standby by hand: use -transferLeader <member id>"
            );
            255
        }
        Some("-getAllServiceState") => {
            let Some(fs) = fs else {
                eprintln!("haadmin: pass --fs or set RAFTFS_FS");
                return 255;
            };
            let members = match membership(&fs).await {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("haadmin: {e}");
                    return 255;
                }
            };
            println!(
                "{:<8} {:<22} {:<10} {:>6} {:>10} {:>10} {:>10} {:>10} {:<6} HEALTH",
                "MEMBER", "ADDRESS", "ROLE", "TERM", "LAST_LOG", "APPLIED", "SNAPSHOT", "READS", "EXEC"
            );
            let mut code = 0;
            for (_, addr) in members {
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
        Some(other) => {
            eprintln!("{}: Unknown command", other.trim_start_matches('-'));
            eprintln!("{USAGE}");
            255
        }
        None => {
            eprintln!("{USAGE}");
            255
        }
    }
}
