//! Profile TOML → [`Profile`]: the raw serde shapes, cross-field checks with `file:line: key`
//! errors, trace path resolution (profile dir, then workspace root) and loading, shared by both
//! directions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::capacity::CapacitySpec;
use super::delay::{DelaySpec, Jitter};
use super::loss::LossSpec;
use super::profile::{workspace_root, DirectionSpec, Profile, ProfileError};
use super::queue::QueueLimit;
use super::schedule::{ReconfigSchedule, STARLINK_PERIOD};
use super::trace::{DelayTrace, RateTrace, TraceError};
use super::units::{Dur, Frac, Rate};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    description: Option<String>,
    seed: Option<u64>,
    down: Spanned<RawDir>,
    up: Spanned<RawDir>,
    reconfig: Option<Spanned<RawReconfig>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDir {
    rate: Option<Rate>,
    rate_trace: Option<String>,
    delay: Option<Dur>,
    jitter: Option<Dur>,
    jitter_dist: Option<JitterDist>,
    delay_trace: Option<String>,
    limit: Option<usize>,
    limit_bytes: Option<usize>,
    loss: Option<Frac>,
    loss_model: Option<RawLossModel>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum JitterDist {
    Normal,
    Uniform,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
enum RawLossModel {
    Bernoulli {
        p: Frac,
    },
    GilbertElliott {
        p: Frac,
        r: Option<Frac>,
        h: Option<Frac>,
        k: Option<Frac>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReconfig {
    #[serde(default)]
    from_trace: bool,
    first: Option<Dur>,
    period: Option<Dur>,
    outage: Option<Dur>,
    #[serde(default)]
    outage_drop: bool,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Loading context: the file, its text and a cache so both directions share a trace.
struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
    rate_cache: HashMap<PathBuf, Arc<RateTrace>>,
    delay_cache: HashMap<PathBuf, Arc<DelayTrace>>,
}

impl Ctx<'_> {
    fn invalid(&self, span_start: usize, key: &str, msg: impl Into<String>) -> ProfileError {
        ProfileError::Invalid {
            path: self.path.to_path_buf(),
            line: line_of(self.text, span_start),
            key: key.to_string(),
            msg: msg.into(),
        }
    }

    /// The profile's dir first, then the workspace root.
    fn resolve(&self, at: usize, key: &str, rel: &str) -> Result<PathBuf, ProfileError> {
        let p = Path::new(rel);
        let mut tried = Vec::new();
        if p.is_absolute() {
            tried.push(p.to_path_buf());
        } else {
            let dir = self.path.parent().unwrap_or(Path::new("."));
            tried.push(dir.join(p));
            tried.push(workspace_root().join(p));
        }
        tried.iter().find(|c| c.is_file()).cloned().ok_or_else(|| {
            let list: Vec<_> = tried.iter().map(|t| t.display().to_string()).collect();
            self.invalid(
                at,
                key,
                format!("trace {rel:?} not found (tried {})", list.join(", ")),
            )
        })
    }

    fn trace_err(&self, at: usize, key: &str, source: TraceError) -> ProfileError {
        ProfileError::Trace {
            path: self.path.to_path_buf(),
            line: line_of(self.text, at),
            key: key.to_string(),
            source,
        }
    }

    fn rate_trace(
        &mut self,
        at: usize,
        key: &str,
        rel: &str,
    ) -> Result<Arc<RateTrace>, ProfileError> {
        let file = self.resolve(at, key, rel)?;
        if let Some(t) = self.rate_cache.get(&file) {
            return Ok(Arc::clone(t));
        }
        let t = Arc::new(RateTrace::load(&file).map_err(|e| self.trace_err(at, key, e))?);
        self.rate_cache.insert(file, Arc::clone(&t));
        Ok(t)
    }

    fn delay_trace(
        &mut self,
        at: usize,
        key: &str,
        rel: &str,
    ) -> Result<Arc<DelayTrace>, ProfileError> {
        let file = self.resolve(at, key, rel)?;
        if let Some(t) = self.delay_cache.get(&file) {
            return Ok(Arc::clone(t));
        }
        let t = Arc::new(DelayTrace::load(&file).map_err(|e| self.trace_err(at, key, e))?);
        self.delay_cache.insert(file, Arc::clone(&t));
        Ok(t)
    }

    fn direction(
        &mut self,
        name: &str,
        raw: &Spanned<RawDir>,
    ) -> Result<DirectionSpec, ProfileError> {
        let at = raw.span().start;
        let d = raw.get_ref();
        let key = |k: &str| format!("[{name}] {k}");
        let capacity = match (&d.rate, &d.rate_trace) {
            (Some(r), None) => CapacitySpec::Rate(r.0),
            (None, Some(t)) => CapacitySpec::Trace(self.rate_trace(at, &key("rate_trace"), t)?),
            _ => {
                return Err(self.invalid(
                    at,
                    &format!("[{name}]"),
                    "give exactly one of rate, rate_trace",
                ))
            }
        };
        let delay = match (&d.delay, &d.delay_trace) {
            (Some(dl), None) => {
                let jitter = match (d.jitter, d.jitter_dist) {
                    (None, None) => None,
                    (None, Some(_)) => {
                        return Err(self.invalid(at, &key("jitter_dist"), "needs jitter"))
                    }
                    (Some(j), Some(JitterDist::Normal)) => Some(Jitter::Normal(j.0)),
                    (Some(j), _) => Some(Jitter::Uniform(j.0)),
                };
                DelaySpec::Constant {
                    delay: dl.0,
                    jitter,
                }
            }
            (None, Some(t)) => {
                if d.jitter.is_some() || d.jitter_dist.is_some() {
                    return Err(self.invalid(at, &key("jitter"), "only with a constant delay"));
                }
                DelaySpec::Trace(self.delay_trace(at, &key("delay_trace"), t)?)
            }
            _ => {
                return Err(self.invalid(
                    at,
                    &format!("[{name}]"),
                    "give exactly one of delay, delay_trace",
                ))
            }
        };
        let limit = match (d.limit, d.limit_bytes) {
            (None, None) => QueueLimit::default(),
            (Some(0), _) | (_, Some(0)) => {
                return Err(self.invalid(at, &key("limit"), "must be > 0"))
            }
            (Some(n), None) => QueueLimit::Packets(n),
            (None, Some(b)) => QueueLimit::Bytes(b),
            _ => {
                return Err(self.invalid(
                    at,
                    &key("limit"),
                    "give at most one of limit, limit_bytes",
                ))
            }
        };
        let loss = match (&d.loss, &d.loss_model) {
            (None, None) => LossSpec::None,
            (Some(p), None) => LossSpec::Bernoulli(p.0),
            (None, Some(RawLossModel::Bernoulli { p })) => LossSpec::Bernoulli(p.0),
            (None, Some(RawLossModel::GilbertElliott { p, r, h, k })) => LossSpec::GilbertElliott {
                p: p.0,
                r: r.map_or(1.0 - p.0, |v| v.0),
                h: h.map_or(0.0, |v| v.0),
                k: k.map_or(1.0, |v| v.0),
            },
            _ => {
                return Err(self.invalid(at, &key("loss"), "give at most one of loss, loss_model"))
            }
        };
        Ok(DirectionSpec {
            capacity,
            delay,
            limit,
            loss,
        })
    }
}

/// Parses profile text; `path` names it in errors and anchors relative trace paths.
pub(super) fn parse(text: &str, path: &Path) -> Result<Profile, ProfileError> {
    let raw: RawProfile = toml::from_str(text).map_err(|e| ProfileError::Toml {
        path: path.to_path_buf(),
        line: e.span().map_or(1, |s| line_of(text, s.start)),
        msg: e.message().trim().to_string(),
    })?;
    let mut cx = Ctx {
        path,
        text,
        rate_cache: HashMap::new(),
        delay_cache: HashMap::new(),
    };
    let down = cx.direction("down", &raw.down)?;
    let up = cx.direction("up", &raw.up)?;
    let mut detected = Vec::new();
    let reconfig = match &raw.reconfig {
        None => None,
        Some(sp) => {
            let at = sp.span().start;
            let r = sp.get_ref();
            let outage = r.outage.map_or(Duration::ZERO, |d| d.0);
            let period = match r.period {
                Some(p) if p.0.is_zero() => {
                    return Err(cx.invalid(at, "[reconfig] period", "must be > 0"))
                }
                Some(p) => p.0,
                None if r.from_trace => STARLINK_PERIOD,
                None => {
                    return Err(cx.invalid(
                        at,
                        "[reconfig] period",
                        "required unless from_trace = true",
                    ))
                }
            };
            if outage >= period {
                return Err(cx.invalid(at, "[reconfig] outage", "must be shorter than the period"));
            }
            let mut s = if r.from_trace {
                if r.first.is_some() {
                    return Err(cx.invalid(at, "[reconfig] first", "not with from_trace = true"));
                }
                let trace = [&down, &up].into_iter().find_map(|d| match &d.delay {
                    DelaySpec::Trace(t) => Some(Arc::clone(t)),
                    DelaySpec::Constant { .. } => None,
                });
                let Some(trace) = trace else {
                    return Err(cx.invalid(
                        at,
                        "[reconfig] from_trace",
                        "needs a delay_trace in [down] or [up]",
                    ));
                };
                detected = trace.reconfig_instants();
                ReconfigSchedule::fit(&detected, period, outage).ok_or_else(|| {
                    cx.invalid(
                        at,
                        "[reconfig] from_trace",
                        format!("no reconfiguration found in {}", trace.path().display()),
                    )
                })?
            } else {
                let Some(first) = r.first else {
                    return Err(cx.invalid(
                        at,
                        "[reconfig] first",
                        "required unless from_trace = true",
                    ));
                };
                ReconfigSchedule::new(first.0, period, outage)
            };
            s.outage_drop = r.outage_drop;
            Some(s)
        }
    };
    Ok(Profile {
        name: path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
        path: path.to_path_buf(),
        description: raw.description.unwrap_or_default(),
        seed: raw.seed,
        down,
        up,
        reconfig,
        detected,
    })
}
