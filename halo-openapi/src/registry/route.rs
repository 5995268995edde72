//! Which described operation a request calls: its path matched to a template once, then its
//! method (and, where `#fragment` path keys describe several operations of one method, its
//! query).

use http::{Method, Uri};

use super::templates::Matched;
use super::{PathEntry, Registry, Tool};

/// A call of a described operation: the tool's index, and where the path template's
/// parameters are in the request path (kept so that nothing matches the path again).
#[derive(Debug, Clone)]
pub struct Route {
    tool: usize,
    matched: Matched,
}

impl Route {
    /// The index of the tool called ([`Registry::tool_at`]).
    #[inline]
    #[must_use]
    pub fn tool(&self) -> usize {
        self.tool
    }
}

impl Registry {
    /// The described operation a request on `uri` with `method` calls, if any.
    #[inline] // On the pass-through path of `Halo::call`.
    #[must_use]
    pub fn route(&self, uri: &Uri, method: &Method) -> Option<Route> {
        let matched = self.templates.at(uri.path())?;
        let tool = self.tool(&self.paths[matched.index], method, uri.query())?;
        Some(Route { tool, matched })
    }

    /// The raw (percent-encoded) values of a routed request's path parameters, by name;
    /// `path` is the path `route` was matched from.
    #[must_use]
    pub fn path_params<'r, 'p>(&'r self, route: &Route, path: &'p str) -> Vec<(&'r str, &'p str)> {
        self.templates.params(&route.matched, path)
    }

    /// The tool a request calls: its path and method (`HEAD` falls back to `GET`).
    ///
    /// Where path keys with `#fragments` describe several operations of one method on one
    /// path, the query tells them apart: the tool whose required query parameters the
    /// request gives, the one requiring the most of them; else the first described.
    #[inline]
    fn tool(&self, entry: &PathEntry, method: &Method, query: Option<&str>) -> Option<usize> {
        let find = |wanted: &str| {
            let mut candidates = entry
                .methods
                .iter()
                .filter(|(method, _)| *method == wanted)
                .map(|&(_, index)| index);
            let first = candidates.next()?;
            let Some(second) = candidates.next() else {
                return Some(first);
            };
            let given: Vec<&str> = query
                .unwrap_or_default()
                .split('&')
                .map(|pair| pair.split_once('=').map_or(pair, |(name, _)| name))
                .collect();
            let mut chosen: Option<(usize, usize)> = None;
            for index in [first, second].into_iter().chain(candidates) {
                let required = required_query(&self.tools[index]);
                let given_all = required.iter().all(|name| given.contains(name));
                if given_all && chosen.is_none_or(|(most, _)| required.len() > most) {
                    chosen = Some((required.len(), index));
                }
            }
            let index = chosen.map_or(first, |(_, index)| index);
            Some(index)
        };
        find(method.as_str()).or_else(|| (method == Method::HEAD).then(|| find("GET")).flatten())
    }
}

/// The names of a tool's required query parameters.
fn required_query(tool: &Tool) -> Vec<&str> {
    tool.schema
        .input
        .iter()
        .filter(|(_, field)| {
            field.required && field.location == Some(halo_protocol::Location::Query)
        })
        .map(|(name, _)| name.as_str())
        .collect()
}
