//! `raftfs dfsadmin -listOpenFiles [-path PATH]`: the files open for
//! write in each nameservice, as Hadoop's DFSAdmin prints them (a header,
//! then `client host`, `client name` and path per file, tab-separated).
//!
//! Caveats: raftfs does not record the host a writer called from, so the
//! "Client Host" column is empty; a nameservice lists at most
//! [`MAX_OPEN_FILES_LISTED`] files per call (a line on stderr says when
//! more are open). HDFS's `-blockingDecommission` filter is refused: a
//! decommission here waits for open files' last blocks as for any other,
//! and which open files hold one up is not tracked.

use raftfs_client::FileSystem;
use raftfs_proto::admin::MAX_OPEN_FILES_LISTED;
use raftfs_proto::{AdminOp, AdminResult, FsError};

/// What the command was asked: the path to list under (`/`: all).
pub fn parse(args: &[String]) -> Result<String, String> {
    if args.iter().any(|a| a == "-blockingDecommission") {
        return Err(
            "listOpenFiles: -blockingDecommission is not supported: raftfs does not track which open files hold up a decommission"
                .into(),
        );
    }
    match args {
        [] => Ok("/".into()),
        [flag, path] if flag == "-path" => Ok(path.clone()),
        _ => Err(String::new()),
    }
}

/// List the open files under `path` in every nameservice of `all`.
pub async fn list(all: &[(String, FileSystem)], path: &str) -> Result<(), FsError> {
    println!("{:<20}\t{:<20}\tOpen File Path", "Client Host", "Client Name");
    for (name, fs) in all {
        let (files, more) = match fs.admin(AdminOp::ListOpenFiles { path: path.into() }).await? {
            AdminResult::OpenFiles { files, more } => (files, more),
            other => return Err(FsError::Internal(format!("listOpenFiles answered {other:?}"))),
        };
        for f in &files {
            println!("{:<20}\t{:<20}\t{:>20}", "", f.holder, f.path);
        }
        if more {
            eprintln!("listOpenFiles: {name} has more open files under {path} than the {MAX_OPEN_FILES_LISTED} listed");
        }
    }
    Ok(())
}
