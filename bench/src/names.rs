//! NNThroughputBenchmark's file name generator: a balanced tree with at most
//! `per_dir` entries (files or directories) in each directory.

pub struct Names {
    base: String,
    per_dir: u64,
    depth: u32,
}

impl Names {
    pub fn new(base: &str, total: u64, per_dir: u64) -> Names {
        let per_dir = per_dir.max(1);
        let dirs = total.div_ceil(per_dir).max(1);
        let mut depth = 0;
        let mut cap = 1u64;
        while cap < dirs {
            cap = cap.saturating_mul(per_dir.max(2));
            depth += 1;
        }
        Names {
            base: base.trim_end_matches('/').to_string(),
            per_dir,
            depth,
        }
    }

    /// The directory holding item `n`.
    pub fn dir(&self, n: u64) -> String {
        let mut d = n / self.per_dir;
        let mut parts = Vec::with_capacity(self.depth as usize);
        for _ in 0..self.depth {
            parts.push(format!("ThroughputBenchDir{}", d % self.per_dir.max(2)));
            d /= self.per_dir.max(2);
        }
        parts.reverse();
        if parts.is_empty() {
            self.base.clone()
        } else {
            format!("{}/{}", self.base, parts.join("/"))
        }
    }

    pub fn file(&self, n: u64) -> String {
        format!("{}/ThroughputBench{n}", self.dir(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_and_unique() {
        let n = Names::new("/bench/create", 100, 4);
        let all: std::collections::HashSet<String> = (0..100).map(|i| n.file(i)).collect();
        assert_eq!(all.len(), 100);
        let mut per_dir = std::collections::HashMap::new();
        for i in 0..100 {
            *per_dir.entry(n.dir(i)).or_insert(0) += 1;
        }
        assert!(per_dir.values().all(|c| *c <= 4));
    }
}
