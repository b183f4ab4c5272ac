//! A goldenscript-style runner for namespace scenarios (after toydb's
//! goldenscript): one scenario per file, commands followed by `----` and the
//! output they produce, blocks separated by blank lines. The same scripts run
//! against every backend (both stores, engine and Raft, in-process and over
//! gRPC): that is the conformance suite. `UPDATE_GOLDEN=1` rewrites the
//! files with the output produced, for review as a diff.
//!
//! Commands (an optional `@user[:group,group]` prefix sets the caller; the
//! default caller is the superuser `hdfs`):
//! `mkdirs P [noparent] [perm=OCT]`, `create P [overwrite] [noparent]
//! [perm=OCT] [repl=N] [bs=N]`, `complete P`, `rename S D`, `rename2 S D
//! [overwrite]`, `delete P [recursive]`, `chmod P OCT`, `chown P [OWNER][:GROUP]`,
//! `setrep P N`, `settimes P [mtime=N] [atime=N]`, `setquota P [ns=N|clear]
//! [ds=N|clear]`, `stat P [times]`, `mtime P` (`updated` when mtime > 1),
//! `ls P [after=NAME] [limit=N]`, `summary P`, `concat T S...`, `truncate P LEN`, and `id P` (the inode id, for
//! `/.reserved/.inodes/<id>` cases, printed relative to the root: `root+N`).
//! A path may contain `$id(P)` which expands to P's inode id.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use raftfs_proto::{CallCtx, FsError, Op, OpResult, Permission, QuotaSetting};

/// The superuser the scripts assume (the user who formatted the namespace).
pub const GOLDEN_SUPERUSER: &str = "hdfs";

/// Something that executes namespace operations.
pub trait Backend {
    fn call(&mut self, ctx: CallCtx, op: Op) -> Result<OpResult, FsError>;
}

struct Block {
    commands: Vec<String>,
}

fn parse_blocks(text: &str) -> Result<(Vec<String>, Vec<Block>), String> {
    // Returns the leading comment lines and the blocks (expected output ignored; regenerated).
    let mut header = Vec::new();
    let mut blocks = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.peek() {
        if l.starts_with('#') || l.trim().is_empty() {
            header.push(l.to_string());
            lines.next();
        } else {
            break;
        }
    }
    while lines.peek().is_some() {
        let mut commands = Vec::new();
        for l in lines.by_ref() {
            if l == "----" {
                break;
            }
            if l.trim().is_empty() && commands.is_empty() {
                continue;
            }
            commands.push(l.to_string());
        }
        if commands.is_empty() {
            break;
        }
        // Skip the expected output up to the blank line that ends the block.
        for l in lines.by_ref() {
            if l.trim().is_empty() {
                break;
            }
        }
        blocks.push(Block { commands });
    }
    Ok((header, blocks))
}

/// Run the script at `path` against `backend`; Err holds a diff.
pub fn run_file(path: &Path, backend: &mut dyn Backend) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let (header, blocks) = parse_blocks(&text)?;
    let mut out = String::new();
    for h in &header {
        out.push_str(h);
        out.push('\n');
    }
    let mut runner = Runner { backend, call_id: 0 };
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut produced = String::new();
        for c in &b.commands {
            out.push_str(c);
            out.push('\n');
            if c.starts_with('#') {
                continue;
            }
            produced.push_str(&runner.run(c));
        }
        out.push_str("----\n");
        out.push_str(&produced);
    }
    if out == text {
        return Ok(());
    }
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, &out).map_err(|e| format!("write {}: {e}", path.display()))?;
        return Ok(());
    }
    Err(diff(&text, &out))
}

/// Run every `*.txt` script under `dir`, each on a fresh backend from `make`.
pub fn run_dir(dir: &Path, make: &mut dyn FnMut() -> Box<dyn Backend>) -> Result<usize, String> {
    run_files(&scripts_in(dir)?, make)
}

/// The scripts (`*.txt`) in `dir`, sorted.
pub fn scripts_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    Ok(files)
}

/// Run each of `files`, each against a fresh backend from `make`; Ok holds
/// how many ran, Err every file's diff.
pub fn run_files(files: &[PathBuf], make: &mut dyn FnMut() -> Box<dyn Backend>) -> Result<usize, String> {
    let mut failures = String::new();
    for f in files {
        let mut backend = make();
        if let Err(d) = run_file(f, backend.as_mut()) {
            let _ = writeln!(failures, "=== {} differs:\n{d}", f.display());
        }
    }
    if failures.is_empty() {
        Ok(files.len())
    } else {
        Err(failures)
    }
}

fn diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<_>, Vec<_>) = (want.lines().collect(), got.lines().collect());
    let mut s = String::new();
    for i in 0..w.len().max(g.len()) {
        match (w.get(i), g.get(i)) {
            (Some(a), Some(b)) if a == b => {}
            (a, b) => {
                let _ = writeln!(
                    s,
                    "line {}:\n  - {}\n  + {}",
                    i + 1,
                    a.unwrap_or(&"<none>"),
                    b.unwrap_or(&"<none>")
                );
            }
        }
    }
    s
}

struct Runner<'a> {
    backend: &'a mut dyn Backend,
    call_id: u64,
}

impl Runner<'_> {
    fn ctx(&mut self, who: Option<&str>) -> CallCtx {
        self.call_id += 1;
        let (user, groups) = match who {
            None => (GOLDEN_SUPERUSER.to_string(), vec![GOLDEN_SUPERUSER.to_string()]),
            Some(w) => match w.split_once(':') {
                Some((u, g)) => (u.to_string(), g.split(',').map(str::to_string).collect()),
                None => (w.to_string(), vec![w.to_string()]),
            },
        };
        CallCtx {
            client_id: "golden-client".into(),
            call_id: self.call_id,
            user,
            groups,
            routed_by: 0,
        }
    }

    fn call(&mut self, who: Option<&str>, op: Op) -> Result<OpResult, FsError> {
        let ctx = self.ctx(who);
        self.backend.call(ctx, op)
    }

    fn expand(&mut self, arg: &str) -> String {
        let mut s = arg.to_string();
        while let Some(start) = s.find("$id(") {
            let Some(end) = s[start..].find(')') else { break };
            let p = s[start + 4..start + end].to_string();
            let id = match self.call(None, Op::GetFileInfo { path: p }) {
                Ok(OpResult::Status(Some(st))) => st.file_id.to_string(),
                _ => "0".into(),
            };
            s.replace_range(start..start + end + 1, &id);
        }
        s
    }

    fn run(&mut self, line: &str) -> String {
        let mut words: Vec<&str> = line.split_whitespace().collect();
        let who = match words.first() {
            Some(w) if w.starts_with('@') => {
                let w = words.remove(0);
                Some(w[1..].to_string())
            }
            _ => None,
        };
        let who = who.as_deref();
        if words.is_empty() {
            return String::new();
        }
        let cmd = words[0];
        let args: Vec<String> = words[1..].iter().map(|a| self.expand(a)).collect();
        let pos: Vec<&str> = args
            .iter()
            .filter(|a| !a.contains('=') && !is_flag(a))
            .map(String::as_str)
            .collect();
        let flag = |f: &str| args.iter().any(|a| a == f);
        let kv = |k: &str| {
            args.iter()
                .find_map(|a| a.strip_prefix(&format!("{k}=")).map(str::to_string))
        };
        let perm = |default: u16| {
            kv("perm")
                .and_then(|p| Permission::parse_octal(&p))
                .unwrap_or(Permission(default))
        };
        let p0 = pos.first().map(|s| s.to_string()).unwrap_or_default();
        let p1 = pos.get(1).map(|s| s.to_string()).unwrap_or_default();
        let quota = |k: &str| match kv(k).as_deref() {
            None => QuotaSetting::Keep,
            Some("clear") => QuotaSetting::Clear,
            Some(n) => QuotaSetting::Set(n.parse().unwrap_or(0)),
        };
        let target = p0.clone();
        let op = match cmd {
            "mkdirs" => Op::Mkdirs {
                path: p0,
                permission: perm(0o755),
                create_parent: !flag("noparent"),
            },
            "create" => Op::Create {
                path: p0,
                permission: perm(0o644),
                overwrite: flag("overwrite"),
                create_parent: !flag("noparent"),
                replication: kv("repl").and_then(|r| r.parse().ok()).unwrap_or(3),
                block_size: kv("bs").and_then(|r| r.parse().ok()).unwrap_or(128 * 1024 * 1024),
            },
            "complete" => Op::Complete { path: p0, last: None },
            "rename" => Op::Rename { src: p0, dst: p1 },
            "rename2" => Op::Rename2 {
                src: p0,
                dst: p1,
                overwrite: flag("overwrite"),
            },
            "delete" => Op::Delete {
                path: p0,
                recursive: flag("recursive"),
            },
            "chmod" => Op::SetPermission {
                path: p0,
                permission: Permission::parse_octal(&p1).unwrap_or(Permission(0)),
            },
            "chown" => {
                let (o, g) = p1.split_once(':').unwrap_or((p1.as_str(), ""));
                let some = |s: &str| if s.is_empty() { None } else { Some(s.to_string()) };
                Op::SetOwner {
                    path: p0,
                    owner: some(o),
                    group: some(g),
                }
            }
            "setrep" => Op::SetReplication {
                path: p0,
                replication: p1.parse().unwrap_or(0),
            },
            "settimes" => Op::SetTimes {
                path: p0,
                mtime: kv("mtime").and_then(|v| v.parse().ok()),
                atime: kv("atime").and_then(|v| v.parse().ok()),
            },
            "setquota" => Op::SetQuota {
                path: p0,
                namespace: quota("ns"),
                space: quota("ds"),
            },
            "stat" | "mtime" | "id" => Op::GetFileInfo { path: p0 },
            "ls" => Op::GetListing {
                path: p0,
                start_after: kv("after").unwrap_or_default(),
                limit: kv("limit").and_then(|v| v.parse().ok()).unwrap_or(0),
            },
            "summary" => Op::GetContentSummary { path: p0 },
            "truncate" => Op::Truncate {
                path: p0,
                new_length: p1.parse().unwrap_or(0),
            },
            "concat" => Op::Concat {
                target: p0,
                sources: pos.iter().skip(1).map(|s| s.to_string()).collect(),
            },
            other => return format!("unknown command {other}\n"),
        };
        match (cmd, self.call(who, op)) {
            (_, Err(e)) => format!("error: {}: {e}\n", e.exception_name()),
            ("stat", Ok(OpResult::Status(s))) => match s {
                None => "none\n".into(),
                Some(st) => {
                    let mut line = status_line(&target, &st);
                    if flag("times") {
                        let _ = write!(line, " mtime={} atime={}", st.modification_time, st.access_time);
                    }
                    line + "\n"
                }
            },
            ("mtime", Ok(OpResult::Status(s))) => match s {
                None => "none\n".into(),
                Some(st) if st.modification_time > 1 => "updated\n".into(),
                Some(_) => "unchanged\n".into(),
            },
            ("id", Ok(OpResult::Status(s))) => match s {
                None => "none\n".into(),
                Some(st) => format!("root+{}\n", st.file_id.saturating_sub(crate::inode::ROOT_ID)),
            },
            (_, Ok(OpResult::Listing(l))) => {
                let mut s = String::new();
                for e in &l.entries {
                    let _ = writeln!(s, "  {}", status_line(&e.path_suffix, e));
                }
                let _ = writeln!(s, "remaining={}", l.remaining_entries);
                s
            }
            (_, Ok(OpResult::Summary(c))) => format!(
                "dirs={} files={} length={} quota={} space={} spacequota={}\n",
                c.directory_count, c.file_count, c.length, c.quota, c.space_consumed, c.space_quota
            ),
            (_, Ok(OpResult::Bool(b))) => format!("{b}\n"),
            (_, Ok(OpResult::Unit)) => "ok\n".into(),
            (_, Ok(OpResult::Status(Some(st)))) => format!("{}\n", status_line(&target, &st)),
            (_, Ok(OpResult::Status(None))) => "none\n".into(),
            (_, Ok(other)) => format!("{other:?}\n"),
        }
    }
}

fn is_flag(a: &str) -> bool {
    matches!(a, "noparent" | "overwrite" | "recursive" | "times")
}

fn status_line(name: &str, st: &raftfs_proto::FileStatus) -> String {
    if st.is_dir() {
        format!(
            "dir {name} {} {}:{} children={}",
            st.permission, st.owner, st.group, st.children_num
        )
    } else {
        format!(
            "file {name} {} {}:{} len={} repl={} open={}",
            st.permission, st.owner, st.group, st.length, st.replication, st.under_construction
        )
    }
}
