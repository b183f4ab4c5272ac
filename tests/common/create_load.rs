//! [`CreateLoad`]: the create load failover tests run while they kill
//! members, and what it was told.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use raftfs_client::FileSystem;

/// Writers that create `DIR/f0`, `DIR/f1`, … (one writer per directory)
/// until stopped, remembering every create they were told succeeded and
/// every error they saw: the load under which failover tests check that
/// nothing acknowledged is lost.
pub struct CreateLoad {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<String>>>,
    writers: Vec<tokio::task::JoinHandle<Vec<String>>>,
}

impl CreateLoad {
    /// Start one writer per directory in `dirs` (which must exist).
    pub fn start(fs: &Arc<FileSystem>, dirs: &[&str]) -> CreateLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let writers = dirs
            .iter()
            .map(|dir| {
                let (fs, stop, acked, dir) = (fs.clone(), stop.clone(), acked.clone(), dir.to_string());
                tokio::spawn(async move {
                    let mut errors = Vec::new();
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let path = format!("{dir}/f{n}");
                        match fs.create(&path, false).await {
                            Ok(_) => acked.lock().unwrap().push(path),
                            Err(e) => errors.push(format!("{path}: {e}")),
                        }
                        n += 1;
                    }
                    errors
                })
            })
            .collect();
        CreateLoad { stop, acked, writers }
    }

    /// Creates acknowledged so far.
    pub fn acked_count(&self) -> usize {
        self.acked.lock().unwrap().len()
    }

    /// Stop the writers; (every acknowledged create, every error seen).
    pub async fn stop(self) -> (Vec<String>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        let mut errors = Vec::new();
        for w in self.writers {
            errors.extend(w.await.expect("writer task"));
        }
        let acked = self.acked.lock().unwrap().clone();
        (acked, errors)
    }
}
