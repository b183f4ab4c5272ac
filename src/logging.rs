//! The processes' logs: events to stderr (`RUST_LOG` filters them), and a
//! member's audit lines ([`AUDIT_TARGET`]) to their own file instead.
//!
//! The audit file is written by a thread of its own: an audit line is
//! appended to an in-memory buffer, which that thread writes to the file
//! every [`AUDIT_FLUSH_INTERVAL_MS`] (or sooner once it holds
//! [`AUDIT_FLUSH_BYTES`]), one write for many lines. So the call that
//! logged a line neither waits on the audit file's disk nor wakes a
//! thread per line (which cost a create on one member 12-20% of its rate,
//! measured with `raftfs bench audit`). The buffer is bounded
//! ([`MAX_AUDIT_BUFFER_BYTES`]): when the disk falls that far behind, a
//! logging call waits for room, and no line is dropped (it is an audit
//! log). Each line starts with the time and level as HDFS's log4j layout
//! writes them (`2026-12-05 06:40:13,123 INFO FSNamesystem.audit: …`).
//! Caveat: lines not yet written when the process is killed are lost (at
//! most one flush interval's), as with HDFS's asynchronous audit appender.

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use anyhow::Context;
use raftfs_metaserver::server::audit::AUDIT_TARGET;
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How often the audit buffer is written to the file.
pub const AUDIT_FLUSH_INTERVAL_MS: u64 = 200;
/// The buffer is written sooner once it holds this much.
pub const AUDIT_FLUSH_BYTES: usize = 1 << 20;
/// Most audit bytes waiting to be written; a logging call waits beyond.
pub const MAX_AUDIT_BUFFER_BYTES: usize = 16 << 20;

/// Events to stderr, filtered by `RUST_LOG`, without the audit lines
/// (they go to their own file). Static filters only: a dynamic one
/// (`filter_fn`) would make every span and event of every crate be
/// checked at run time.
fn stderr_layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let filter =
        EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new("info,openraft=warn,h2=warn,tower=warn"));
    let no_audit: tracing_subscriber::filter::Directive =
        format!("{AUDIT_TARGET}=off").parse().expect("a valid directive");
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter.add_directive(no_audit))
}

/// Events to stderr, as every process but a member logs.
pub fn init_tracing() {
    tracing_subscriber::registry().with(stderr_layer()).init();
}

/// Events to stderr and, with `audit`, audit lines to that file (created
/// if missing, appended to). Keep the returned writer while the process
/// runs: dropping it writes what is buffered and stops its thread.
pub fn init_tracing_with_audit(audit: Option<&Path>) -> anyhow::Result<Option<AuditWriter>> {
    let Some(path) = audit else {
        init_tracing();
        return Ok(None);
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("open the audit log {}", path.display()))?;
    let writer = AuditWriter::start(file, path)?;
    let buffer = writer.buffer.clone();
    let audit_layer = tracing_subscriber::fmt::layer()
        .with_writer(move || AuditLine(buffer.clone()))
        .event_format(Log4jAuditLayout::new())
        .with_filter(Targets::new().with_target(AUDIT_TARGET, tracing::Level::INFO));
    tracing_subscriber::registry()
        .with(stderr_layer())
        .with(audit_layer)
        .init();
    Ok(Some(writer))
}

/// Audit bytes not yet written, and whether the writer should stop.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    stopping: bool,
}

#[derive(Default)]
struct AuditBuffer {
    pending: Mutex<Pending>,
    /// Signalled when the buffer fills past [`AUDIT_FLUSH_BYTES`] or stops.
    full: Condvar,
    /// Signalled when the writer has taken the buffer (room again).
    room: Condvar,
}

/// One event's writer: the fmt layer writes a whole formatted line at once.
struct AuditLine(Arc<AuditBuffer>);

impl Write for AuditLine {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        let mut p = self.0.pending.lock();
        while p.bytes.len() >= MAX_AUDIT_BUFFER_BYTES && !p.stopping {
            self.0.room.wait(&mut p);
        }
        p.bytes.extend_from_slice(line);
        if p.bytes.len() >= AUDIT_FLUSH_BYTES {
            self.0.full.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The audit file's writer thread (see the module docs).
pub struct AuditWriter {
    buffer: Arc<AuditBuffer>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AuditWriter {
    fn start(mut file: File, path: &Path) -> anyhow::Result<AuditWriter> {
        let buffer = Arc::new(AuditBuffer::default());
        let shared = buffer.clone();
        let shown = path.display().to_string();
        let thread = std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || loop {
                let (bytes, stopping) = {
                    let mut p = shared.pending.lock();
                    if p.bytes.len() < AUDIT_FLUSH_BYTES && !p.stopping {
                        shared
                            .full
                            .wait_for(&mut p, Duration::from_millis(AUDIT_FLUSH_INTERVAL_MS));
                    }
                    (std::mem::take(&mut p.bytes), p.stopping)
                };
                shared.room.notify_all();
                if !bytes.is_empty() {
                    if let Err(e) = file.write_all(&bytes) {
                        // Said on stderr, where an operator looks; the lines are lost.
                        eprintln!("raftfs: writing the audit log {shown}: {e}");
                    }
                }
                if stopping {
                    return;
                }
            })
            .context("start the audit log's writer thread")?;
        Ok(AuditWriter {
            buffer,
            thread: Some(thread),
        })
    }
}

impl Drop for AuditWriter {
    fn drop(&mut self) {
        self.buffer.pending.lock().stopping = true;
        self.buffer.full.notify_one();
        self.buffer.room.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `2026-12-05 06:40:13,123 INFO FSNamesystem.audit: <line>`: HDFS's
/// log4j layout (`%d{ISO8601} %p %c{2}: %m%n`) for its audit logger.
struct Log4jAuditLayout {
    /// log4j's ISO8601 time, parsed once (not on every line).
    time: Vec<chrono::format::Item<'static>>,
}

impl Log4jAuditLayout {
    fn new() -> Log4jAuditLayout {
        let time = chrono::format::StrftimeItems::new("%Y-%m-%d %H:%M:%S,%3f")
            .parse_to_owned()
            .expect("a valid time format");
        Log4jAuditLayout { time }
    }
}

impl<S, N> FormatEvent<S, N> for Log4jAuditLayout
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        write!(
            w,
            "{} INFO FSNamesystem.audit: ",
            chrono::Local::now().format_with_items(self.time.iter())
        )?;
        ctx.format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}
