//! `raftfs dfs`: the `hdfs dfs` shell commands over the SDK.
//!
//! Output and error lines follow HDFS (`ls: `/nope': No such file or
//! directory`); the exit status is 0 when every path succeeded and 1
//! otherwise (-1 → 255 for usage errors, as `hdfs dfs` prints usage and
//! returns -1).

use std::io::Write;

use futures::future::LocalBoxFuture;
use futures::FutureExt;

use raftfs_proto::{FileStatus, FsError};

use crate::FileSystem;

mod attributes;
mod concat_truncate;
mod data;
mod help;
mod text;

pub use concat_truncate::MAX_TRUNCATE_WAIT_MS;
pub use help::{command_usage, offline, usage_entry, USAGE};
use text::{date, human};
pub use text::{quota_setting, stat_format, Mode};

/// Exit status for a usage error (`hdfs dfs` returns -1).
pub const EXIT_USAGE: i32 = 255;

struct Shell<'a> {
    fs: &'a FileSystem,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    cmd: String,
    failed: bool,
    /// Show a progress line on stderr while copying (a terminal only).
    progress: bool,
}

/// Run one `dfs` command line (`args[0]` is the command, e.g. `-ls`).
pub async fn run(fs: &FileSystem, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    run_with(fs, args, out, err, false).await
}

/// Every command the shell runs, as typed without its dash.
pub const COMMANDS: [&str; 28] = [
    "ls",
    "mkdir",
    "touchz",
    "stat",
    "mv",
    "rm",
    "rmdir",
    "chmod",
    "chown",
    "chgrp",
    "setrep",
    "count",
    "du",
    "test",
    "put",
    "copyFromLocal",
    "get",
    "copyToLocal",
    "cat",
    "appendToFile",
    "tail",
    "cp",
    "checksum",
    "concat",
    "truncate",
    "help",
    "usage",
    "h",
];

/// [`run`], with a progress line on `err` during copies when `progress`
/// (the binary sets it when stderr is a terminal). Boxed, so that the
/// `raftfs` binary calls this crate's code instead of compiling its own
/// copy of the shell (docs/architecture.md, "Build time").
#[inline(never)]
pub fn run_with<'a>(
    fs: &'a FileSystem,
    args: &'a [String],
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    progress: bool,
) -> futures::future::LocalBoxFuture<'a, i32> {
    Box::pin(run_unboxed(fs, args, out, err, progress))
}

async fn run_unboxed(
    fs: &FileSystem,
    args: &[String],
    out: &mut dyn Write,
    err: &mut dyn Write,
    progress: bool,
) -> i32 {
    if let Some(status) = offline(args, out, err) {
        return status;
    }
    let cmd = args[0].trim_start_matches('-').to_string();
    let mut sh = Shell {
        fs,
        out,
        err,
        cmd,
        failed: false,
        progress,
    };
    let rest = &args[1..];
    let usage = match sh.cmd.as_str() {
        "ls" => sh.ls(rest).await,
        "mkdir" => sh.mkdir(rest).await,
        "touchz" => sh.touchz(rest).await,
        "stat" => sh.stat(rest).await,
        "mv" => sh.mv(rest).await,
        "rm" => sh.rm(rest).await,
        "rmdir" => sh.rmdir(rest).await,
        "chmod" => sh.chmod(rest).await,
        "chown" => sh.chown(rest, false).await,
        "chgrp" => sh.chown(rest, true).await,
        "setrep" => sh.setrep(rest).await,
        "count" => sh.count(rest).await,
        "du" => sh.du(rest).await,
        "test" => return sh.test(rest).await,
        "put" | "copyFromLocal" => sh.put(rest).await,
        "get" | "copyToLocal" => sh.get(rest).await,
        "cat" => sh.cat(rest).await,
        "appendToFile" => sh.append_to_file(rest).await,
        "tail" => sh.tail(rest).await,
        "cp" => sh.cp(rest).await,
        "checksum" => sh.checksum(rest).await,
        "concat" => sh.concat(rest).await,
        "truncate" => sh.truncate(rest).await,
        other => unreachable!("offline() answers -{other}"),
    };
    if let Err(msg) = usage {
        sh.usage_error(&msg);
        return EXIT_USAGE;
    }
    if sh.failed {
        1
    } else {
        0
    }
}

/// An error's text as the shell shows it after `CMD: ` (a refusal's own
/// message; a missing or existing path in Hadoop's words).
fn shell_message(e: &FsError) -> String {
    match e {
        FsError::AccessControl(m) => m.clone(),
        other => other.to_string(),
    }
}

/// `` `src' to `target': is a subdirectory of itself `` when moving or
/// copying directory `src` to `target` would put it inside itself (Hadoop's
/// `CommandWithDestination`).
fn into_itself(src: &str, target: &str) -> Option<String> {
    let src = src.trim_end_matches('/');
    let inside = target.starts_with(&format!("{src}/")) || (src.is_empty() && target.starts_with('/'));
    inside.then(|| format!("`{src}' to `{target}': is a subdirectory of itself"))
}

/// Split `-x` flags (stopping at the first non-flag) from operands.
fn flags<'a>(args: &'a [String], allowed: &[&str]) -> Result<(Vec<&'a str>, Vec<&'a str>), String> {
    let mut f = Vec::new();
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') && args[i].len() > 1 {
        let a = args[i].as_str();
        if !allowed.contains(&a) {
            return Err(format!("Illegal option {a}"));
        }
        f.push(a);
        i += 1;
    }
    Ok((f, args[i..].iter().map(String::as_str).collect()))
}

fn child_path(parent: &str, name: &str) -> String {
    if name.is_empty() {
        parent.to_string()
    } else if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}

fn type_char(s: &FileStatus) -> char {
    if s.is_dir() {
        'd'
    } else {
        '-'
    }
}

impl Shell<'_> {
    /// Print an error for `path` the way HDFS does and remember the failure.
    fn fail(&mut self, path: &str, e: &FsError) {
        self.failed = true;
        let line = match e {
            FsError::FileNotFound(_) => format!("{}: `{path}': No such file or directory", self.cmd),
            FsError::AccessControl(m) => format!("{}: {m}", self.cmd),
            FsError::FileAlreadyExists(_) => format!("{}: `{path}': File exists", self.cmd),
            FsError::PathIsNotEmptyDirectory(_) => format!("{}: `{path}': Directory is not empty", self.cmd),
            other => format!("{}: {other}", self.cmd),
        };
        let _ = writeln!(self.err, "{line}");
    }

    /// A usage error, as Hadoop's `FsShell` prints it: `-CMD: MESSAGE`,
    /// then that command's usage line.
    fn usage_error(&mut self, msg: &str) {
        let _ = writeln!(self.err, "-{}: {msg}", self.cmd);
        let line = help::command_usage_line(&self.cmd).unwrap_or_else(|| USAGE.to_string());
        let _ = writeln!(self.err, "{line}");
    }

    fn fail_msg(&mut self, msg: String) {
        self.failed = true;
        let _ = writeln!(self.err, "{}: {msg}", self.cmd);
    }

    /// Whether `path`'s parent exists and is a directory (Hadoop's shell
    /// checks it before writing to a new destination).
    async fn parent_is_dir(&mut self, path: &str) -> bool {
        let parent = match path.trim_end_matches('/').rsplit_once('/') {
            Some(("", _)) => "/",
            Some((p, _)) => p,
            None => return true,
        };
        matches!(self.fs.get_file_info(parent).await, Ok(Some(s)) if s.is_dir())
    }

    async fn status(&mut self, path: &str) -> Option<FileStatus> {
        match self.fs.get_file_status(path).await {
            Ok(s) => Some(s),
            Err(e) => {
                self.fail(path, &e);
                None
            }
        }
    }

    async fn ls(&mut self, args: &[String]) -> Result<(), String> {
        let (f, mut paths) = flags(args, &["-R", "-d", "-h"])?;
        let (recursive, dir_itself, hum) = (f.contains(&"-R"), f.contains(&"-d"), f.contains(&"-h"));
        let home = format!("/user/{}", self.fs.identity().user);
        if paths.is_empty() {
            paths.push(home.as_str());
        }
        for p in paths {
            let Some(st) = self.status(p).await else { continue };
            if dir_itself || !st.is_dir() {
                let rows = vec![(p.to_string(), st)];
                self.print_ls(&rows, hum);
                continue;
            }
            self.ls_dir(p, recursive, hum).await;
        }
        Ok(())
    }

    fn ls_dir<'s>(&'s mut self, dir: &'s str, recursive: bool, hum: bool) -> LocalBoxFuture<'s, ()> {
        async move {
            let entries = match self.fs.list_status(dir).await {
                Ok(e) => e,
                Err(e) => return self.fail(dir, &e),
            };
            let rows: Vec<(String, FileStatus)> = entries
                .into_iter()
                .map(|s| (child_path(dir, &s.path_suffix), s))
                .collect();
            if !recursive {
                let _ = writeln!(self.out, "Found {} items", rows.len());
            }
            self.print_ls(&rows, hum);
            if recursive {
                for (path, st) in &rows {
                    if st.is_dir() {
                        self.ls_dir(path, true, hum).await;
                    }
                }
            }
        }
        .boxed_local()
    }

    /// Hadoop's `Ls` layout: `%s%s%<repl>s %-<owner>s %-<group>s %<len>s %s %s`,
    /// with the replication and length columns at least 3 and 10 wide.
    fn print_ls(&mut self, rows: &[(String, FileStatus)], hum: bool) {
        let size = |s: &FileStatus| if hum { human(s.length) } else { s.length.to_string() };
        let rep = |s: &FileStatus| {
            if s.is_dir() {
                "-".to_string()
            } else {
                s.replication.to_string()
            }
        };
        let wr = rows.iter().map(|(_, s)| rep(s).len()).max().unwrap_or(0).max(3);
        let wo = rows.iter().map(|(_, s)| s.owner.len()).max().unwrap_or(0);
        let wg = rows.iter().map(|(_, s)| s.group.len()).max().unwrap_or(0);
        let ws = rows.iter().map(|(_, s)| size(s).len()).max().unwrap_or(0).max(10);
        for (path, s) in rows {
            // The character after the permission is the ACL flag: ' ' without ACLs.
            let _ = writeln!(
                self.out,
                "{}{} {:>wr$} {:<wo$} {:<wg$} {:>ws$} {} {}",
                type_char(s),
                s.permission,
                rep(s),
                s.owner,
                s.group,
                size(s),
                date(s.modification_time, false),
                path,
            );
        }
    }

    async fn mkdir(&mut self, args: &[String]) -> Result<(), String> {
        let (f, paths) = flags(args, &["-p"])?;
        if paths.is_empty() {
            return Err("Not enough arguments: expected 1 but got 0".into());
        }
        let parents = f.contains(&"-p");
        for p in paths {
            match self.fs.get_file_info(p).await {
                Ok(Some(st)) => {
                    if !st.is_dir() {
                        // Hadoop's Mkdir: PathIsNotDirectoryException.
                        self.fail_msg(format!("`{p}': Is not a directory"));
                    } else if !parents {
                        self.fail_msg(format!("`{p}': File exists"));
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    self.fail(p, &e);
                    continue;
                }
            }
            match self.fs.mkdirs_opt(p, None, parents).await {
                Ok(_) => {}
                // Hadoop's Mkdir names the path asked for, not its parent
                // (PathNotFoundException(item)).
                Err(FsError::FileNotFound(_)) => self.fail_msg(format!("`{p}': No such file or directory")),
                Err(e) => self.fail(p, &e),
            }
        }
        Ok(())
    }

    async fn touchz(&mut self, args: &[String]) -> Result<(), String> {
        let (_, paths) = flags(args, &[])?;
        if paths.is_empty() {
            return Err("Not enough arguments: expected 1 but got 0".into());
        }
        for p in paths {
            match self.fs.get_file_info(p).await {
                Ok(Some(st)) if st.is_dir() => self.fail_msg(format!("`{p}': Is a directory")),
                Ok(Some(st)) if st.length != 0 => self.fail_msg(format!("`{p}': Not a zero-length file")),
                Ok(Some(_)) => {}
                Ok(None) => match self.fs.create_opt(p, false, None, 3, 128 * 1024 * 1024, false).await {
                    Ok(_) => {
                        if let Err(e) = self.fs.complete(p).await {
                            self.fail(p, &e);
                        }
                    }
                    Err(FsError::FileNotFound(_)) => {
                        let parent = p
                            .rsplit_once('/')
                            .map(|(a, _)| if a.is_empty() { "/" } else { a })
                            .unwrap_or("/")
                            .to_string();
                        self.fail_msg(format!("`{p}': No such file or directory: `{parent}'"));
                    }
                    Err(e) => self.fail(p, &e),
                },
                Err(e) => self.fail(p, &e),
            }
        }
        Ok(())
    }

    async fn stat(&mut self, args: &[String]) -> Result<(), String> {
        let (_, ops) = flags(args, &[])?;
        let (format, paths) = match ops.as_slice() {
            [] => return Err("Not enough arguments: expected 1 but got 0".into()),
            [p] => ("%y", vec![*p]),
            [f, rest @ ..] if f.contains('%') => (*f, rest.to_vec()),
            all => ("%y", all.to_vec()),
        };
        for p in paths {
            let Some(s) = self.status(p).await else { continue };
            let line = stat_format(format, p, &s);
            let _ = writeln!(self.out, "{line}");
        }
        Ok(())
    }

    async fn mv(&mut self, args: &[String]) -> Result<(), String> {
        let (_, ops) = flags(args, &[])?;
        if ops.len() < 2 {
            return Err(format!("Not enough arguments: expected 2 but got {}", ops.len()));
        }
        let (srcs, dst) = ops.split_at(ops.len() - 1);
        let dst = dst[0];
        let dst_st = match self.fs.get_file_info(dst).await {
            Ok(s) => s,
            Err(e) => {
                self.fail(dst, &e);
                return Ok(());
            }
        };
        if srcs.len() > 1 && dst_st.is_none() {
            self.fail_msg(format!("`{dst}': No such file or directory"));
            return Ok(());
        }
        if srcs.len() > 1 && !dst_st.as_ref().is_some_and(FileStatus::is_dir) {
            self.fail_msg(format!("`{dst}': Is not a directory"));
            return Ok(());
        }
        if dst_st.is_none() && !self.parent_is_dir(dst).await {
            self.fail_msg(format!("`{dst}': No such file or directory"));
            return Ok(());
        }
        for src in srcs {
            let Some(src_st) = self.status(src).await else { continue };
            if dst_st.as_ref().is_some_and(|d| !d.is_dir()) {
                self.fail_msg(format!("`{dst}': File exists"));
                continue;
            }
            let target = match &dst_st {
                Some(d) if d.is_dir() => child_path(dst, src.rsplit('/').next().unwrap_or(src)),
                _ => dst.to_string(),
            };
            if src_st.is_dir() {
                if let Some(msg) = into_itself(src, &target) {
                    self.fail_msg(msg);
                    continue;
                }
            }
            match self.fs.rename(src, dst).await {
                Ok(true) => {}
                Ok(false) => {
                    if self.fs.exists(&target).await.unwrap_or(false) {
                        self.fail_msg(format!("`{target}': File exists"));
                    } else {
                        self.fail_msg(format!("Failed to rename {src} to {dst}"));
                    }
                }
                Err(e) => self.fail(src, &e),
            }
        }
        Ok(())
    }

    async fn rm(&mut self, args: &[String]) -> Result<(), String> {
        let (f, paths) = flags(args, &["-r", "-R", "-f", "-skipTrash", "-rf", "-fr", "-rR"])?;
        let recursive = f.iter().any(|x| matches!(*x, "-r" | "-R" | "-rf" | "-fr" | "-rR"));
        let force = f.iter().any(|x| matches!(*x, "-f" | "-rf" | "-fr"));
        if paths.is_empty() && !force {
            return Err("Not enough arguments: expected 1 but got 0".into());
        }
        for p in paths {
            let st = match self.fs.get_file_info(p).await {
                Ok(Some(s)) => s,
                Ok(None) => {
                    if !force {
                        self.fail_msg(format!("`{p}': No such file or directory"));
                    }
                    continue;
                }
                Err(e) => {
                    self.fail(p, &e);
                    continue;
                }
            };
            if st.is_dir() && !recursive {
                self.fail_msg(format!("`{p}': Is a directory"));
                continue;
            }
            match self.fs.delete(p, recursive).await {
                Ok(true) => {
                    let _ = writeln!(self.out, "Deleted {p}");
                }
                Ok(false) => self.fail_msg(format!("`{p}': Input/output error")),
                Err(e) => self.fail(p, &e),
            }
        }
        Ok(())
    }

    async fn rmdir(&mut self, args: &[String]) -> Result<(), String> {
        let (f, paths) = flags(args, &["--ignore-fail-on-non-empty"])?;
        if paths.is_empty() {
            return Err("Not enough arguments: expected 1 but got 0".into());
        }
        let ignore = !f.is_empty();
        for p in paths {
            let Some(st) = self.status(p).await else { continue };
            if !st.is_dir() {
                self.fail_msg(format!("`{p}': Is not a directory"));
                continue;
            }
            match self.fs.delete(p, false).await {
                Ok(_) => {}
                Err(FsError::PathIsNotEmptyDirectory(_)) if ignore => {}
                Err(FsError::PathIsNotEmptyDirectory(_)) => self.fail_msg(format!("`{p}': Directory is not empty")),
                Err(e) => self.fail(p, &e),
            }
        }
        Ok(())
    }

    async fn count(&mut self, args: &[String]) -> Result<(), String> {
        let (f, paths) = flags(args, &["-q", "-h", "-qh", "-hq"])?;
        let q = f.iter().any(|x| x.contains('q'));
        let hum = f.iter().any(|x| x.contains('h'));
        if paths.is_empty() {
            return Err("Not enough arguments: expected 1 but got 0".into());
        }
        let num = |n: u64| if hum { human(n) } else { n.to_string() };
        for p in paths {
            let s = match self.fs.content_summary(p).await {
                Ok(s) => s,
                Err(e) => {
                    self.fail(p, &e);
                    continue;
                }
            };
            let mut line = String::new();
            if q {
                let (quota, rem) = if s.quota < 0 {
                    ("none".to_string(), "inf".to_string())
                } else {
                    let used = s.directory_count + s.file_count;
                    (s.quota.to_string(), (s.quota - used as i64).to_string())
                };
                let (sq, srem) = if s.space_quota < 0 {
                    ("none".to_string(), "inf".to_string())
                } else {
                    (
                        num(s.space_quota as u64),
                        (s.space_quota - s.space_consumed as i64).to_string(),
                    )
                };
                line.push_str(&format!("{quota:>12} {rem:>15} {sq:>15} {srem:>15} "));
            }
            line.push_str(&format!(
                "{:>12} {:>12} {:>18} {p}",
                s.directory_count,
                s.file_count,
                num(s.length)
            ));
            let _ = writeln!(self.out, "{line}");
        }
        Ok(())
    }

    async fn du(&mut self, args: &[String]) -> Result<(), String> {
        let (f, paths) = flags(args, &["-s", "-h", "-sh", "-hs"])?;
        let summary = f.iter().any(|x| x.contains('s'));
        let hum = f.iter().any(|x| x.contains('h'));
        if paths.is_empty() {
            return Err("Not enough arguments: expected 1 but got 0".into());
        }
        let num = |n: u64| if hum { human(n) } else { n.to_string() };
        for p in paths {
            let Some(st) = self.status(p).await else { continue };
            let targets: Vec<String> = if summary || !st.is_dir() {
                vec![p.to_string()]
            } else {
                match self.fs.list_status(p).await {
                    Ok(c) => c.iter().map(|c| child_path(p, &c.path_suffix)).collect(),
                    Err(e) => {
                        self.fail(p, &e);
                        continue;
                    }
                }
            };
            let mut rows = Vec::new();
            for t in targets {
                match self.fs.content_summary(&t).await {
                    Ok(s) => rows.push((num(s.length), num(s.space_consumed), t)),
                    Err(e) => self.fail(&t, &e),
                }
            }
            let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
            let w2 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
            for (a, b, t) in rows {
                let _ = writeln!(self.out, "{a:<w$}  {b:<w2$}  {t}");
            }
        }
        Ok(())
    }

    async fn test(&mut self, args: &[String]) -> i32 {
        // Hadoop's Test: one path, then exactly one flag.
        let (flags, paths): (Vec<&String>, Vec<&String>) = args.iter().partition(|a| a.starts_with('-') && a.len() > 1);
        let problem = if let Some(bad) = flags
            .iter()
            .find(|f| !matches!(f.as_str(), "-e" | "-d" | "-f" | "-z" | "-s"))
        {
            Some(format!("Illegal option {bad}"))
        } else if paths.len() != 1 {
            let which = if paths.is_empty() { "Not enough" } else { "Too many" };
            Some(format!("{which} arguments: expected 1 but got {}", paths.len()))
        } else if flags.is_empty() {
            Some("No test flag given".to_string())
        } else if flags.len() > 1 {
            Some("Only one test flag is allowed".to_string())
        } else {
            None
        };
        if let Some(msg) = problem {
            self.usage_error(&msg);
            return EXIT_USAGE;
        }
        let (flag, path) = (flags[0].as_str(), paths[0].as_str());
        match self.fs.get_file_info(path).await {
            Ok(st) => {
                let ok = match (flag, &st) {
                    ("-e", s) => s.is_some(),
                    ("-d", Some(s)) => s.is_dir(),
                    ("-f", Some(s)) => s.is_file(),
                    ("-z", Some(s)) => s.length == 0,
                    ("-s", Some(s)) => s.length > 0,
                    _ => false,
                };
                i32::from(!ok)
            }
            Err(e) => {
                self.fail(path, &e);
                1
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usage_lists_every_command_in_order() {
        let listed: Vec<&str> = USAGE
            .lines()
            .filter_map(|l| l.trim().strip_prefix("[-"))
            .map(|l| l.split([' ', ']']).next().unwrap_or_default())
            .collect();
        let mut want: Vec<&str> = COMMANDS.iter().copied().filter(|c| *c != "h").collect();
        want.sort_by_key(|c| c.to_lowercase());
        assert_eq!(
            listed, want,
            "USAGE lists each command once, as Hadoop's shell sorts them"
        );
    }
}
