//! The `dfs` commands that move file data: -put/-copyFromLocal,
//! -get/-copyToLocal, -cat, -appendToFile, -tail, -cp, -checksum.
//!
//! As HDFS's shell does, a copy goes to `<dst>._COPYING_` first and is
//! renamed into place only when complete, so a failed copy never leaves a
//! partial file under the destination's name.

use std::io::Write;
use std::time::Instant;

use tokio::io::AsyncReadExt;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use raftfs_proto::{FileStatus, FsError};

use super::{child_path, flags, human, Shell};
use crate::{FileReader, FileWriter};

/// Bytes read from a local file or the reader per step.
const COPY_BUFFER_BYTES: usize = 4 * 1024 * 1024;
/// Bytes `-tail` prints (HDFS: the last kilobyte).
const TAIL_BYTES: u64 = 1024;
/// How often `-tail -f` looks for new bytes, ms.
const TAIL_FOLLOW_INTERVAL_MS: u64 = 1_000;
/// Suffix of a copy in progress.
const COPYING_SUFFIX: &str = "._COPYING_";
/// Entries listed per call while copying a directory.
const CP_LISTING_PAGE_ENTRIES: u32 = 1000;

fn base_name(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().unwrap_or(p)
}

/// A progress line on stderr, redrawn at most every 200 ms.
struct Progress {
    on: bool,
    name: String,
    total: Option<u64>,
    done: u64,
    start: Instant,
    last: Instant,
}

impl Progress {
    fn new(on: bool, name: &str, total: Option<u64>) -> Progress {
        let now = Instant::now();
        Progress {
            on,
            name: name.to_string(),
            total,
            done: 0,
            start: now,
            last: now,
        }
    }

    fn add(&mut self, n: usize, err: &mut dyn Write) {
        self.done += n as u64;
        if self.on && self.last.elapsed().as_millis() >= 200 {
            self.last = Instant::now();
            self.draw(err);
        }
    }

    fn draw(&self, err: &mut dyn Write) {
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        let rate = human((self.done as f64 / secs) as u64);
        let pct = match self.total {
            Some(t) if t > 0 => format!("{:3}%", self.done * 100 / t),
            _ => "    ".into(),
        };
        let _ = write!(err, "\r{} {pct} {}B {rate}B/s   ", self.name, human(self.done));
        let _ = err.flush();
    }

    fn finish(&self, err: &mut dyn Write) {
        if self.on {
            self.draw(err);
            let _ = writeln!(err);
        }
    }
}

impl Shell<'_> {
    /// `<dst>` for one of several sources: inside it when it is a directory.
    async fn target_in(&mut self, src: &str, dst: &str, many: bool) -> Result<String, FsError> {
        match self.fs.get_file_info(dst).await? {
            Some(s) if s.is_dir() => Ok(child_path(dst, base_name(src))),
            Some(_) if many => Err(FsError::InvalidArgument(format!("`{dst}': Is not a directory"))),
            None if many => Err(FsError::FileNotFound(format!("`{dst}': No such file or directory"))),
            None if !self.parent_is_dir(dst).await => {
                Err(FsError::FileNotFound(format!("`{dst}': No such file or directory")))
            }
            _ => Ok(dst.to_string()),
        }
    }

    /// Copy everything `src` yields into `w`, then close it.
    async fn pump(
        &mut self,
        mut next: impl AsyncReadExt + Unpin,
        mut w: FileWriter,
        progress: &mut Progress,
    ) -> Result<(), FsError> {
        let mut buf = vec![0u8; COPY_BUFFER_BYTES];
        loop {
            let n = next
                .read(&mut buf)
                .await
                .map_err(|e| FsError::InvalidArgument(format!("read local input: {e}")))?;
            if n == 0 {
                break;
            }
            w.write(&buf[..n]).await?;
            progress.add(n, self.err);
        }
        w.close().await
    }

    pub(super) async fn put(&mut self, args: &[String]) -> Result<(), String> {
        let (f, ops) = flags(args, &["-f", "-p", "-d", "-l"])?;
        let force = f.contains(&"-f");
        let direct = f.contains(&"-d");
        if ops.len() < 2 {
            return Err(format!("Not enough arguments: expected 2 but got {}", ops.len()));
        }
        let (srcs, dst) = ops.split_at(ops.len() - 1);
        let dst = dst[0];
        for src in srcs {
            // A missing source is reported as Hadoop's shell does (its
            // arguments are expanded before anything is copied).
            if *src != "-" && tokio::fs::metadata(src).await.is_err() {
                self.fail_msg(format!("`{src}': No such file or directory"));
                continue;
            }
            let target = match self.target_in(src, dst, srcs.len() > 1).await {
                Ok(t) => t,
                Err(e) => {
                    self.fail(dst, &e);
                    return Ok(());
                }
            };
            if let Err(e) = self.put_one(src, &target, force, direct).await {
                match e {
                    FsError::FileAlreadyExists(_) => self.fail_msg(format!("`{target}': File exists")),
                    FsError::InvalidArgument(m) if m.starts_with("read local") || m.starts_with("open local") => {
                        self.fail_msg(m)
                    }
                    e => self.fail(&target, &e),
                }
            }
        }
        Ok(())
    }

    async fn put_one(&mut self, src: &str, target: &str, force: bool, direct: bool) -> Result<(), FsError> {
        if !force && self.fs.exists(target).await? {
            return Err(FsError::FileAlreadyExists(target.to_string()));
        }
        let tmp = if direct {
            target.to_string()
        } else {
            format!("{target}{COPYING_SUFFIX}")
        };
        let w = self.fs.create_file(&tmp, true).await?;
        let mut progress;
        if src == "-" {
            progress = Progress::new(self.progress, target, None);
            self.pump(tokio::io::stdin(), w, &mut progress).await?;
        } else {
            let file = tokio::fs::File::open(src)
                .await
                .map_err(|e| FsError::InvalidArgument(format!("open local file `{src}': {e}")))?;
            let len = file.metadata().await.ok().map(|m| m.len());
            progress = Progress::new(self.progress, target, len);
            if let Err(e) = self.pump(file, w, &mut progress).await {
                let _ = self.fs.delete(&tmp, false).await;
                return Err(e);
            }
        }
        if !direct {
            self.fs.rename2(&tmp, target, true).await?;
        }
        progress.finish(self.err);
        Ok(())
    }

    /// Stream the file `src` (from `offset`) into `out`.
    async fn stream(
        &mut self,
        r: &mut FileReader,
        out: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
        progress: &mut Progress,
    ) -> Result<(), FsError> {
        let mut buf = vec![0u8; COPY_BUFFER_BYTES];
        loop {
            let n = r.read(&mut buf).await?;
            if n == 0 {
                return Ok(());
            }
            out(&buf[..n]).map_err(|e| FsError::InvalidArgument(format!("write output: {e}")))?;
            progress.add(n, self.err);
        }
    }

    pub(super) async fn get(&mut self, args: &[String]) -> Result<(), String> {
        let (f, ops) = flags(args, &["-f", "-p", "-ignoreCrc", "-crc"])?;
        let force = f.contains(&"-f");
        if ops.len() < 2 {
            return Err(format!("Not enough arguments: expected 2 but got {}", ops.len()));
        }
        let (srcs, dst) = ops.split_at(ops.len() - 1);
        let dst = dst[0];
        let dst_is_dir = std::path::Path::new(dst).is_dir();
        if srcs.len() > 1 && !dst_is_dir {
            self.fail_msg(format!("`{dst}': Is not a directory"));
            return Ok(());
        }
        for src in srcs {
            let target = if dst_is_dir {
                std::path::Path::new(dst).join(base_name(src))
            } else {
                std::path::PathBuf::from(dst)
            };
            if let Err(e) = self.get_one(src, &target, force).await {
                match e {
                    FsError::FileAlreadyExists(m) => self.fail_msg(m),
                    e => self.fail(src, &e),
                }
            }
        }
        Ok(())
    }

    async fn get_one(&mut self, src: &str, target: &std::path::Path, force: bool) -> Result<(), FsError> {
        let status = self.fs.get_file_status(src).await?;
        if status.is_dir() {
            return Err(FsError::InvalidArgument(format!("`{src}': Is a directory")));
        }
        if !force && target.exists() {
            return Err(FsError::FileAlreadyExists(format!(
                "`{}': File exists",
                target.display()
            )));
        }
        let mut r = self.fs.open(src).await?;
        let tmp = std::path::PathBuf::from(format!("{}{COPYING_SUFFIX}", target.display()));
        let local = |e: std::io::Error| FsError::InvalidArgument(format!("write local file `{}': {e}", tmp.display()));
        let mut file = std::fs::File::create(&tmp).map_err(local)?;
        let mut progress = Progress::new(self.progress, src, Some(r.len()));
        let copied = self
            .stream(&mut r, &mut |b| file.write_all(b), &mut progress)
            .await
            .and_then(|_| file.sync_all().map_err(local));
        if let Err(e) = copied {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, target).map_err(local)?;
        progress.finish(self.err);
        Ok(())
    }

    pub(super) async fn cat(&mut self, args: &[String]) -> Result<(), String> {
        let (_, ops) = flags(args, &["-ignoreCrc"])?;
        if ops.is_empty() {
            return Err("Not enough arguments: expected 1 but got 0".into());
        }
        for src in ops {
            let r = match self.fs.get_file_status(src).await {
                Ok(s) if s.is_dir() => Err(FsError::InvalidArgument(format!("`{src}': Is a directory"))),
                Ok(_) => self.fs.open(src).await,
                Err(e) => Err(e),
            };
            let mut r = match r {
                Ok(r) => r,
                Err(FsError::InvalidArgument(m)) => {
                    self.fail_msg(m);
                    continue;
                }
                Err(e) => {
                    self.fail(src, &e);
                    continue;
                }
            };
            let mut progress = Progress::new(false, src, None);
            let mut buf = vec![0u8; COPY_BUFFER_BYTES];
            loop {
                match r.read(&mut buf).await {
                    Ok(0) => break,
                    Ok(n) => {
                        if self.out.write_all(&buf[..n]).is_err() {
                            return Ok(()); // the reader of our output went away
                        }
                        progress.add(n, self.err);
                    }
                    Err(e) => {
                        self.fail(src, &e);
                        break;
                    }
                }
            }
        }
        let _ = self.out.flush();
        Ok(())
    }

    pub(super) async fn append_to_file(&mut self, args: &[String]) -> Result<(), String> {
        if args.len() < 2 {
            return Err(format!("Not enough arguments: expected 2 but got {}", args.len()));
        }
        let (srcs, dst) = args.split_at(args.len() - 1);
        let dst = dst[0].as_str();
        let w = match self.fs.get_file_info(dst).await {
            Ok(Some(s)) if s.is_dir() => {
                self.fail_msg(format!("`{dst}': Is a directory"));
                return Ok(());
            }
            Ok(Some(_)) => self.fs.append(dst).await,
            Ok(None) => self.fs.create_file(dst, false).await,
            Err(e) => Err(e),
        };
        let mut w = match w {
            Ok(w) => w,
            Err(e) => {
                self.fail(dst, &e);
                return Ok(());
            }
        };
        let mut buf = vec![0u8; COPY_BUFFER_BYTES];
        for src in srcs {
            let mut input: Box<dyn tokio::io::AsyncRead + Unpin + Send> = if src == "-" {
                Box::new(tokio::io::stdin())
            } else {
                match tokio::fs::File::open(src).await {
                    Ok(f) => Box::new(f),
                    Err(e) => {
                        self.fail_msg(format!("`{src}': {e}"));
                        continue;
                    }
                }
            };
            loop {
                let n = match input.read(&mut buf).await {
                    Ok(n) => n,
                    Err(e) => {
                        self.fail_msg(format!("`{src}': {e}"));
                        break;
                    }
                };
                if n == 0 {
                    break;
                }
                if let Err(e) = w.write(&buf[..n]).await {
                    self.fail(dst, &e);
                    return Ok(());
                }
            }
        }
        if let Err(e) = w.close().await {
            self.fail(dst, &e);
        }
        Ok(())
    }

    pub(super) async fn tail(&mut self, args: &[String]) -> Result<(), String> {
        let (f, ops) = flags(args, &["-f"])?;
        let [src] = ops.as_slice() else {
            return Err(format!("Exactly one file expected, got {}", ops.len()));
        };
        let mut r = match self.fs.get_file_status(src).await {
            Ok(s) if s.is_dir() => {
                self.fail_msg(format!("`{src}': Is a directory"));
                return Ok(());
            }
            Ok(_) => match self.fs.open(src).await {
                Ok(r) => r,
                Err(e) => {
                    self.fail(src, &e);
                    return Ok(());
                }
            },
            Err(e) => {
                self.fail(src, &e);
                return Ok(());
            }
        };
        let mut at = r.len().saturating_sub(TAIL_BYTES);
        loop {
            match r.read_at(at, u64::MAX).await {
                Ok(bytes) => {
                    at += bytes.len() as u64;
                    if self.out.write_all(&bytes).is_err() {
                        return Ok(());
                    }
                    let _ = self.out.flush();
                }
                Err(e) => {
                    self.fail(src, &e);
                    return Ok(());
                }
            }
            if !f.contains(&"-f") {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(TAIL_FOLLOW_INTERVAL_MS)).await;
            r = match self.fs.open(src).await {
                Ok(r) => r,
                Err(e) => {
                    self.fail(src, &e);
                    return Ok(());
                }
            };
        }
    }

    pub(super) async fn cp(&mut self, args: &[String]) -> Result<(), String> {
        let (f, ops) = flags(args, &["-f", "-p", "-d"])?;
        let force = f.contains(&"-f");
        if ops.len() < 2 {
            return Err(format!("Not enough arguments: expected 2 but got {}", ops.len()));
        }
        let (srcs, dst) = ops.split_at(ops.len() - 1);
        let dst = dst[0];
        for src in srcs {
            let target = match self.target_in(src, dst, srcs.len() > 1).await {
                Ok(t) => t,
                Err(e) => {
                    self.fail(dst, &e);
                    return Ok(());
                }
            };
            if let Err(e) = self.cp_one(src, &target, force).await {
                self.cp_failed(src, &target, e);
            }
        }
        Ok(())
    }

    /// Copy `src` to `target`: a file's bytes, or a directory and
    /// everything below it (as Hadoop's `-cp`, which always recurses).
    fn cp_one<'s>(&'s mut self, src: &'s str, target: &'s str, force: bool) -> LocalBoxFuture<'s, Result<(), FsError>> {
        async move {
            let s = self.fs.get_file_status(src).await?;
            if !s.is_dir() {
                return self.cp_file(src, &s, target, force).await;
            }
            if let Some(msg) = super::into_itself(src, target) {
                return Err(FsError::InvalidArgument(msg));
            }
            match self.fs.get_file_info(target).await? {
                Some(t) if !t.is_dir() => return Err(FsError::FileAlreadyExists(target.to_string())),
                Some(_) => {}
                None => {
                    self.fs.mkdirs(target, Some(s.permission)).await?;
                }
            }
            let mut after = String::new();
            loop {
                let page = self.fs.list_page(src, &after, CP_LISTING_PAGE_ENTRIES).await?;
                for child in &page.entries {
                    let (from, to) = (
                        child_path(src, &child.path_suffix),
                        child_path(target, &child.path_suffix),
                    );
                    if let Err(e) = self.cp_one(&from, &to, force).await {
                        self.cp_failed(&from, &to, e);
                    }
                }
                match page.entries.last() {
                    Some(last) if page.remaining_entries > 0 => after = last.path_suffix.clone(),
                    _ => return Ok(()),
                }
            }
        }
        .boxed_local()
    }

    /// Report a copy of `src` to `target` that failed, as Hadoop's shell.
    fn cp_failed(&mut self, src: &str, target: &str, e: FsError) {
        match e {
            FsError::FileAlreadyExists(_) => self.fail_msg(format!("`{target}': File exists")),
            FsError::InvalidArgument(m) => self.fail_msg(m),
            e => self.fail(src, &e),
        }
    }

    async fn cp_file(&mut self, src: &str, s: &FileStatus, target: &str, force: bool) -> Result<(), FsError> {
        if !force && self.fs.exists(target).await? {
            return Err(FsError::FileAlreadyExists(target.to_string()));
        }
        let mut r = self.fs.open(src).await?;
        let tmp = format!("{target}{COPYING_SUFFIX}");
        let mut w = self
            .fs
            .create_file_opt(&tmp, true, None, s.replication, s.block_size, true)
            .await?;
        let mut progress = Progress::new(self.progress, target, Some(r.len()));
        let mut buf = vec![0u8; COPY_BUFFER_BYTES];
        loop {
            let n = r.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            w.write(&buf[..n]).await?;
            progress.add(n, self.err);
        }
        w.close().await?;
        self.fs.rename2(&tmp, target, true).await?;
        progress.finish(self.err);
        Ok(())
    }

    pub(super) async fn checksum(&mut self, args: &[String]) -> Result<(), String> {
        if args.is_empty() {
            return Err("Not enough arguments: expected 1 but got 0".into());
        }
        for src in args {
            match self.fs.file_checksum(src).await {
                Ok(c) => {
                    let _ = writeln!(self.out, "{src}\t{}\t{c}", c.algorithm);
                }
                Err(e) => self.fail(src, &e),
            }
        }
        Ok(())
    }
}
