//! `raftfs haadmin`: the state of a nameservice's members.

use std::time::Duration;

use raftfs_proto::pb;

pub const USAGE: &str = "Usage: raftfs haadmin [--fs raftfs://host:port,...]
\t[-getServiceState <host:port>]
\t[-getAllServiceState]";

async fn info(addr: &str) -> Result<pb::MemberInfoReply, String> {
    let ep = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_millis(1000))
        .timeout(Duration::from_millis(2000));
    let ch = ep.connect().await.map_err(|e| format!("connect: {e}"))?;
    let mut c = pb::namespace_client::NamespaceClient::new(ch);
    c.member_info(pb::MemberInfoRequest {})
        .await
        .map(|r| r.into_inner())
        .map_err(|s| s.message().to_string())
}

pub async fn run(fs: Option<String>, args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
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
            let members = match raftfs_client::uri::parse_fs(&fs) {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("haadmin: {e}");
                    return 255;
                }
            };
            println!(
                "{:<8} {:<22} {:<10} {:>6} {:>10} {:>10}",
                "MEMBER", "ADDRESS", "ROLE", "TERM", "LAST_LOG", "APPLIED"
            );
            let mut code = 0;
            for addr in members {
                match info(&addr).await {
                    Ok(i) => println!(
                        "{:<8} {:<22} {:<10} {:>6} {:>10} {:>10}",
                        i.member_id, addr, i.role, i.term, i.last_log_index, i.applied_index
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
