//! The frame of a status page: the node's name, the tabs, a title and
//! the page's body, as one HTML document with an inline style sheet.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup, PreEscaped, DOCTYPE};

use raftfs_trust::ClientAuth;

use crate::{HttpCaller, RemoteException};

/// One tab of the pages' bar.
#[derive(Debug, Clone, Copy)]
pub struct NavTab {
    pub href: &'static str,
    pub label: &'static str,
}

/// What every page of one node shares: who serves it and its tabs.
#[derive(Debug, Clone)]
pub struct StatusShell {
    /// Which node this is, as the pages' header says it
    /// (`member 2 of ns1`, `router 1`).
    pub node: String,
    pub tabs: &'static [NavTab],
}

/// The style sheet, inline: the pages fetch nothing.
const STYLE: &str = "
body { font-family: sans-serif; margin: 0; color: #222; }
header { background: #2c3e50; color: #fff; padding: 0.6em 1em; }
header .node { float: right; opacity: 0.85; }
nav { background: #ecf0f1; padding: 0.4em 1em; border-bottom: 1px solid #ccc; }
nav a { margin-right: 1.2em; color: #2c3e50; text-decoration: none; }
nav a.current { font-weight: bold; text-decoration: underline; }
main { padding: 0.5em 1em 2em 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.2em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f4f6f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.bad { color: #b03a2e; font-weight: bold; }
.good { color: #1e8449; }
.note { color: #555; font-size: 0.9em; }
";

impl StatusShell {
    /// Page `title` (the tab at `current`), with `body`, as a 200.
    pub fn page(&self, current: &str, title: &str, body: Markup) -> Response {
        self.answer(StatusCode::OK, current, title, body)
    }

    /// The refusal page for a caller who may not read the node's state
    /// under `auth` ([`HttpCaller::may_read_instrumentation`], as `/jmx`);
    /// `None`: it may.
    pub fn refuse_uninstrumented(&self, caller: &HttpCaller, auth: ClientAuth, current: &str) -> Option<Response> {
        let e = caller.may_read_instrumentation(auth).err()?;
        Some(self.error_page(current, &e))
    }

    /// A page saying why the request was refused, with its status.
    pub fn error_page(&self, current: &str, e: &RemoteException) -> Response {
        let body = html! {
            p.bad { (e.exception) ": " (e.message) }
        };
        self.answer(e.status, current, e.exception, body)
    }

    fn answer(&self, status: StatusCode, current: &str, title: &str, body: Markup) -> Response {
        let doc = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    title { "raftfs · " (title) " · " (self.node) }
                    style { (PreEscaped(STYLE)) }
                }
                body {
                    header {
                        span.node { (self.node) }
                        strong { "raftfs" }
                    }
                    nav {
                        @for tab in self.tabs {
                            a href=(tab.href) class=[(tab.href == current).then_some("current")] { (tab.label) }
                        }
                    }
                    main {
                        h1 { (title) }
                        (body)
                    }
                }
            }
        };
        (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            doc.into_string(),
        )
            .into_response()
    }
}
