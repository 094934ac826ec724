//! Link profiles (`configs/profiles/*.toml`): netem-style knobs per direction, trace paths and
//! the reconfiguration schedule, parsed strictly with `file:line` errors and traces loaded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::capacity::CapacitySpec;
use super::delay::DelaySpec;
use super::loss::LossSpec;
use super::model::{sub_seed, LinkModel};
use super::queue::QueueLimit;
use super::schedule::ReconfigSchedule;
use super::trace::TraceError;

/// Errors loading a profile; each names the file, and the line and key where known.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("read profile {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {msg}", path.display())]
    Toml {
        path: PathBuf,
        line: usize,
        msg: String,
    },
    #[error("{}:{line}: {key}: {msg}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        key: String,
        msg: String,
    },
    #[error("{}:{line}: {key}: {source}", path.display())]
    Trace {
        path: PathBuf,
        line: usize,
        key: String,
        source: TraceError,
    },
    #[error("profile {name:?} not found (tried {})", tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NotFound { name: String, tried: Vec<PathBuf> },
    #[error("{}: tc commands exist only for constant profiles: {what}", path.display())]
    NotConstant { path: PathBuf, what: String },
}

/// Which way a frame crosses the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// POP → box (satlink's left → right).
    Down,
    /// Box → POP.
    Up,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Down => "down",
            Direction::Up => "up",
        }
    }

    /// The seed a direction's model uses, derived from the run's seed.
    pub fn seed(self, seed: u64) -> u64 {
        sub_seed(seed, if self == Direction::Down { 0xd0 } else { 0x0b })
    }
}

/// One direction, resolved (traces loaded).
#[derive(Debug, Clone, PartialEq)]
pub struct DirectionSpec {
    pub capacity: CapacitySpec,
    pub delay: DelaySpec,
    pub limit: QueueLimit,
    pub loss: LossSpec,
}

impl DirectionSpec {
    /// No trace in capacity or delay.
    pub fn is_constant(&self) -> bool {
        matches!(self.capacity, CapacitySpec::Rate(_))
            && matches!(self.delay, DelaySpec::Constant { .. })
    }
}

/// A loaded profile.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The file stem (`geo`).
    pub name: String,
    pub path: PathBuf,
    pub description: String,
    /// A default seed (the CLI's `--seed` overrides it).
    pub seed: Option<u64>,
    pub(super) down: DirectionSpec,
    pub(super) up: DirectionSpec,
    pub(super) reconfig: Option<ReconfigSchedule>,
    pub(super) detected: Vec<Duration>,
}

/// The workspace root (where `configs/` and `traces/` live), as built.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

impl Profile {
    /// Reads and resolves a profile file; trace paths are relative to the file's directory,
    /// then to the workspace root.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Profile::parse(&text, path)
    }

    /// A profile named like `geo` (looked up in `configs/profiles/` of the working directory,
    /// then of the workspace root) or given as a path.
    pub fn find(name_or_path: &str) -> Result<PathBuf, ProfileError> {
        let p = PathBuf::from(name_or_path);
        let mut tried = vec![p.clone()];
        if !name_or_path.contains('/') {
            let file = format!("{name_or_path}.toml");
            tried.push(Path::new("configs/profiles").join(&file));
            tried.push(workspace_root().join("configs/profiles").join(&file));
        }
        tried
            .iter()
            .find(|c| c.is_file())
            .cloned()
            .ok_or(ProfileError::NotFound {
                name: name_or_path.to_string(),
                tried,
            })
    }

    /// Parses profile text; `path` names it in errors and anchors relative trace paths.
    pub fn parse(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        super::parse::parse(text, path)
    }

    /// POP → box (satlink's left → right).
    pub fn down(&self) -> &DirectionSpec {
        &self.down
    }

    /// Box → POP.
    pub fn up(&self) -> &DirectionSpec {
        &self.up
    }

    pub fn direction(&self, dir: Direction) -> &DirectionSpec {
        match dir {
            Direction::Down => &self.down,
            Direction::Up => &self.up,
        }
    }

    /// The reconfiguration schedule (outage windows), if the profile has one.
    pub fn reconfig(&self) -> Option<&ReconfigSchedule> {
        self.reconfig.as_ref()
    }

    /// With `from_trace = true`: the instants found in the delay trace (one trace period).
    pub fn detected_instants(&self) -> &[Duration] {
        &self.detected
    }

    /// The link's nominal figures: the downlink's rate (constant, or the trace's mean) and the
    /// round trip of the two base delays (constant, or the delay trace's median), for sizing
    /// a PEP's buffers to the BDP as an operator would.
    pub fn nominal(&self) -> (f64, Duration) {
        let rate = match &self.down.capacity {
            CapacitySpec::Rate(r) => *r as f64,
            CapacitySpec::Trace(t) => t.mean_bps(),
        };
        let one_way = |d: &DelaySpec| match d {
            DelaySpec::Constant { delay, .. } => *delay,
            DelaySpec::Trace(t) => {
                let mut v = t.slots_ms().to_vec();
                v.sort_unstable();
                Duration::from_millis(v.get(v.len() / 2).copied().unwrap_or(0) as u64)
            }
        };
        (rate, one_way(&self.down.delay) + one_way(&self.up.delay))
    }

    /// Neither direction uses a trace.
    pub fn is_constant(&self) -> bool {
        self.down.is_constant() && self.up.is_constant()
    }

    /// The model of one direction, seeded from the run's `seed` ([`Direction::seed`]).
    pub fn model<P>(&self, dir: Direction, seed: u64) -> LinkModel<P> {
        LinkModel::new(self.direction(dir), self.reconfig(), dir.seed(seed))
    }

    /// The equivalent `tc` commands (netem root + tbf child on each device's egress);
    /// `dev_down` carries POP → box traffic out, `dev_up` box → POP. Constant profiles only.
    pub fn tc_commands(&self, dev_down: &str, dev_up: &str) -> Result<Vec<String>, ProfileError> {
        super::tc::commands(self, dev_down, dev_up)
    }
}
