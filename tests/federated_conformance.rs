//! The namespace conformance suite (metaserver/tests/golden/*.txt) through
//! federation, through a router and through the SDK routing by itself
//! (direct mode), each script in a fresh federation of two nameservices
//! and one router:
//!
//! * **The suite.** "/" cannot be a mount point, so a script's namespace
//!   is the mount point [`SCRIPT_ROOT`], whose destination is the whole of
//!   one nameservice (its "/"): every path P of a script is sent as
//!   SCRIPT_ROOT + P, and what the nameservice says about its P reads as
//!   the script expects. The mount point is ns1's and ns2's in turn, so
//!   across the two routings every script runs in each. Two differences
//!   are by design and checked as such: the script's root is a mount point
//!   (deleting or renaming it is refused, where a namespace refuses it for
//!   its root), and `/.reserved/.inodes/<id>` paths are per nameservice, so
//!   reserved.txt is replaced by a check that they are refused clearly.
//! * **The federation scenarios** (tests/golden_federated/*.txt) see the
//!   federated namespace as it is, its paths spread over both nameservices,
//!   a multi-destination (HASH_ALL) mount point, a read-only one and
//!   virtual directories: their expected output is what a federated
//!   namespace answers (merged listings, summed summaries, mount points as
//!   directories, renames across nameservices refused). Both routings
//!   must give the same output.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::group_mapping::GroupMapping;
use common::routers::Routers;
use common::Cluster;
use raftfs_client::{ClientOptions, FileSystem, Identity, Routing};
use raftfs_federation::routing::{rename_destination, retarget, retarget_rename};
use raftfs_metaserver::golden::{run_files, scripts_in, Backend};
use raftfs_proto::{CallCtx, FsError, Op, OpResult, Permission};

/// The mount point a suite script's "/" is.
const SCRIPT_ROOT: &str = "/script";

/// The suite's script that is per nameservice by nature (inode ids).
const INODE_PATHS_SCRIPT: &str = "reserved.txt";

/// How a federation's mount table lays paths out.
#[derive(Clone, Copy)]
enum Layout {
    /// [`SCRIPT_ROOT`] → NS:/, owned as a nameservice's root is; the
    /// scripts' paths are moved below it.
    ScriptRootOn(&'static str),
    /// The scenarios' table: /user → ns1:/user, /data → ns2:/data,
    /// /shared → ns1:/shared + ns2:/shared (HASH_ALL), /ro → ns2:/ro
    /// (read-only), /a/b → ns2:/ab (alice's, 750); paths as they are.
    Spread,
}

/// Two nameservices of one member each (sharing one group mapping file)
/// and one router with both registered.
struct Federation {
    ns1: Cluster,
    ns2: Cluster,
    routers: Routers,
    layout: Layout,
}

impl Federation {
    fn start(rt: &tokio::runtime::Runtime, mapping_file: &Path, layout: Layout) -> Federation {
        let ns1 = Cluster::start_with(1, "rocksdb", &["--group-mapping", mapping_file.to_str().unwrap()]);
        let ns2 = ns1.start_sibling(1, "ns2");
        rt.block_on(ns1.wait_ready());
        rt.block_on(ns2.wait_ready());
        let routers = Routers::start(&ns1, 1);
        routers.admin_ok(&["-addNameservice", "ns1", &ns1.fs_uri()]);
        routers.admin_ok(&["-addNameservice", "ns2", &ns2.fs_uri()]);
        match layout {
            Layout::ScriptRootOn(ns) => {
                let as_root = ["-owner", "hdfs", "-group", "supergroup", "-mode", "755"];
                routers.admin_ok(&[&["-add", SCRIPT_ROOT, ns, "/"][..], &as_root].concat());
            }
            Layout::Spread => {
                for args in [
                    &["-add", "/user", "ns1", "/user"][..],
                    &["-add", "/data", "ns2", "/data"],
                    &["-add", "/shared", "ns1,ns2", "/shared", "-order", "HASH_ALL"],
                    &["-add", "/ro", "ns2", "/ro", "-readonly"],
                    &["-add", "/a/b", "ns2", "/ab", "-owner", "alice", "-mode", "750"],
                ] {
                    routers.admin_ok(args);
                }
            }
        }
        let version = rt.block_on(routers.version());
        rt.block_on(routers.wait_version(version));
        Federation {
            ns1,
            ns2,
            routers,
            layout,
        }
    }

    fn nameservice(&self, name: &str) -> &Cluster {
        match name {
            "ns1" => &self.ns1,
            "ns2" => &self.ns2,
            other => panic!("no nameservice {other}"),
        }
    }

    /// An SDK handle on the router for `user`, routing as `routing` says.
    fn client(&self, user: &str, routing: Routing) -> FileSystem {
        let opts = ClientOptions {
            routing,
            ..self.ns1.client_options()
        };
        // The groups claimed here are ignored: the members' mapping decides.
        FileSystem::connect(&self.routers.uri(None), Identity::new(user, &["supergroup"]), opts)
            .expect("connect to the router")
    }
}

/// Members resolve callers' groups themselves ([`GroupMapping`], one file
/// for both nameservices); each user gets one SDK handle on the router.
struct FederatedBackend {
    rt: Arc<tokio::runtime::Runtime>,
    fed: Federation,
    routing: Routing,
    clients: HashMap<String, FileSystem>,
    groups: GroupMapping,
}

impl FederatedBackend {
    /// `op` of a suite script on the script's root, which a mount point
    /// refuses: checked refused as one, then answered as the nameservice
    /// answers it for its own root (asked directly; a namespace refuses
    /// to delete or rename its root, so nothing changes).
    fn script_root_op(&self, ns: &str, op: &Op, routed: Result<OpResult, FsError>) -> Result<OpResult, FsError> {
        assert!(
            matches!(&routed, Err(FsError::AccessControl(m)) if m.contains("is a mount point")),
            "{} of the script root through federation: {routed:?}",
            op.name()
        );
        let own = self.fed.nameservice(ns).client("hdfs", &[]);
        self.rt.block_on(own.call(op.clone()))
    }
}

impl Backend for FederatedBackend {
    fn call(&mut self, ctx: CallCtx, op: Op) -> Result<OpResult, FsError> {
        self.groups.map(&ctx, &[&self.fed.ns1, &self.fed.ns2])?;
        let sent = match self.fed.layout {
            Layout::ScriptRootOn(_) => below_script_root(&op),
            Layout::Spread => op.clone(),
        };
        let (fed, routing) = (&self.fed, self.routing);
        let fs = self
            .clients
            .entry(ctx.user.clone())
            .or_insert_with(|| fed.client(&ctx.user, routing));
        let r = self.rt.block_on(fs.call(sent));
        assert_eq!(
            fs.routes_directly(),
            self.routing == Routing::Direct,
            "the SDK routes as asked"
        );
        let Layout::ScriptRootOn(ns) = self.fed.layout else {
            return r;
        };
        if op.src_path() == "/" && matches!(op, Op::Delete { .. } | Op::Rename { .. } | Op::Rename2 { .. }) {
            return self.script_root_op(ns, &op, r);
        }
        // The paths a router names in its own messages are the federated
        // ones; the script knows them without the mount point.
        r.map_err(|e| match e {
            FsError::InvalidPath(m) => FsError::InvalidPath(m.replace(SCRIPT_ROOT, "")),
            FsError::FileNotFound(m) => FsError::FileNotFound(m.replace(SCRIPT_ROOT, "")),
            e => e,
        })
    }
}

/// `op` with its paths moved below [`SCRIPT_ROOT`] (a path that is not
/// absolute is left as it is, to be refused).
fn below_script_root(op: &Op) -> Op {
    let under = |p: &str| match p {
        "/" => SCRIPT_ROOT.to_string(),
        p if p.starts_with('/') => format!("{SCRIPT_ROOT}{p}"),
        p => p.to_string(),
    };
    if let Op::Concat { target, sources } = op {
        return Op::Concat {
            target: under(target),
            sources: sources.iter().map(|s| under(s)).collect(),
        };
    }
    match rename_destination(op) {
        Some(dst) => retarget_rename(op, &under(op.src_path()), &under(dst)),
        None => retarget(op, &under(op.src_path())),
    }
}

fn runtime() -> Arc<tokio::runtime::Runtime> {
    Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    )
}

/// Run `files` through `routing`, each in a fresh federation laid out by
/// `layout(i)` for the i-th file. Returns how many ran.
fn run(files: &[PathBuf], routing: Routing, layout: &dyn Fn(usize) -> Layout) -> usize {
    let rt = runtime();
    let mappings = tempfile::tempdir().unwrap();
    let mut i = 0;
    run_files(files, &mut || {
        let groups = GroupMapping::new(mappings.path().join(format!("groups-{i}.json")));
        let fed = Federation::start(&rt, groups.path(), layout(i));
        i += 1;
        Box::new(FederatedBackend {
            rt: rt.clone(),
            fed,
            routing,
            clients: HashMap::new(),
            groups,
        })
    })
    .unwrap_or_else(|d| panic!("{d}"))
}

/// The suite's scripts but [`INODE_PATHS_SCRIPT`].
fn suite() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("metaserver/tests/golden");
    let files: Vec<PathBuf> = scripts_in(&dir)
        .unwrap()
        .into_iter()
        .filter(|f| !f.ends_with(INODE_PATHS_SCRIPT))
        .collect();
    assert!(files.len() >= 10, "the suite is in {}", dir.display());
    files
}

fn alternate(first: &'static str, second: &'static str) -> impl Fn(usize) -> Layout {
    move |i| Layout::ScriptRootOn(if i % 2 == 0 { first } else { second })
}

#[test]
fn golden_through_the_router() {
    let files = suite();
    assert_eq!(run(&files, Routing::ViaRouter, &alternate("ns1", "ns2")), files.len());
}

#[test]
fn golden_through_the_sdk_routing_directly() {
    let files = suite();
    assert_eq!(run(&files, Routing::Direct, &alternate("ns2", "ns1")), files.len());
}

#[test]
fn federation_scenarios_through_the_router_and_directly() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden_federated");
    let files = scripts_in(&dir).unwrap();
    assert!(!files.is_empty(), "scenarios in {}", dir.display());
    for routing in [Routing::ViaRouter, Routing::Direct] {
        assert_eq!(run(&files, routing, &|_| Layout::Spread), files.len());
    }
}

/// Inode ids are per nameservice, so `/.reserved/.inodes/<id>` cannot be
/// routed: every way of reaching one through federation is refused with
/// `NoLocationException`, saying why, and changes nothing.
#[test]
fn inode_paths_are_refused_through_federation() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let groups = GroupMapping::new(dir.path().join("groups.json"));
    let fed = Federation::start(&rt, groups.path(), Layout::ScriptRootOn("ns1"));
    let own = fed.ns1.client("hdfs", &[]);
    rt.block_on(own.mkdirs("/d", Some(Permission::new(0o755)))).unwrap();
    let id = rt.block_on(own.get_file_status("/d")).unwrap().file_id;
    for routing in [Routing::ViaRouter, Routing::Direct] {
        let fs = fed.client("hdfs", routing);
        let inode = format!("{SCRIPT_ROOT}/.reserved/.inodes/{id}");
        for op in [
            Op::GetFileInfo { path: inode.clone() },
            Op::SetPermission {
                path: inode.clone(),
                permission: Permission::new(0o700),
            },
            Op::Delete {
                path: inode.clone(),
                recursive: true,
            },
        ] {
            match rt.block_on(fs.call(op.clone())) {
                Err(FsError::Unroutable(m)) => assert!(m.contains("inode paths are per nameservice"), "{m}"),
                other => panic!("{} of {inode} ({routing:?}): {other:?}", op.name()),
            }
        }
    }
    let st = rt.block_on(own.get_file_status("/d")).unwrap();
    assert_eq!(st.permission, Permission::new(0o755), "unchanged");
}
