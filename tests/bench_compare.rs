//! `raftfs bench compare` from the command line: every level (the grpc
//! level starts its own three-member nameservices), both stores, both
//! execution modes, tiny sizes; the JSON has a row per configuration and
//! op with the figures the table prints, and the plot is an SVG.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_raftfs");

#[test]
fn compare_runs_the_whole_matrix_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("compare.svg");
    let out = Command::new(BIN)
        .args(["bench", "compare", "--levels", "engine,raft,grpc", "--runs", "2"])
        .args(["--engine-files", "300", "--raft-files", "200", "--grpc-files", "100"])
        .args([
            "--callers",
            "8",
            "--ops",
            "create,fileStatus,mixed,mixedSpread",
            "--json",
            "--plot",
        ])
        .arg(&plot)
        .output()
        .expect("run raftfs bench compare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("--json prints rows");
    assert_eq!(rows.len(), 3 * 4 * 4, "levels x (store x exec) x ops: {stdout}");
    for r in &rows {
        let ctx = r.to_string();
        assert_eq!(r["runs"].as_array().map(Vec::len), Some(2), "{ctx}");
        let (min, median, max) = (
            r["min"].as_f64().unwrap(),
            r["median"].as_f64().unwrap(),
            r["max"].as_f64().unwrap(),
        );
        assert!(min > 0.0 && min <= median && median <= max, "{ctx}");
        assert!(r["cpu_us_per_op"].as_f64().is_some_and(|c| c > 0.0), "{ctx}");
        let writes = r["op"] != "fileStatus";
        assert_eq!(r["writes_per_entry"].as_f64().is_some(), writes, "{ctx}");
        assert_eq!(
            r["read_p99_ms"].as_f64().is_some(),
            r["op"] == "mixed" || r["op"] == "mixedSpread",
            "{ctx}"
        );
        if r["level"] == "grpc" {
            assert!(
                r["cpu_leader_us_per_op"].as_f64().is_some(),
                "members report their CPU: {ctx}"
            );
        }
    }
    let svg = std::fs::read_to_string(&plot).expect("the plot was written");
    assert!(svg.contains("grpc create") && svg.contains("rocksdb leader"));
}

#[test]
fn compare_refuses_unknown_levels_and_ops() {
    for args in [["--levels", "disk"], ["--ops", "chmod"]] {
        let out = Command::new(BIN)
            .args(["bench", "compare"])
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("unknown"), "{err}");
    }
}
