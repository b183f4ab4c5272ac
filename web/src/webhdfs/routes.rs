//! The WebHDFS endpoint: `/webhdfs/v1/<path>?op=...`, who the caller is,
//! and the answer in WebHDFS's JSON.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Extension, Json, Router};
use raftfs_proto::{DelegationToken, FsError, Op, OpResult};
use raftfs_trust::{ClientAuth, PeerIdentity, PeerRole};
use serde_json::json;

use super::json::{content_summary, file_status, file_statuses, quota_usage, OneFileStatus};
use super::redirect::DatanodeRedirect;
use super::request::{Params, WebHdfsOp};
use super::{ANONYMOUS_USER, MAX_WEBHDFS_LISTING_ENTRIES};
use crate::{HttpCaller, RemoteException};

/// A namespace call's future.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<OpResult, FsError>> + Send + 'a>>;
/// The future of a choice of DataNode.
pub type RedirectFuture<'a> = Pin<Box<dyn Future<Output = Result<DatanodeRedirect, FsError>> + Send + 'a>>;

/// Who a WebHDFS call is for, as the endpoint authenticated it.
#[derive(Debug, Clone)]
pub struct WebHdfsCaller {
    pub user: String,
    /// The caller's IP address (for the audit log).
    pub ip: String,
    /// The user certificate that authenticated the caller (`None`: the
    /// user is the `user.name` it sent, under simple authentication, or a
    /// delegation token's owner).
    pub certificate: Option<PeerIdentity>,
    /// The delegation token the request presented (`delegation=`), on
    /// which `user` is the token's owner as the token claims: the
    /// namespace verifies it before it runs anything.
    pub delegation: Option<DelegationToken>,
}

/// What WebHDFS calls run against: a member's own nameservice (which
/// answers `StandbyException` unless it leads), or a router's
/// federated namespace.
pub trait WebHdfsNamespace: Send + Sync + 'static {
    /// Run `op` for `caller` (the namespace resolves the user's groups and
    /// checks permissions).
    fn call<'a>(&'a self, caller: &'a WebHdfsCaller, op: Op) -> CallFuture<'a>;

    /// Choose the DataNode that runs data op `op` on `path` for `caller`
    /// (for a read, one that holds the data at its offset), having checked
    /// what can be checked before any data moves (a read of a path that
    /// is missing or not readable is refused here), and say how the
    /// DataNode reaches this file system as the caller.
    fn redirect<'a>(&'a self, caller: &'a WebHdfsCaller, path: &'a str, op: &'a WebHdfsOp) -> RedirectFuture<'a>;
}

struct Endpoint {
    ns: Arc<dyn WebHdfsNamespace>,
    auth: ClientAuth,
}

/// The WebHDFS routes over `ns`; `auth` decides who the caller is.
pub fn webhdfs_routes(ns: Arc<dyn WebHdfsNamespace>, auth: ClientAuth) -> Router {
    let endpoint = Arc::new(Endpoint { ns, auth });
    Router::new()
        .route("/webhdfs/v1", any(at_root))
        .route("/webhdfs/v1/", any(at_root))
        .route("/webhdfs/v1/{*path}", any(at_path))
        .with_state(endpoint)
}

async fn at_root(
    State(e): State<Arc<Endpoint>>,
    Extension(caller): Extension<HttpCaller>,
    method: Method,
    RawQuery(query): RawQuery,
) -> Response {
    answer(&e, &caller, &method, "/".to_string(), query.as_deref().unwrap_or("")).await
}

async fn at_path(
    State(e): State<Arc<Endpoint>>,
    Extension(caller): Extension<HttpCaller>,
    method: Method,
    Path(path): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let path = format!("/{}", path.trim_end_matches('/'));
    answer(&e, &caller, &method, path, query.as_deref().unwrap_or("")).await
}

async fn answer(e: &Endpoint, caller: &HttpCaller, method: &Method, path: String, query: &str) -> Response {
    match run(e, caller, method, path, query).await {
        Ok(r) => r,
        Err(x) => x.into_response(),
    }
}

/// The user the request acts for: `user.name` under simple authentication
/// (`dr.who` without one, as HDFS), the certificate's under strong, or the
/// owner of the delegation token it presents (`delegation=`) on a
/// connection without a user certificate, in either mode; `doas` only for
/// the user itself (no proxy users are configured).
pub fn caller_of(auth: ClientAuth, caller: &HttpCaller, params: &Params) -> Result<WebHdfsCaller, RemoteException> {
    let certificate = caller.peer.clone().filter(|p| p.role == PeerRole::User);
    if let (Some(text), None) = (params.get("delegation"), &certificate) {
        let who = caller_by_token(caller, text)?;
        check_doas(&who.user, params)?;
        return Ok(who);
    }
    caller.authenticate(auth)?;
    let claimed = params.get("user.name").unwrap_or_default();
    let user = auth
        .user(claimed, caller.peer.as_ref())
        .map_err(RemoteException::access_control)?;
    let user = if user.is_empty() {
        ANONYMOUS_USER.to_string()
    } else {
        user
    };
    check_doas(&user, params)?;
    Ok(WebHdfsCaller {
        user,
        ip: caller.remote.ip().to_string(),
        certificate,
        delegation: None,
    })
}

/// The caller a delegation token's text names: its owner, as the token
/// claims (the namespace verifies the token before anything runs for it).
pub fn caller_by_token(caller: &HttpCaller, text: &str) -> Result<WebHdfsCaller, RemoteException> {
    let token = DelegationToken::decode_url(text).map_err(|e| RemoteException::from(&e))?;
    Ok(WebHdfsCaller {
        user: token.identifier.owner.clone(),
        ip: caller.remote.ip().to_string(),
        certificate: None,
        delegation: Some(token),
    })
}

/// Refuse a `doas` for anyone but `user` itself.
fn check_doas(user: &str, params: &Params) -> Result<(), RemoteException> {
    match params.get("doas") {
        Some(doas) if doas != user => Err(RemoteException::access_control(format!(
            "User: {user} is not allowed to impersonate {doas}"
        ))),
        _ => Ok(()),
    }
}

async fn run(
    e: &Endpoint,
    caller: &HttpCaller,
    method: &Method,
    path: String,
    query: &str,
) -> Result<Response, RemoteException> {
    let params = Params::parse(query)?;
    let who = caller_of(e.auth, caller, &params)?;
    let op = WebHdfsOp::parse(method, &params)?;
    let fs = |err: FsError| RemoteException::from(&err);
    if op.moves_data() {
        let target = e.ns.redirect(&who, &path, &op).await.map_err(fs)?;
        let location = target.location(&op, &path, &who.user);
        if params.parsed("noredirect", super::request::boolean)?.unwrap_or(false) {
            return ok(json!({ "Location": location }));
        }
        return Ok((
            StatusCode::TEMPORARY_REDIRECT,
            [(axum::http::header::LOCATION, location)],
        )
            .into_response());
    }
    let empty = || Ok(StatusCode::OK.into_response());
    if op == WebHdfsOp::GetHomeDirectory {
        return ok(json!({ "Path": format!("/user/{}", who.user) }));
    }
    if op == WebHdfsOp::ListStatus {
        return ok(file_statuses(&list_all(e, &who, &path).await?));
    }
    let call = op
        .to_op(&path)
        .expect("every op but GETHOMEDIRECTORY and LISTSTATUS is one namespace call");
    let result = e.ns.call(&who, call).await.map_err(fs)?;
    match (&op, result) {
        (WebHdfsOp::GetFileStatus, OpResult::Status(Some(s))) => ok(OneFileStatus {
            file_status: file_status(&s),
        }),
        (WebHdfsOp::GetFileStatus, OpResult::Status(None)) => {
            Err(fs(FsError::FileNotFound(format!("File does not exist: {path}"))))
        }
        (WebHdfsOp::ListStatusBatch { .. }, OpResult::Listing(l)) => ok(json!({ "DirectoryListing": {
            "partialListing": file_statuses(&l.entries),
            "remainingEntries": l.remaining_entries,
        }})),
        (WebHdfsOp::GetContentSummary, OpResult::Summary(c)) => ok(content_summary(&c)),
        (WebHdfsOp::GetQuotaUsage, OpResult::Summary(c)) => ok(quota_usage(&c)),
        (
            WebHdfsOp::Mkdirs { .. }
            | WebHdfsOp::Rename { .. }
            | WebHdfsOp::Delete { .. }
            | WebHdfsOp::SetReplication { .. }
            | WebHdfsOp::Truncate { .. },
            OpResult::Bool(b),
        ) => ok(json!({ "boolean": b })),
        (
            WebHdfsOp::SetPermission { .. }
            | WebHdfsOp::SetOwner { .. }
            | WebHdfsOp::SetTimes { .. }
            | WebHdfsOp::Concat { .. },
            _,
        ) => empty(),
        (op, r) => Err(fs(FsError::Internal(format!("{op:?} was answered {r:?}")))),
    }
}

/// A 200 answer with `body` as its JSON.
fn ok<T: serde::Serialize>(body: T) -> Result<Response, RemoteException> {
    Ok((StatusCode::OK, Json(body)).into_response())
}

/// Every entry of `path` (its own status for a file), page after page.
async fn list_all(
    e: &Endpoint,
    who: &WebHdfsCaller,
    path: &str,
) -> Result<Vec<raftfs_proto::FileStatus>, RemoteException> {
    let mut all = Vec::new();
    let mut start_after = String::new();
    loop {
        let op = WebHdfsOp::ListStatusBatch {
            start_after: start_after.clone(),
        }
        .to_op(path)
        .expect("a listing page is one namespace call");
        let page = match e.ns.call(who, op).await {
            Ok(OpResult::Listing(l)) => l,
            Ok(r) => {
                return Err(RemoteException::from(&FsError::Internal(format!(
                    "a listing was answered {r:?}"
                ))))
            }
            Err(err) => return Err(RemoteException::from(&err)),
        };
        let done = page.remaining_entries == 0 || page.entries.is_empty();
        if let Some(last) = page.entries.last() {
            start_after = last.path_suffix.clone();
        }
        all.extend(page.entries);
        if all.len() > MAX_WEBHDFS_LISTING_ENTRIES {
            return Err(RemoteException::illegal_argument(format!(
                "{path} holds more than {MAX_WEBHDFS_LISTING_ENTRIES} entries: list it with LISTSTATUS_BATCH"
            )));
        }
        if done {
            return Ok(all);
        }
    }
}
